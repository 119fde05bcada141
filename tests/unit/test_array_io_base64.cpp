// Tests for base64 (RFC 4648), as Polygraphy's JSON files use it. One test asks Python's base64
// module (the interpreter named by PARITY_PYTHON) which texts are valid.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../src/core/array_io_detail.h"
#include "test_array_io_helpers.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/tensor.h"

namespace parity {
namespace {

using namespace array_io_testing;

// ---------------------------------------------------------------------------------------------
// base64

TEST(Base64Test, Rfc4648Vectors) {
  // RFC 4648 section 10.
  const std::pair<std::string, std::string> vectors[] = {
      {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(plain), encoded);
    EXPECT_EQ(base64_decode(encoded, "vector"), plain);
  }
}

TEST(Base64Test, RoundTripsEveryLengthAndByte) {
  std::mt19937 rng(1234);
  for (std::size_t n : {0, 1, 2, 3, 4, 5, 63, 64, 65, 255, 256, 1000, 100001}) {
    std::string bytes(n, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    std::string text = base64_encode(bytes);
    EXPECT_EQ(text.size(), (n + 2) / 3 * 4);
    EXPECT_EQ(text.find_first_not_of(
                  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="),
              std::string::npos);
    EXPECT_EQ(base64_decode(text, "random"), bytes) << n;
  }
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  EXPECT_EQ(base64_decode(base64_encode(all), "all bytes"), all);
}

TEST(Base64Test, StreamingEncoderMatchesWholeEncoder) {
  std::mt19937 rng(99);
  std::string bytes(3 * 262144 * 2 + 17, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng());
  for (std::size_t split : std::vector<std::size_t>{0, 1, 2, 3, 4, 128, 786432, 786433, 1572880, bytes.size()}) {
    std::string a = bytes.substr(0, split), b = bytes.substr(split);
    for (std::size_t split2 : {std::size_t{0}, std::size_t{1}, b.size() / 2}) {
      split2 = std::min(split2, b.size());
      std::string b1 = b.substr(0, split2), b2 = b.substr(split2);
      std::string streamed;
      detail::base64_encode_parts({a, b1, b2}, [&](std::string_view chunk) { streamed.append(chunk); });
      EXPECT_EQ(streamed, base64_encode(bytes)) << split << " " << split2;
    }
  }
}

TEST(Base64Test, RejectsMalformedTextNamingTheSource) {
  const char* bad[] = {"QQ=", "QQ", "QUI", "QUJDR", "Q===", "=", "==", "QUJD\n", "QU JD", "QUJD!",
                       "QQ==QQ==", "QUJDQUI==", "QUJDQQ===", "QUJ-", "QUJ_", "\xc3\xa9QUJ", "QU=D",
                       "QUJD=QUJD"};
  for (const char* text : bad)
    expect_error<InvalidInputError>([&] { base64_decode(text, "input 'blob'"); },
                                    {"input 'blob'", "base64"}, "base64 '"s + text + "'");
  // Every byte outside the alphabet is rejected, and the message gives its offset.
  std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int c = 0; c < 256; ++c) {
    if (alphabet.find(static_cast<char>(c)) != std::string::npos || c == '=') continue;
    std::string text = "QUJDQU"s + static_cast<char>(c) + "D";
    expect_error<InvalidInputError>([&] { base64_decode(text, "src"); }, {"src", "offset 6"},
                                    "byte " + std::to_string(c));
  }
}

// Python's base64.b64decode(validate=True) decides which texts are valid; Parity must agree.
TEST(Base64Test, AcceptsExactlyWhatPythonAccepts) {
  REQUIRE_PYTHON(python);
  std::vector<std::string> texts = {"", "QQ==", "QQ=", "QQ", "QR==", "QUJD=", "QUJD==", "QUJDQQ=",
                                    "QUJDQQ==", "QUJDQQ===", "QUJDQUI=", "QUJDQUJ=", "QUJDR", "QUJD\n",
                                    "=", "==", "Q===", "QUI", "QUJDQUI==", "====", "QUJD====", "QU=D",
                                    "QUJD QUJD", "Zm9vYmFy", "Zm9vYg", "/+/+", "-_-_"};
  // Plus every string of up to 7 characters over a small alphabet that exercises the rules.
  std::vector<std::string> level = {""};
  for (int length = 1; length <= 7; ++length) {
    std::vector<std::string> next;
    for (const auto& prefix : level)
      for (char c : std::string("AQ=!")) next.push_back(prefix + c);
    texts.insert(texts.end(), next.begin(), next.end());
    level = std::move(next);
  }
  TempDir dir{"parity-array-io"};
  nlohmann::json list = texts;
  write_bytes(dir / "texts.json", list.dump());
  PythonResult r = run_python(python, dir.path(), R"PY(
import base64, json, sys
for text in json.load(open(sys.argv[1])):
    try:
        print("OK " + base64.b64decode(text, validate=True).hex())
    except Exception:
        print("ERR")
)PY", {(dir / "texts.json").string()});
  ASSERT_EQ(r.status, 0) << r.output;
  std::istringstream lines(r.output);
  for (const auto& text : texts) {
    std::string line;
    ASSERT_TRUE(std::getline(lines, line)) << r.output;
    std::string mine;
    try {
      mine = "OK " + hex(base64_decode(text, "t"));
    } catch (const InvalidInputError&) {
      mine = "ERR";
    }
    EXPECT_EQ(mine, line) << "text '" << text << "'";
  }
}

}  // namespace
}  // namespace parity
