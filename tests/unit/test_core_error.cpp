// parity::Error (core): the message a user reads is whole, even where a model's name holds a NUL byte
// (what() is read as a C string by every caller).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "parity/core/error.h"

namespace parity {
namespace {

TEST(Error, WritesANulByteAsBackslashZero) {
  using namespace std::string_literals;
  InvalidInputError error("node 'nul\0byte' (Scan): the node has 2 outputs"s);
  error.add_context("model \0.onnx"s);
  EXPECT_STREQ(error.what(), "model \\0.onnx: node 'nul\\0byte' (Scan): the node has 2 outputs");
  EXPECT_EQ(std::strlen(error.what()), std::string(error.what()).size());
  EXPECT_EQ(error.message(), "node 'nul\\0byte' (Scan): the node has 2 outputs");
}

TEST(Error, LeavesOtherMessagesAlone) {
  FileError error("a\tb\\0c");
  EXPECT_STREQ(error.what(), "a\tb\\0c");
}

}  // namespace
}  // namespace parity
