// Tests for .npy files: every numpy dtype, header versions and layouts, byte order, Fortran
// order, and malformed or corrupted files.
#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "../../src/core/array_io_detail.h"
#include "test_array_io_helpers.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/tensor.h"
#include "parity/core/half.h"

namespace parity {
namespace {

using namespace array_io_testing;

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
    std::string dict =
        std::string("{'descr': '") + (big ? ">" : "<") + "i2', 'fortran_order': True, 'shape': (2, 3, 4), }";
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
       npy_file("{'descr': '|u1', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904), }",
                "xx"),
       "truncated"},
      {"huge strings", npy_file("{'descr': '<U1000000', 'fortran_order': False, 'shape': (1000000,), }", "abcd"),
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

}  // namespace
}  // namespace parity
