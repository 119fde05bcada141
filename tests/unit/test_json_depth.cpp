// The one nesting limit of Parity's JSON readers (core/json_depth): arrays and objects count,
// brackets inside strings (escaped quotes included) do not.
#include <gtest/gtest.h>

#include <string>

#include "parity/core/error.h"
#include "parity/core/json_depth.h"

namespace parity {
namespace {

std::string nested(int depth, const std::string& inside = "") {
  return std::string(depth, '[') + inside + std::string(depth, ']');
}

TEST(JsonDepth, TheLimitIsAcceptedOneMoreIsRefusedNamingTheFile) {
  EXPECT_NO_THROW(check_json_depth(nested(kMaxJsonDepth), "f.json"));
  try {
    check_json_depth(nested(kMaxJsonDepth + 1), "f.json");
    FAIL() << "no error";
  } catch (const InvalidInputError& error) {
    EXPECT_NE(std::string(error.what()).find("f.json: JSON nested deeper than 1024 levels"), std::string::npos)
        << error.what();
  }
  std::string objects;
  for (int i = 0; i <= kMaxJsonDepth; ++i) objects += "{\"a\":";
  objects += "1" + std::string(kMaxJsonDepth + 1, '}');
  EXPECT_THROW(check_json_depth(objects, "f.json"), InvalidInputError);
}

TEST(JsonDepth, BracketsInStringsDoNotCount) {
  std::string brackets = "\"" + std::string(5000, '[') + "\\\"" + std::string(5000, '{') + "\"";
  EXPECT_NO_THROW(check_json_depth(nested(10, brackets), "f.json"));
  // An escaped backslash ends before the quote, which closes the string: what follows counts.
  EXPECT_THROW(check_json_depth("[\"\\\\\"" + nested(kMaxJsonDepth) + "]", "f.json"), InvalidInputError);
}

TEST(JsonDepth, SiblingsDoNotAddUp) {
  std::string siblings = "[";
  for (int i = 0; i < 10; ++i) siblings += nested(kMaxJsonDepth - 1) + ",";
  siblings += "1]";
  EXPECT_NO_THROW(check_json_depth(siblings, "f.json"));
}

}  // namespace
}  // namespace parity
