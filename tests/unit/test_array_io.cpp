// Tests for array files: .npy, .npz, base64 and Polygraphy's JSON encoding. The peer tests run
// numpy and Polygraphy (the interpreter named by PARITY_PYTHON) on files Parity wrote and the
// other way round.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <complex>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../src/core/array_io_detail.h"
#include "test_support.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/half.h"
#include "parity/core/tensor.h"

namespace parity {
namespace {

namespace fs = std::filesystem;
using testing_support::TempDir;
using testing_support::read_bytes;
using namespace std::string_literals;

// ---------------------------------------------------------------------------------------------
// Helpers



void write_bytes(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string tensor_bytes(const Tensor& t) {
  return std::string(static_cast<const char*>(t.raw()), t.byte_size());
}

// Expects `fn` to throw exactly E (or a subclass) with every needle in its message.
template <typename E, typename Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& needles, const std::string& label) {
  try {
    fn();
    ADD_FAILURE() << label << ": no exception was thrown";
  } catch (const E& e) {
    std::string message = e.what();
    for (const auto& needle : needles)
      EXPECT_NE(message.find(needle), std::string::npos)
          << label << ": message \"" << message << "\" does not mention \"" << needle << "\"";
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << ": wrong exception type; message: " << e.what();
  }
}

template <typename T, typename Fn>
Tensor make_tensor(DType dtype, Shape shape, Fn fn) {
  Tensor t = Tensor::zeros(dtype, std::move(shape));
  auto values = t.mutable_span<T>();
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(fn(static_cast<int64_t>(i)));
  return t;
}

Tensor make_strings(Shape shape, const std::vector<std::string>& values) {
  Tensor t = Tensor::zeros(DType::kString, std::move(shape));
  auto out = t.mutable_span<std::string>();
  EXPECT_EQ(out.size(), values.size());
  for (std::size_t i = 0; i < out.size() && i < values.size(); ++i) out[i] = values[i];
  return t;
}

// Deterministic contents for any numpy-representable dtype (bit patterns, so NaNs may occur).
Tensor sample_tensor(DType dtype, const Shape& shape) {
  Tensor t = Tensor::zeros(dtype, shape);
  if (dtype == DType::kString) {
    const char* pool[] = {"", "a", "h\xc3\xa9llo", "xyz\xf0\x9f\x98\x80", "tab\there", "nul\0mid"};
    auto s = t.mutable_span<std::string>();
    for (std::size_t i = 0; i < s.size(); ++i)
      s[i] = i % 6 == 5 ? std::string("nul\0mid", 7) : std::string(pool[i % 6]) + std::to_string(i % 4);
    return t;
  }
  auto* bytes = static_cast<unsigned char*>(t.mutable_raw());
  if (dtype == DType::kBool) {
    for (int64_t i = 0; i < t.size(); ++i) bytes[i] = i % 3 == 0;
    return t;
  }
  for (std::size_t k = 0; k < t.byte_size(); ++k) bytes[k] = static_cast<unsigned char>(k * 37 + 11);
  return t;
}

// Header text padded with spaces and '\n' so that the whole prefix is a multiple of `align`.
std::string npy_file(const std::string& dict, std::string_view data, int major = 1, std::size_t align = 64) {
  std::size_t prefix = 8 + (major == 1 ? 2 : 4);
  std::string header = dict;
  while ((prefix + header.size() + 1) % align != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  for (std::size_t k = 0; k < (major == 1 ? 2u : 4u); ++k)
    out.push_back(static_cast<char>((header.size() >> (8 * k)) & 0xFF));
  out += header;
  out.append(data);
  return out;
}

template <typename T>
std::string le_bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// Each element's bytes reversed (big-endian file data from native values).
template <typename T>
std::string be_bytes(const std::vector<T>& values, std::size_t unit = sizeof(T)) {
  std::string bytes = le_bytes(values);
  for (std::size_t i = 0; i + unit <= bytes.size(); i += unit) std::reverse(bytes.begin() + i, bytes.begin() + i + unit);
  return bytes;
}

// --- the Python peer ---

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? "'\\''"s : std::string(1, c);
  return out + "'";
}

struct PythonResult {
  int status = -1;
  std::string output;
};

PythonResult run_python(const std::string& python, const fs::path& dir, const std::string& script,
                        const std::vector<std::string>& args = {}) {
  static int counter = 0;
  fs::path file = dir / ("snippet_" + std::to_string(counter++) + ".py");
  write_bytes(file, script);
  std::string command = shell_quote(python) + " " + shell_quote(file.string());
  for (const auto& arg : args) command += " " + shell_quote(arg);
  command += " 2>&1";
  PythonResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  std::size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The interpreter from PARITY_PYTHON, checked to have numpy and Polygraphy. Records a test failure
// and returns "" when it is missing: peer tests never skip silently.
std::string require_python() {
  const char* env = std::getenv("PARITY_PYTHON");
  if (!env || !*env) {
    ADD_FAILURE() << "PARITY_PYTHON is not set; the peer tests need a Python with numpy and polygraphy "
                     "(ctest sets it; by hand use PARITY_PYTHON=/work/main/.venv/bin/python)";
    return "";
  }
  static std::string checked;
  if (checked == env) return checked;
  TempDir dir{"parity-array-io"};
  PythonResult r = run_python(env, dir.path(), "import numpy, polygraphy.json\nprint('ok')\n");
  if (r.status != 0 || r.output.find("ok") == std::string::npos) {
    ADD_FAILURE() << "PARITY_PYTHON=" << env << " cannot import numpy and polygraphy.json (exit "
                  << r.status << "):\n" << r.output;
    return "";
  }
  checked = env;
  return checked;
}

#define REQUIRE_PYTHON(var)            \
  const std::string var = require_python(); \
  if (var.empty()) return

// Runs a peer script that must exit 0.
void expect_python_ok(const std::string& python, const fs::path& dir, const std::string& script,
                      const std::vector<std::string>& args, const std::string& label) {
  PythonResult r = run_python(python, dir, script, args);
  EXPECT_EQ(r.status, 0) << label << " failed:\n" << r.output;
}

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

// ---------------------------------------------------------------------------------------------
// .npy

std::vector<Shape> round_trip_shapes() { return {{}, {0}, {5}, {2, 3}, {2, 0, 3}, {1, 2, 3, 4}, {1000}}; }

TEST(NpyTest, RoundTripsEveryNumpyDtypeAndRejectsTheOthers) {
  int numpy_types = 0;
  for (const DTypeInfo& info : all_dtypes()) {
    if (info.numpy_descr.empty() && info.dtype != DType::kString) {
      Tensor t = Tensor::zeros(info.dtype, {4});
      expect_error<UnsupportedError>([&] { encode_npy(t); }, {std::string(info.name)},
                                     "encode " + std::string(info.name));
      continue;
    }
    ++numpy_types;
    for (const Shape& shape : round_trip_shapes()) {
      Tensor t = sample_tensor(info.dtype, shape);
      std::string bytes = encode_npy(t);
      Tensor back = decode_npy(bytes, "round trip");
      EXPECT_TRUE(identical(t, back)) << info.name << " " << shape_to_string(shape);
      Tensor owned = detail::decode_npy_owned(std::string(bytes), "owned round trip");
      EXPECT_TRUE(identical(t, owned)) << info.name << " " << shape_to_string(shape);
    }
  }
  EXPECT_EQ(numpy_types, 15);  // bool, str, 8 ints, 3 floats, 2 complex
}

TEST(NpyTest, WritesNumpysHeaderLayout) {
  for (const Shape& shape : round_trip_shapes()) {
    Tensor t = sample_tensor(DType::kFloat32, shape);
    std::string bytes = encode_npy(t);
    ASSERT_GE(bytes.size(), 10u);
    EXPECT_EQ(bytes.substr(0, 8), "\x93NUMPY\x01\x00"s);
    std::size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    std::size_t total = 10 + header_len;
    EXPECT_EQ(total % 64, 0u);
    ASSERT_EQ(bytes.size(), total + t.byte_size());
    EXPECT_EQ(bytes[total - 1], '\n');
    std::string dict = bytes.substr(10, header_len - 1);
    std::string shape_text = shape.size() == 1 ? "(" + std::to_string(shape[0]) + ",)" : shape_to_string(shape);
    std::string expected = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_text + ", }";
    EXPECT_EQ(dict.substr(0, expected.size()), expected);
    EXPECT_EQ(dict.find_first_not_of(' ', expected.size()), std::string::npos) << "only spaces may follow";
    EXPECT_EQ(bytes.substr(total), tensor_bytes(t));
  }
  // Strings: fixed-width UTF-32, as wide as the longest string in code points.
  Tensor s = make_strings({3}, {"ab", "h\xc3\xa9llo", ""});
  std::string bytes = encode_npy(s);
  EXPECT_NE(bytes.find("'descr': '<U5'"), std::string::npos);
  std::string data = bytes.substr(bytes.size() - 3 * 5 * 4);
  EXPECT_EQ(data.substr(0, 12), std::string("a\0\0\0b\0\0\0\0\0\0\0", 12));
  EXPECT_EQ(data.substr(20, 8), std::string("h\0\0\0\xe9\0\0\0", 8));
  Tensor empty_strings = Tensor::zeros(DType::kString, {0});
  EXPECT_NE(encode_npy(empty_strings).find("'descr': '<U1'"), std::string::npos);
}

TEST(NpyTest, BoolsAreWrittenAndReadAsZeroOrOne) {
  Tensor t = make_tensor<uint8_t>(DType::kBool, {4}, [](int64_t i) { return i * 3; });  // 0, 3, 6, 9
  std::string bytes = encode_npy(t);
  EXPECT_EQ(bytes.substr(bytes.size() - 4), std::string("\0\1\1\1", 4));
  Tensor back = decode_npy(npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                                    std::string("\0\2\xff", 3)),
                           "bools");
  EXPECT_EQ(tensor_bytes(back), std::string("\0\1\1", 3));
}

TEST(NpyTest, RejectsInvalidUtf8Strings) {
  Tensor t = make_strings({2}, {"ok", "bad\xff"});
  expect_error<InvalidInputError>([&] { encode_npy(t); }, {"element 1", "UTF-8"}, "invalid UTF-8");
}

TEST(NpyTest, ReadsOtherVersionsKeyOrdersAndPadding) {
  std::vector<int32_t> values = {1, -2, 3, 400000, -5, 6};
  std::string data = le_bytes(values);
  const std::string dicts[] = {
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }",
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<i4'}",
      "{\"descr\":\"<i4\",\"fortran_order\":False,\"shape\":(2,3)}",
      "  {  'fortran_order' :False ,'descr': '=i4', 'shape' : ( 2 , 3 , ) ,}  ",
      "{'descr': 'i4', 'fortran_order': False, 'shape': (2L, 3L), }",
      "{'descr': '|i4', 'fortran_order': False, 'shape': (2, 3), }"};
  for (const auto& dict : dicts) {
    for (int major : {1, 2, 3}) {
      for (std::size_t align : {64, 16, 1}) {
        Tensor t = decode_npy(npy_file(dict, data, major, align), "variant");
        EXPECT_EQ(t.dtype(), DType::kInt32) << dict;
        EXPECT_EQ(t.shape(), (Shape{2, 3})) << dict;
        EXPECT_EQ(tensor_bytes(t), data) << dict << " v" << major << " align " << align;
      }
    }
  }
  // Trailing bytes after the data are ignored, as numpy does.
  Tensor t = decode_npy(npy_file(dicts[0], data + "extra"), "trailing");
  EXPECT_EQ(tensor_bytes(t), data);
}

TEST(NpyTest, SwapsBigEndianData) {
  std::vector<int32_t> i32 = {1, -2, 258, 0x12345678};
  Tensor a = decode_npy(npy_file("{'descr': '>i4', 'fortran_order': False, 'shape': (4,), }", be_bytes(i32)), "be");
  EXPECT_EQ(tensor_bytes(a), le_bytes(i32));
  std::vector<double> f64 = {1.5, -0.25, 1e300};
  Tensor b = decode_npy(npy_file("{'descr': '>f8', 'fortran_order': False, 'shape': (3,), }", be_bytes(f64)), "be");
  EXPECT_EQ(b.dtype(), DType::kFloat64);
  EXPECT_EQ(tensor_bytes(b), le_bytes(f64));
  std::vector<std::complex<float>> c64 = {{1.f, 2.f}, {-3.5f, 4.25f}};
  Tensor c = decode_npy(npy_file("{'descr': '>c8', 'fortran_order': False, 'shape': (2,), }", be_bytes(c64, 4)), "be");
  EXPECT_EQ(c.dtype(), DType::kComplex64);
  EXPECT_EQ(c.data<std::complex<float>>()[1], c64[1]);
  std::vector<uint16_t> f16 = {Float16(1.5f).bits, Float16(-2.0f).bits};
  Tensor h = decode_npy(npy_file("{'descr': '>f2', 'fortran_order': False, 'shape': (2,), }", be_bytes(f16)), "be");
  EXPECT_EQ(h.dtype(), DType::kFloat16);
  EXPECT_EQ(static_cast<float>(h.data<Float16>()[0]), 1.5f);
  EXPECT_EQ(static_cast<float>(h.data<Float16>()[1]), -2.0f);
  std::vector<char32_t> text = {U'a', U'\u00e9', 0, U'\U0001F600', U'b', U'c'};
  Tensor s = decode_npy(npy_file("{'descr': '>U3', 'fortran_order': False, 'shape': (2,), }", be_bytes(text)), "be");
  ASSERT_EQ(s.dtype(), DType::kString);
  EXPECT_EQ(s.data<std::string>()[0], "a\xc3\xa9");
  EXPECT_EQ(s.data<std::string>()[1], "\xf0\x9f\x98\x80" "bc");
}

TEST(NpyTest, TransposesFortranOrder) {
  // M[i][j][k] = 100 i + 10 j + k, shape (2, 3, 4), stored with i varying fastest.
  Shape shape = {2, 3, 4};
  std::vector<int16_t> fortran;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) fortran.push_back(static_cast<int16_t>(100 * i + 10 * j + k));
  for (bool big : {false, true}) {
    std::string dict = std::string("{'descr': '") + (big ? ">" : "<") + "i2', 'fortran_order': True, 'shape': (2, 3, 4), }";
    Tensor t = decode_npy(npy_file(dict, big ? be_bytes(fortran) : le_bytes(fortran)), "fortran");
    ASSERT_EQ(t.shape(), shape);
    auto v = t.span<int16_t>();
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) EXPECT_EQ(v[i * 12 + j * 4 + k], 100 * i + 10 * j + k);
  }
  // Strings too: [["ab", "c"], ["d", "efg"]] in Fortran order is ab, d, c, efg.
  std::vector<char32_t> text = {U'a', U'b', 0, U'd', 0, 0, U'c', 0, 0, U'e', U'f', U'g'};
  Tensor s = decode_npy(npy_file("{'descr': '<U3', 'fortran_order': True, 'shape': (2, 2), }", le_bytes(text)), "fs");
  ASSERT_EQ(s.size(), 4);
  EXPECT_EQ(s.data<std::string>()[0], "ab");
  EXPECT_EQ(s.data<std::string>()[1], "c");
  EXPECT_EQ(s.data<std::string>()[2], "d");
  EXPECT_EQ(s.data<std::string>()[3], "efg");
  // 1-D and scalar Fortran arrays are the same as C order.
  std::vector<float> f = {1, 2, 3};
  Tensor one = decode_npy(npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }", le_bytes(f)), "f1");
  EXPECT_EQ(tensor_bytes(one), le_bytes(f));
}

TEST(NpyTest, ReadsByteStringsAndStripsTrailingNuls) {
  Tensor s = decode_npy(npy_file("{'descr': '|S3', 'fortran_order': False, 'shape': (3,), }",
                                 std::string("ab\0x\0y\0\0\0", 9)),
                        "bytes");
  ASSERT_EQ(s.dtype(), DType::kString);
  EXPECT_EQ(s.data<std::string>()[0], "ab");
  EXPECT_EQ(s.data<std::string>()[1], std::string("x\0y", 3));
  EXPECT_EQ(s.data<std::string>()[2], "");
}

TEST(NpyTest, UsesTheFileBufferOnlyWhenAligned) {
  TempDir dir{"parity-array-io"};
  std::vector<double> values = {1, 2, 3, 4};
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }";
  for (std::size_t align : {64, 1}) {
    for (std::size_t extra = 0; extra < 8; ++extra) {
      std::string padded = dict + std::string(extra, ' ');
      write_bytes(dir / "a.npy", npy_file(padded, le_bytes(values), 1, align));
      Tensor t = load_npy(dir / "a.npy");
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % alignof(double), 0u);
      EXPECT_EQ(tensor_bytes(t), le_bytes(values));
    }
  }
}

TEST(NpyTest, SaveAndLoadFiles) {
  TempDir dir{"parity-array-io"};
  Tensor t = sample_tensor(DType::kInt64, {3, 5});
  save_npy(dir / "x.npy", t);
  EXPECT_TRUE(identical(load_npy(dir / "x.npy"), t));
  EXPECT_EQ(read_bytes(dir / "x.npy"), encode_npy(t));
  // A failed save leaves the old file as it was, and no temp files.
  Tensor bf16 = Tensor::zeros(DType::kBFloat16, {2});
  expect_error<UnsupportedError>([&] { save_npy(dir / "x.npy", bf16); }, {"bfloat16", (dir / "x.npy").string()},
                                 "save bfloat16");
  EXPECT_EQ(read_bytes(dir / "x.npy"), encode_npy(t));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
  expect_error<FileError>([&] { load_npy(dir / "missing.npy"); }, {"missing.npy"}, "missing file");
}

TEST(NpyTest, RejectsMalformedFilesNamingTheSource) {
  const std::string what = "input 'tensor_x'";
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  std::string good_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  std::string good = npy_file(good_dict, le_bytes(values));
  ASSERT_NO_THROW(decode_npy(good, what));

  // Every truncation of a valid file.
  for (std::size_t n = 0; n < good.size(); ++n)
    expect_error<InvalidInputError>([&] { decode_npy(std::string_view(good).substr(0, n), what); }, {what},
                                    "prefix " + std::to_string(n));

  struct Case {
    std::string label, bytes, needle;
  };
  auto with_dict = [&](const std::string& dict) { return npy_file(dict, le_bytes(values)); };
  std::vector<Case> cases = {
      {"bad magic", "\x93NUMPZ\x01\x00"s + good.substr(8), "NUMPY"},
      {"text file", "hello world, this is not an array", "not a .npy"},
      {"header longer than file", good.substr(0, 8) + "\xff\xff" + good.substr(10), "truncated"},
      {"missing brace", with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), "), "header"},
      {"missing comma", with_dict("{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3)}"), "header"},
      {"unterminated string", with_dict("{'descr: '<f4', 'fortran_order': False, 'shape': (2, 3)}"), "header"},
      {"shape is an int", with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (6)}"), "tuple"},
      {"shape is a list", with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}"), "tuple"},
      {"empty tuple element", with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,,3)}"), "header"},
      {"lonely comma", with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (,)}"), "header"},
      {"float dim", with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2.0, 3)}"), "header"},
      {"huge dim", with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"), "64 bits"},
      {"fortran_order 1", with_dict("{'descr': '<f4', 'fortran_order': 1, 'shape': (2, 3)}"), "True or False"},
      {"fortran_order Truth", with_dict("{'descr': '<f4', 'fortran_order': Truth, 'shape': (2, 3)}"), "True or False"},
      {"missing key", with_dict("{'descr': '<f4', 'shape': (2, 3)}"), "fortran_order"},
      {"extra key", with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}"), "'x'"},
      {"trailing garbage", with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} x"), "after"},
      {"nul in header", with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}\0"s), "header"},
      {"unknown descr", with_dict("{'descr': '<x4', 'fortran_order': False, 'shape': (2, 3)}"), "'<x4'"},
      {"odd float size", with_dict("{'descr': '<f3', 'fortran_order': False, 'shape': (2, 3)}"), "'<f3'"},
      {"odd int size", with_dict("{'descr': '<i3', 'fortran_order': False, 'shape': (2, 3)}"), "'<i3'"},
      {"empty descr", with_dict("{'descr': '', 'fortran_order': False, 'shape': (2, 3)}"), "descr"},
      {"zero-width str", with_dict("{'descr': '<U0', 'fortran_order': False, 'shape': (2, 3)}"), "'<U0'"},
      {"sizeless str", with_dict("{'descr': '<U', 'fortran_order': False, 'shape': (2, 3)}"), "'<U'"},
      {"negative dim", with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3)}"), "negative"},
      {"too little data", npy_file(good_dict, le_bytes(values).substr(0, 23)), "truncated"},
      {"10^12 elements in 100 bytes",
       npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }", std::string(100, 'x')),
       "1000000000000"},
      {"overflowing shape",
       npy_file("{'descr': '|u1', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904), }", "xx"),
       "truncated"},
      {"huge strings",
       npy_file("{'descr': '<U1000000', 'fortran_order': False, 'shape': (1000000,), }", "abcd"),
       "truncated"},
      {"invalid code point",
       npy_file("{'descr': '<U1', 'fortran_order': False, 'shape': (1,), }", le_bytes(std::vector<uint32_t>{0x110000})),
       "code point"},
      {"surrogate code point",
       npy_file("{'descr': '<U1', 'fortran_order': False, 'shape': (1,), }", le_bytes(std::vector<uint32_t>{0xD800})),
       "code point"},
  };
  for (const auto& c : cases)
    expect_error<InvalidInputError>([&] { decode_npy(c.bytes, what); }, {what, c.needle}, c.label);

  // Valid numpy data that Parity does not support.
  std::vector<Case> unsupported = {
      {"object", with_dict("{'descr': '|O', 'fortran_order': False, 'shape': (2, 3), }"), "pickle"},
      {"structured", with_dict("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3), }"), "structured"},
      {"datetime", with_dict("{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (2, 3), }"), "datetime"},
      {"void", with_dict("{'descr': '|V4', 'fortran_order': False, 'shape': (2, 3), }"), "void"},
      {"long double", with_dict("{'descr': '<f16', 'fortran_order': False, 'shape': (2, 3), }"), "long double"},
      {"version 4", "\x93NUMPY\x04\x00"s + good.substr(8), "version 4.0"},
      {"version 1.1", "\x93NUMPY\x01\x01"s + good.substr(8), "version 1.1"},
  };
  for (const auto& c : unsupported)
    expect_error<UnsupportedError>([&] { decode_npy(c.bytes, what); }, {what, c.needle}, c.label);

  TempDir dir{"parity-array-io"};
  write_bytes(dir / "bad.npy", cases[0].bytes);
  expect_error<InvalidInputError>([&] { load_npy(dir / "bad.npy"); }, {(dir / "bad.npy").string()}, "load bad file");
}

// Random corruption of valid files: decoding either works or throws parity::Error, and never
// reads out of bounds (run under the asan preset).
TEST(NpyTest, SurvivesRandomCorruption) {
  std::mt19937 rng(7);
  std::vector<std::string> seeds = {encode_npy(sample_tensor(DType::kFloat32, {2, 3})),
                                    encode_npy(sample_tensor(DType::kString, {3})),
                                    encode_npy(sample_tensor(DType::kComplex128, {2, 2})),
                                    npy_file("{'descr': '>U2', 'fortran_order': True, 'shape': (2, 2), }",
                                             std::string(16, 'a'))};
  const char interesting[] = "(),'\": -0123456789TrueFalse<>|=fiuUSbc{}L";
  int decoded = 0, rejected = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string bytes = seeds[round % seeds.size()];
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      std::size_t pos = rng() % bytes.size();
      switch (rng() % 4) {
        case 0: bytes[pos] = static_cast<char>(rng()); break;
        case 1: bytes[pos] = interesting[rng() % (sizeof interesting - 1)]; break;
        case 2: bytes.erase(pos, 1 + rng() % 3); break;
        default: bytes.insert(pos, 1, interesting[rng() % (sizeof interesting - 1)]); break;
      }
      if (bytes.empty()) bytes = "x";
    }
    Tensor t;
    try {
      t = decode_npy(bytes, "fuzz");
      ++decoded;
    } catch (const Error& e) {
      ++rejected;
      EXPECT_NE(std::string(e.what()).find("fuzz"), std::string::npos) << e.what();
      continue;
    }
    try {
      encode_npy(t);  // may refuse byte strings that are not UTF-8, but must not crash
    } catch (const InvalidInputError&) {
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(decoded, 0);
}

// ---------------------------------------------------------------------------------------------
// .npz

NamedTensors sample_arrays() {
  return {{"z_last_name_first", sample_tensor(DType::kFloat32, {2, 3})},
          {"ids", sample_tensor(DType::kInt64, {4})},
          {"mask", sample_tensor(DType::kBool, {3, 1})},
          {"words", sample_tensor(DType::kString, {2, 2})},
          {"empty", sample_tensor(DType::kFloat64, {0, 5})},
          {"scalar", sample_tensor(DType::kUInt16, {})},
          {"n\xc3\xa4me/with slash", sample_tensor(DType::kComplex64, {3})}};
}

void expect_same_arrays(const NamedTensors& a, const NamedTensors& b, const std::string& label) {
  ASSERT_EQ(a.size(), b.size()) << label;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first) << label;
    EXPECT_TRUE(identical(a[i].second, b[i].second)) << label << ": " << a[i].first;
  }
}

TEST(NpzTest, RoundTripsStoredAndCompressed) {
  TempDir dir{"parity-array-io"};
  NamedTensors arrays = sample_arrays();
  arrays.emplace_back("zeros", Tensor::zeros(DType::kFloat32, {10000}));
  save_npz(dir / "plain.npz", arrays);
  save_npz(dir / "packed.npz", arrays, /*compress=*/true);
  expect_same_arrays(load_npz(dir / "plain.npz"), arrays, "plain");
  expect_same_arrays(load_npz(dir / "packed.npz"), arrays, "packed");
  EXPECT_GT(fs::file_size(dir / "plain.npz"), 40000u);
  EXPECT_LT(fs::file_size(dir / "packed.npz"), 10000u);

  save_npz(dir / "none.npz", {});
  EXPECT_TRUE(load_npz(dir / "none.npz").empty());
}

TEST(NpzTest, RejectsBadArchivesNamingTheFile) {
  TempDir dir{"parity-array-io"};
  NamedTensors dup = {{"a", sample_tensor(DType::kFloat32, {1})}, {"a", sample_tensor(DType::kFloat32, {2})}};
  expect_error<InvalidInputError>([&] { save_npz(dir / "dup.npz", dup); }, {"'a'", "dup.npz"}, "duplicate");
  EXPECT_FALSE(fs::exists(dir / "dup.npz"));
  NamedTensors bf = {{"ok", sample_tensor(DType::kFloat32, {1})}, {"b", Tensor::zeros(DType::kBFloat16, {2})}};
  expect_error<UnsupportedError>([&] { save_npz(dir / "bf.npz", bf); }, {"bfloat16", "'b'"}, "bfloat16 member");
  EXPECT_FALSE(fs::exists(dir / "bf.npz"));

  expect_error<FileError>([&] { load_npz(dir / "missing.npz"); }, {"missing.npz"}, "missing");
  write_bytes(dir / "text.npz", "this is not a zip archive at all");
  expect_error<InvalidInputError>([&] { load_npz(dir / "text.npz"); }, {"text.npz", "zip"}, "not a zip");
  write_bytes(dir / "empty.npz", "");
  expect_error<InvalidInputError>([&] { load_npz(dir / "empty.npz"); }, {"empty.npz"}, "empty file");

  // A stored member with one data byte changed: still a valid .npy, so only the CRC catches it.
  NamedTensors one = {{"weights", sample_tensor(DType::kFloat32, {4})}};
  save_npz(dir / "one.npz", one);
  std::string zip = read_bytes(dir / "one.npz");
  std::size_t magic = zip.find("\x93NUMPY");
  ASSERT_NE(magic, std::string::npos);
  std::string corrupt = zip;
  corrupt[magic + encode_npy(one[0].second).size() - 1] ^= 0x01;
  write_bytes(dir / "corrupt.npz", corrupt);
  expect_error<InvalidInputError>([&] { load_npz(dir / "corrupt.npz"); }, {"corrupt.npz", "weights.npy", "CRC"},
                                  "corrupt member");
  write_bytes(dir / "cut.npz", zip.substr(0, zip.size() / 2));
  expect_error<InvalidInputError>([&] { load_npz(dir / "cut.npz"); }, {"cut.npz"}, "truncated archive");
  // Every truncation is rejected cleanly.
  for (std::size_t n = 1; n < zip.size(); n += 7) {
    write_bytes(dir / "prefix.npz", zip.substr(0, n));
    try {
      load_npz(dir / "prefix.npz");
      ADD_FAILURE() << "prefix " << n << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("prefix.npz"), std::string::npos) << e.what();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Polygraphy JSON

TEST(PolygraphyJsonTest, EncodesArrayThenClassMarker) {
  Tensor t = sample_tensor(DType::kFloat32, {2, 2});
  nlohmann::json j = encode_polygraphy_array(t);
  std::string text = j.dump();
  EXPECT_EQ(text.rfind("{\"array\":\"", 0), 0u) << text;
  EXPECT_NE(text.find("\",\"polygraphy_class\":\"ndarray\"}"), std::string::npos) << text;
  EXPECT_EQ(base64_decode(j["array"].get<std::string>(), "t"), encode_npy(t));
  EXPECT_TRUE(identical(decode_polygraphy_array(j, "t"), t));
}

TEST(PolygraphyJsonTest, DecodesLegacyLayouts) {
  Tensor t = sample_tensor(DType::kInt32, {3});
  std::string npy = encode_npy(t);
  nlohmann::json legacy = {{"__polygraphy_encoded_ndarray", "polygraphy_serialized_json_type"},
                           {"array", base64_encode(npy)}};
  EXPECT_TRUE(identical(decode_polygraphy_array(legacy, "legacy"), t));
  // Oldest: the bytes as a latin-1 string.
  std::string latin1_as_utf8;
  for (unsigned char c : npy) {
    if (c < 0x80) {
      latin1_as_utf8.push_back(static_cast<char>(c));
    } else {
      latin1_as_utf8.push_back(static_cast<char>(0xC0 | (c >> 6)));
      latin1_as_utf8.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  nlohmann::json latin1 = {{"polygraphy_class", "ndarray"}, {"array", latin1_as_utf8}};
  EXPECT_TRUE(identical(decode_polygraphy_array(latin1, "latin1"), t));
  // An .npz payload: the first array counts.
  TempDir dir{"parity-array-io"};
  save_npz(dir / "p.npz", {{"first", t}, {"second", sample_tensor(DType::kFloat32, {1})}});
  nlohmann::json npz = {{"polygraphy_class", "ndarray"}, {"array", base64_encode(read_bytes(dir / "p.npz"))}};
  EXPECT_TRUE(identical(decode_polygraphy_array(npz, "npz"), t));
}

TEST(PolygraphyJsonTest, RejectsBadObjectsNamingTheSource) {
  const std::string what = "input 'x'";
  std::string b64 = base64_encode(encode_npy(sample_tensor(DType::kFloat32, {1})));
  std::vector<std::pair<nlohmann::json, std::string>> invalid = {
      {nlohmann::json::array({1, 2}), "array"},
      {nlohmann::json{{"array", b64}}, "polygraphy_class"},
      {nlohmann::json{{"array", b64}, {"polygraphy_class", 3}}, "string"},
      {nlohmann::json{{"polygraphy_class", "ndarray"}}, "\"array\""},
      {nlohmann::json{{"polygraphy_class", "ndarray"}, {"array", 5}}, "base64"},
      {nlohmann::json{{"polygraphy_class", "ndarray"}, {"array", b64.substr(1)}}, "base64"},
      {nlohmann::json{{"polygraphy_class", "ndarray"}, {"array", base64_encode("not npy")}}, ".npy"},
      {nlohmann::json{{"__polygraphy_encoded_ndarray", "wrong"}, {"array", b64}}, "polygraphy_class"},
  };
  for (const auto& [object, needle] : invalid)
    expect_error<InvalidInputError>([&] { decode_polygraphy_array(object, what); }, {what, needle}, object.dump());
  expect_error<UnsupportedError>(
      [&] { decode_polygraphy_array(nlohmann::json{{"polygraphy_class", "Tensor"}, {"tensor", b64}}, what); },
      {what, "'Tensor'"}, "torch tensor");
}

std::vector<NamedTensors> sample_iterations() {
  return {{{"z_input", sample_tensor(DType::kFloat32, {1, 3})},
           {"a_input", sample_tensor(DType::kInt64, {2})},
           {"m\xc3\xa4sk \"q\"\t\\", sample_tensor(DType::kBool, {2, 2})}},
          {},
          {{"z_input", sample_tensor(DType::kFloat32, {2, 3})}, {"text", sample_tensor(DType::kString, {3})}}};
}

TEST(PolygraphyJsonTest, InputsFilesRoundTripInOrder) {
  TempDir dir{"parity-array-io"};
  std::vector<NamedTensors> iterations = sample_iterations();
  save_inputs_json(dir / "inputs.json", iterations);
  std::vector<NamedTensors> back = load_inputs_json(dir / "inputs.json");
  ASSERT_EQ(back.size(), iterations.size());
  for (std::size_t i = 0; i < back.size(); ++i) expect_same_arrays(back[i], iterations[i], "iteration " + std::to_string(i));

  // The text is what nlohmann's ordered dump with 4-space indent gives (Python's layout).
  nlohmann::ordered_json expected = nlohmann::ordered_json::array();
  for (const auto& inputs : iterations) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (const auto& [name, tensor] : inputs) {
      nlohmann::ordered_json array = nlohmann::ordered_json::object();
      array["array"] = base64_encode(encode_npy(tensor));
      array["polygraphy_class"] = "ndarray";
      object[name] = array;
    }
    expected.push_back(object);
  }
  EXPECT_EQ(read_bytes(dir / "inputs.json"), expected.dump(4, ' ', true));

  save_inputs_json(dir / "none.json", {});
  EXPECT_EQ(read_bytes(dir / "none.json"), "[]");
  EXPECT_TRUE(load_inputs_json(dir / "none.json").empty());
}

TEST(PolygraphyJsonTest, InputsFileErrorsNameTheFileAndInput) {
  TempDir dir{"parity-array-io"};
  std::string good = base64_encode(encode_npy(sample_tensor(DType::kFloat32, {1})));
  struct Case {
    std::string label, text;
    std::vector<std::string> needles;
  };
  std::vector<Case> cases = {
      {"not json", "[{\"x\": ", {"not valid JSON"}},
      {"not a list", "{\"x\": 1}", {"list"}},
      {"iteration not object", "[[1]]", {"iteration 0"}},
      {"bad array", "[{\"ok\": {\"array\": \"" + good + "\", \"polygraphy_class\": \"ndarray\"}}, "
                    "{\"bad_input\": {\"array\": \"!!!!\", \"polygraphy_class\": \"ndarray\"}}]",
       {"iteration 1", "'bad_input'", "base64"}},
      {"plain number", "[{\"n\": 3}]", {"'n'"}},
      {"invalid utf-8", "[{\"\xff\": 3}]", {"not valid JSON"}},
  };
  for (const auto& c : cases) {
    fs::path path = dir / "bad.json";
    write_bytes(path, c.text);
    std::vector<std::string> needles = c.needles;
    needles.push_back(path.string());
    expect_error<InvalidInputError>([&] { load_inputs_json(path); }, needles, c.label);
  }
  expect_error<FileError>([&] { load_inputs_json(dir / "missing.json"); }, {"missing.json"}, "missing");

  // Saving something numpy cannot hold fails without leaving a file behind.
  std::vector<NamedTensors> bad = {{{"fine", sample_tensor(DType::kFloat32, {1})}},
                                   {{"brain", Tensor::zeros(DType::kBFloat16, {2})}}};
  expect_error<UnsupportedError>([&] { save_inputs_json(dir / "out.json", bad); }, {"bfloat16", "'brain'"},
                                 "bfloat16 input");
  std::vector<NamedTensors> dup = {{{"d", sample_tensor(DType::kFloat32, {1})}, {"d", sample_tensor(DType::kFloat32, {1})}}};
  expect_error<InvalidInputError>([&] { save_inputs_json(dir / "out.json", dup); }, {"'d'", "twice"}, "duplicate");
  std::vector<NamedTensors> utf = {{{"bad\xff", sample_tensor(DType::kFloat32, {1})}}};
  expect_error<InvalidInputError>([&] { save_inputs_json(dir / "out.json", utf); }, {"UTF-8"}, "bad name");
  EXPECT_FALSE(fs::exists(dir / "out.json"));
  for (const auto& entry : fs::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().string().find("parity-tmp"), std::string::npos) << entry.path();
}

// ---------------------------------------------------------------------------------------------
// Peer tests against numpy and Polygraphy

// numpy writes; Parity reads. For every file Python also writes a reference: dtype name, shape
// and the C-order little-endian bytes (or the strings' UTF-8 bytes).
constexpr const char* kNumpyWrites = R"PY(
import json, sys
import numpy as np

out = sys.argv[1]
cases = {
    "f32_2d": np.arange(12, dtype=np.float32).reshape(3, 4) * np.float32(0.5) - np.float32(1),
    "f32_fortran": np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4)),
    "i32_big": np.arange(-6, 6, dtype=">i4").reshape(3, 4),
    "f64_big_fortran": np.asfortranarray(np.linspace(-1, 1, 15).reshape(3, 5)).astype(">f8", order="F"),
    "bool": np.arange(10) % 3 == 0,
    "f16": (np.arange(-8, 8) / 4).astype(np.float16).reshape(4, 4),
    "i8": np.arange(-128, 128, 7, dtype=np.int8),
    "u8": np.arange(0, 256, 5, dtype=np.uint8),
    "i16": np.arange(-30000, 30000, 7001, dtype=np.int16),
    "u16_big": np.arange(0, 65535, 4097, dtype=">u2"),
    "u32": np.array([0, 1, 2**32 - 1], dtype=np.uint32),
    "i64": np.array([-(2**63), -1, 0, 2**63 - 1], dtype=np.int64),
    "u64": np.array([0, 1, 2**63, 2**64 - 1], dtype=np.uint64),
    "c64": (np.arange(6) * (1 + 2j)).astype(np.complex64).reshape(2, 3),
    "c128_big": (np.arange(4) * (0.5 - 1j)).astype(">c16"),
    "str": np.array(["a", "h\u00e9llo", "", "xyz\U0001F600"]),
    "str_fortran": np.asfortranarray(np.array([["ab", "c"], ["d", "efg"], ["", "h"]])),
    "str_big": np.array(["abc", "de"]).astype(">U3"),
    "bytes": np.array([b"ab", b"", b"xyz"]),
    "scalar_f64": np.array(3.25),
    "scalar_i64": np.array(-7),
    "scalar_str": np.array("lone"),
    "empty_f32": np.zeros((0, 3), np.float32),
    "empty_str": np.array([], dtype=str),
    "empty_3d": np.zeros((2, 0, 4), np.int16),
    "long_1d": np.arange(123457, dtype=np.int32),
}
assert cases["f32_fortran"].flags.f_contiguous and cases["f64_big_fortran"].flags.f_contiguous
ref = {}
for name, a in cases.items():
    np.save(f"{out}/{name}.npy", a)
    entry = {"shape": list(a.shape)}
    if a.dtype.kind == "U":
        entry["dtype"] = "string"
        entry["strings"] = [s.encode("utf-8").hex() for s in a.ravel(order="C").tolist()]
    elif a.dtype.kind == "S":
        entry["dtype"] = "string"
        entry["strings"] = [s.hex() for s in a.ravel(order="C").tolist()]
    else:
        entry["dtype"] = a.dtype.name
        entry["hex"] = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes().hex()
    ref[name] = entry
# Other header versions.
for version in [(2, 0), (3, 0)]:
    name = f"v{version[0]}"
    with open(f"{out}/{name}.npy", "wb") as f:
        np.lib.format.write_array(f, cases["f32_2d"], version=version)
    ref[name] = dict(ref["f32_2d"])
# Archives: keyword names keep their order; positional arrays are arr_0, arr_1...
np.savez(f"{out}/plain.npz", cases["bool"], z_first=cases["f32_2d"], words=cases["str"], big=cases["i32_big"])
np.savez_compressed(f"{out}/packed.npz", z_first=cases["f32_2d"], fortran=cases["f32_fortran"],
                    empty=cases["empty_str"], long=cases["long_1d"])
# A zip with a directory entry and a member that is not .npy: numpy reads it, and so must Parity.
import zipfile
with zipfile.ZipFile(f"{out}/extra.npz", "w") as z:
    z.writestr("notes/", b"")
    z.writestr("notes/readme.txt", b"not an array")
    z.writestr("only.npy", open(f"{out}/i8.npy", "rb").read())
assert list(np.load(f"{out}/extra.npz").keys()) == ["notes/", "notes/readme.txt", "only"]
json.dump(ref, open(f"{out}/ref.json", "w"))
)PY";

void check_against_reference(const Tensor& t, const nlohmann::json& ref, const std::string& label) {
  ASSERT_EQ(std::string(dtype_name(t.dtype())), ref.at("dtype").get<std::string>()) << label;
  EXPECT_EQ(t.shape(), ref.at("shape").get<Shape>()) << label;
  if (t.dtype() == DType::kString) {
    auto strings = t.span<std::string>();
    auto expected = ref.at("strings").get<std::vector<std::string>>();
    ASSERT_EQ(strings.size(), expected.size()) << label;
    for (std::size_t i = 0; i < strings.size(); ++i) EXPECT_EQ(hex(strings[i]), expected[i]) << label << " " << i;
  } else {
    EXPECT_EQ(hex(tensor_bytes(t)), ref.at("hex").get<std::string>()) << label;
  }
}

TEST(ArrayIoPeerTest, ParityReadsWhatNumpyWrites) {
  REQUIRE_PYTHON(python);
  TempDir dir{"parity-array-io"};
  PythonResult r = run_python(python, dir.path(), kNumpyWrites, {dir.path().string()});
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json ref = nlohmann::json::parse(read_bytes(dir / "ref.json"));
  ASSERT_GE(ref.size(), 28u);
  std::map<std::string, Tensor> loaded;
  for (const auto& [name, entry] : ref.items()) {
    Tensor t = load_npy(dir / (name + ".npy"));
    check_against_reference(t, entry, name);
    loaded[name] = t;
  }
  // Values computed here, independently of numpy.
  auto f32 = loaded["f32_2d"].span<float>();
  for (int i = 0; i < 12; ++i) EXPECT_EQ(f32[i], i * 0.5f - 1.0f);
  auto fortran = loaded["f32_fortran"].span<float>();
  for (int i = 0; i < 24; ++i) EXPECT_EQ(fortran[i], static_cast<float>(i));
  auto big = loaded["i32_big"].span<int32_t>();
  for (int i = 0; i < 12; ++i) EXPECT_EQ(big[i], i - 6);
  auto f64 = loaded["f64_big_fortran"].span<double>();
  for (int i = 0; i < 15; ++i) EXPECT_NEAR(f64[i], -1.0 + i / 7.0, 1e-15);
  auto mask = loaded["bool"].span<uint8_t>();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(mask[i], i % 3 == 0 ? 1 : 0);
  auto f16 = loaded["f16"].span<Float16>();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(static_cast<float>(f16[i]), (i - 8) / 4.0f);
  auto i8 = loaded["i8"].span<int8_t>();
  for (std::size_t i = 0; i < i8.size(); ++i) EXPECT_EQ(i8[i], -128 + 7 * static_cast<int>(i));
  EXPECT_EQ(loaded["u64"].span<uint64_t>()[3], UINT64_MAX);
  EXPECT_EQ(loaded["u64"].span<uint64_t>()[2], uint64_t{1} << 63);
  EXPECT_EQ(loaded["i64"].span<int64_t>()[0], INT64_MIN);
  auto c64 = loaded["c64"].span<std::complex<float>>();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c64[i], std::complex<float>(i, 2.0f * i));
  auto c128 = loaded["c128_big"].span<std::complex<double>>();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c128[i], std::complex<double>(0.5 * i, -1.0 * i));
  std::vector<std::string> words = {"a", "h\xc3\xa9llo", "", "xyz\xf0\x9f\x98\x80"};
  auto str = loaded["str"].span<std::string>();
  EXPECT_EQ(std::vector<std::string>(str.begin(), str.end()), words);
  auto sf = loaded["str_fortran"].span<std::string>();
  EXPECT_EQ(std::vector<std::string>(sf.begin(), sf.end()), (std::vector<std::string>{"ab", "c", "d", "efg", "", "h"}));
  EXPECT_EQ(loaded["scalar_f64"].shape(), Shape{});
  EXPECT_EQ(loaded["scalar_f64"].span<double>()[0], 3.25);
  EXPECT_EQ(loaded["scalar_str"].span<std::string>()[0], "lone");
  EXPECT_EQ(loaded["empty_3d"].shape(), (Shape{2, 0, 4}));
  auto long_1d = loaded["long_1d"].span<int32_t>();
  ASSERT_EQ(long_1d.size(), 123457u);
  EXPECT_EQ(long_1d[123456], 123456);

  NamedTensors plain = load_npz(dir / "plain.npz");
  ASSERT_EQ(plain.size(), 4u);
  // numpy puts keyword arrays first, then the positional ones.
  const char* plain_names[] = {"z_first", "words", "big", "arr_0"};
  const char* plain_refs[] = {"f32_2d", "str", "i32_big", "bool"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(plain[i].first, plain_names[i]);
    check_against_reference(plain[i].second, ref.at(plain_refs[i]), std::string("plain.npz ") + plain_names[i]);
  }
  NamedTensors packed = load_npz(dir / "packed.npz");
  ASSERT_EQ(packed.size(), 4u);
  const char* packed_names[] = {"z_first", "fortran", "empty", "long"};
  const char* packed_refs[] = {"f32_2d", "f32_fortran", "empty_str", "long_1d"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(packed[i].first, packed_names[i]);
    check_against_reference(packed[i].second, ref.at(packed_refs[i]), std::string("packed.npz ") + packed_names[i]);
  }
  NamedTensors extra = load_npz(dir / "extra.npz");  // skips the directory and the text member
  ASSERT_EQ(extra.size(), 1u);
  EXPECT_EQ(extra[0].first, "only");
  check_against_reference(extra[0].second, ref.at("i8"), "extra.npz only");
}

// Parity writes; numpy reads and checks values against arrays it builds from the same formulas,
// and checks that the .npy bytes are exactly np.save's.
NamedTensors formula_arrays() {
  NamedTensors arrays;
  arrays.emplace_back("f32", make_tensor<float>(DType::kFloat32, {3, 4}, [](int64_t i) { return i * 0.5f - 1.0f; }));
  arrays.emplace_back("f64", make_tensor<double>(DType::kFloat64, {5}, [](int64_t i) { return i / 3.0; }));
  arrays.emplace_back("f16", make_tensor<Float16>(DType::kFloat16, {4, 4}, [](int64_t i) { return Float16((i - 8) / 4.0f); }));
  arrays.emplace_back("i8", make_tensor<int8_t>(DType::kInt8, {10}, [](int64_t i) { return i - 5; }));
  arrays.emplace_back("u8", make_tensor<uint8_t>(DType::kUInt8, {2, 5}, [](int64_t i) { return 25 * i; }));
  arrays.emplace_back("i16", make_tensor<int16_t>(DType::kInt16, {3}, [](int64_t i) { return -1000 * i; }));
  arrays.emplace_back("u16", make_tensor<uint16_t>(DType::kUInt16, {3}, [](int64_t i) { return 30000 * i; }));
  arrays.emplace_back("i32", make_tensor<int32_t>(DType::kInt32, {1, 2, 1, 3, 1}, [](int64_t i) { return i * i - 3; }));
  arrays.emplace_back("u32", make_tensor<uint32_t>(DType::kUInt32, {2}, [](int64_t i) { return i ? UINT32_MAX : 0u; }));
  arrays.emplace_back("i64", make_tensor<int64_t>(DType::kInt64, {3}, [](int64_t i) { return i == 0 ? INT64_MIN : i == 1 ? -1 : INT64_MAX; }));
  arrays.emplace_back("u64", make_tensor<uint64_t>(DType::kUInt64, {4}, [](int64_t i) {
    const uint64_t v[] = {0, 1, uint64_t{1} << 63, UINT64_MAX};
    return v[i];
  }));
  arrays.emplace_back("bool", make_tensor<uint8_t>(DType::kBool, {10}, [](int64_t i) { return i % 3 == 0; }));
  arrays.emplace_back("c64", make_tensor<std::complex<float>>(DType::kComplex64, {2, 3}, [](int64_t i) {
    return std::complex<float>(i, 2.0f * i);
  }));
  arrays.emplace_back("c128", make_tensor<std::complex<double>>(DType::kComplex128, {4}, [](int64_t i) {
    return std::complex<double>(static_cast<double>(i), 0.0) * std::complex<double>(0.5, -1.0);  // +0 imag at 0
  }));
  arrays.emplace_back("str", make_strings({4}, {"a", "h\xc3\xa9llo", "", "xyz\xf0\x9f\x98\x80"}));
  arrays.emplace_back("str2d", make_strings({2, 2}, {"ab", "c", "d", "efgh"}));
  arrays.emplace_back("scalar", make_tensor<double>(DType::kFloat64, {}, [](int64_t) { return 3.25; }));
  arrays.emplace_back("scalar_str", make_strings({}, {"lone"}));
  arrays.emplace_back("empty", Tensor::zeros(DType::kFloat32, {0, 3}));
  arrays.emplace_back("empty_str", Tensor::zeros(DType::kString, {0}));
  arrays.emplace_back("wide", make_tensor<int32_t>(DType::kInt32, {300001}, [](int64_t i) { return i; }));
  arrays.emplace_back("long_dims", make_tensor<uint8_t>(DType::kUInt8, {1234567890123, 0}, [](int64_t) { return 0; }));
  // With 36 dims of 1 the dict plus numpy's growth-axis spaces ends exactly on a 64-byte boundary,
  // so numpy pads with a full 64 spaces: one space fewer or more would show in the bytes.
  arrays.emplace_back("rank36", make_tensor<uint8_t>(DType::kUInt8, Shape(36, 1), [](int64_t) { return 7; }));
  return arrays;
}

constexpr const char* kNumpyFormulas = R"PY(
import numpy as np
i = np.arange
expected = {
    "f32": (i(12, dtype=np.float32) * np.float32(0.5) - np.float32(1)).reshape(3, 4),
    "f64": i(5) / 3.0,
    "f16": ((i(16) - 8) / 4).astype(np.float16).reshape(4, 4),
    "i8": (i(10) - 5).astype(np.int8),
    "u8": (25 * i(10)).astype(np.uint8).reshape(2, 5),
    "i16": (-1000 * i(3)).astype(np.int16),
    "u16": (30000 * i(3)).astype(np.uint16),
    "i32": (i(6) * i(6) - 3).astype(np.int32).reshape(1, 2, 1, 3, 1),
    "u32": np.array([0, 2**32 - 1], np.uint32),
    "i64": np.array([-(2**63), -1, 2**63 - 1], np.int64),
    "u64": np.array([0, 1, 2**63, 2**64 - 1], np.uint64),
    "bool": i(10) % 3 == 0,
    "c64": (i(6) * (1 + 2j)).astype(np.complex64).reshape(2, 3),
    "c128": i(4) * (0.5 - 1j),
    "str": np.array(["a", "h\u00e9llo", "", "xyz\U0001F600"]),
    "str2d": np.array([["ab", "c"], ["d", "efgh"]]),
    "scalar": np.array(3.25),
    "scalar_str": np.array("lone"),
    "empty": np.zeros((0, 3), np.float32),
    "empty_str": np.array([], dtype=str),
    "wide": i(300001, dtype=np.int32),
    "long_dims": np.zeros((1234567890123, 0), np.uint8),
    "rank36": np.full((1,) * 36, 7, np.uint8),
}
errors = []
def same(name, got, want):
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
        errors.append(f"{name}: got {got.dtype} {got.shape} {got!r}, want {want.dtype} {want.shape} {want!r}")
)PY";

TEST(ArrayIoPeerTest, NumpyReadsWhatParityWrites) {
  REQUIRE_PYTHON(python);
  TempDir dir{"parity-array-io"};
  NamedTensors arrays = formula_arrays();
  for (const auto& [name, tensor] : arrays) save_npy(dir / (name + ".npy"), tensor);
  save_npz(dir / "plain.npz", arrays);
  save_npz(dir / "packed.npz", arrays, /*compress=*/true);
  save_npz(dir / "none.npz", {});
  std::string script = std::string(kNumpyFormulas) + R"PY(
import io, sys, zipfile
d = sys.argv[1]
for name, want in expected.items():
    path = f"{d}/{name}.npy"
    same(name, np.load(path, allow_pickle=False), want)
    buf = io.BytesIO()
    np.save(buf, want)
    mine = open(path, "rb").read()
    if mine != buf.getvalue():
        errors.append(f"{name}.npy bytes differ from np.save:\n  parity {mine[:200]!r}\n  numpy  {buf.getvalue()[:200]!r}")
for archive, method in [("plain", zipfile.ZIP_STORED), ("packed", zipfile.ZIP_DEFLATED)]:
    with np.load(f"{d}/{archive}.npz", allow_pickle=False) as z:
        if list(z.keys()) != list(expected):
            errors.append(f"{archive}.npz names {list(z.keys())}")
        for name, want in expected.items():
            same(f"{archive}.npz/{name}", z[name], want)
    with zipfile.ZipFile(f"{d}/{archive}.npz") as z:
        if z.testzip() is not None:
            errors.append(f"{archive}.npz fails its CRC check")
        for info in z.infolist():
            if info.compress_type != method:
                errors.append(f"{archive}.npz/{info.filename} compress_type {info.compress_type}")
with np.load(f"{d}/none.npz") as z:
    if list(z.keys()):
        errors.append("none.npz is not empty")
print("\n".join(errors))
sys.exit(1 if errors else 0)
)PY";
  expect_python_ok(python, dir.path(), script, {dir.path().string()}, "numpy reading Parity's files");
}

// Polygraphy saves input data; Parity loads it.
TEST(ArrayIoPeerTest, ParityLoadsPolygraphyInputs) {
  REQUIRE_PYTHON(python);
  TempDir dir{"parity-array-io"};
  std::string script = std::string(kNumpyFormulas) + R"PY(
import base64, io, json, sys
from polygraphy.json import save_json, load_json
d = sys.argv[1]
data = [
    {"z_f32": expected["f32"], "a_i64": expected["i64"], "mask": expected["bool"]},
    {},
    {"z_f32": expected["f32"] * 2, "words": expected["str"], "s": expected["scalar"], "e": expected["empty"]},
]
save_json(data, f"{d}/inputs.json")
# The legacy marker, checked to be something Polygraphy itself still reads.
buf = io.BytesIO()
np.save(buf, expected["c64"])
legacy = [{"old": {"__polygraphy_encoded_ndarray": "polygraphy_serialized_json_type",
                   "array": base64.b64encode(buf.getvalue()).decode()}}]
json.dump(legacy, open(f"{d}/legacy.json", "w"), indent=4)
same("legacy", load_json(f"{d}/legacy.json")[0]["old"], expected["c64"])
print("\n".join(errors))
sys.exit(1 if errors else 0)
)PY";
  expect_python_ok(python, dir.path(), script, {dir.path().string()}, "polygraphy save_json");

  std::map<std::string, Tensor> by_name;
  for (auto& [name, tensor] : formula_arrays()) by_name[name] = tensor;
  std::vector<NamedTensors> iterations = load_inputs_json(dir / "inputs.json");
  ASSERT_EQ(iterations.size(), 3u);
  ASSERT_EQ(iterations[0].size(), 3u);
  EXPECT_EQ(iterations[0][0].first, "z_f32");
  EXPECT_EQ(iterations[0][1].first, "a_i64");
  EXPECT_EQ(iterations[0][2].first, "mask");
  EXPECT_TRUE(identical(iterations[0][0].second, by_name["f32"]));
  EXPECT_TRUE(identical(iterations[0][1].second, by_name["i64"]));
  EXPECT_TRUE(identical(iterations[0][2].second, by_name["bool"]));
  EXPECT_TRUE(iterations[1].empty());
  ASSERT_EQ(iterations[2].size(), 4u);
  EXPECT_EQ(iterations[2][0].first, "z_f32");
  auto doubled = iterations[2][0].second.span<float>();
  for (int i = 0; i < 12; ++i) EXPECT_EQ(doubled[i], 2 * (i * 0.5f - 1.0f));
  EXPECT_TRUE(identical(iterations[2][1].second, by_name["str"]));
  EXPECT_TRUE(identical(iterations[2][2].second, by_name["scalar"]));
  EXPECT_TRUE(identical(iterations[2][3].second, by_name["empty"]));

  std::vector<NamedTensors> legacy = load_inputs_json(dir / "legacy.json");
  ASSERT_EQ(legacy.size(), 1u);
  ASSERT_EQ(legacy[0].size(), 1u);
  EXPECT_TRUE(identical(legacy[0][0].second, by_name["c64"]));
}

// Parity saves input data; Polygraphy loads it, and Polygraphy's own save_json of the same data
// gives the same text.
TEST(ArrayIoPeerTest, PolygraphyLoadsParityInputsAndWritesTheSameText) {
  REQUIRE_PYTHON(python);
  TempDir dir{"parity-array-io"};
  std::map<std::string, Tensor> by_name;
  for (auto& [name, tensor] : formula_arrays()) by_name[name] = tensor;
  const std::string tricky = "in\"put/\xc3\xa9\t\x7f\\\xf0\x9f\x98\x80 \x01";
  std::vector<NamedTensors> iterations = {
      {{"z_f32", by_name["f32"]}, {"a_i64", by_name["i64"]}, {tricky, by_name["str"]}},
      {},
      {{"c", by_name["c64"]}, {"s", by_name["scalar"]}, {"e", by_name["empty"]}, {"h", by_name["f16"]},
       {"u", by_name["u64"]}, {"b", by_name["bool"]}, {"w", by_name["wide"]}}};
  save_inputs_json(dir / "parity.json", iterations);
  std::string script = std::string(kNumpyFormulas) + R"PY(
import sys
from polygraphy.json import save_json, load_json
d = sys.argv[1]
tricky = "in\"put/\u00e9\t\x7f\\\U0001F600 \x01"
data = [
    {"z_f32": expected["f32"], "a_i64": expected["i64"], tricky: expected["str"]},
    {},
    {"c": expected["c64"], "s": expected["scalar"], "e": expected["empty"], "h": expected["f16"],
     "u": expected["u64"], "b": expected["bool"], "w": expected["wide"]},
]
loaded = load_json(f"{d}/parity.json")
if len(loaded) != len(data):
    errors.append(f"{len(loaded)} iterations")
for k, (got, want) in enumerate(zip(loaded, data)):
    if list(got) != list(want):
        errors.append(f"iteration {k} names {list(got)}")
    for name in want:
        if name in got:
            same(f"iteration {k} {name!r}", got[name], want[name])
save_json(data, f"{d}/polygraphy.json")
if open(f"{d}/polygraphy.json", "rb").read() != open(f"{d}/parity.json", "rb").read():
    errors.append("text differs from polygraphy's save_json")
print("\n".join(errors))
sys.exit(1 if errors else 0)
)PY";
  expect_python_ok(python, dir.path(), script, {dir.path().string()}, "polygraphy load_json");
  // Also byte-compare here so the failure shows where the text differs.
  if (fs::exists(dir / "polygraphy.json")) {
    std::string mine = read_bytes(dir / "parity.json"), theirs = read_bytes(dir / "polygraphy.json");
    if (mine != theirs) {
      std::size_t at = std::mismatch(mine.begin(), mine.end(), theirs.begin(), theirs.end()).first - mine.begin();
      ADD_FAILURE() << "texts differ at byte " << at << ": parity \"" << mine.substr(at > 40 ? at - 40 : 0, 120)
                    << "\" vs polygraphy \"" << theirs.substr(at > 40 ? at - 40 : 0, 120) << "\"";
    }
  } else {
    ADD_FAILURE() << "polygraphy.json was not written";
  }
}

}  // namespace
}  // namespace parity
