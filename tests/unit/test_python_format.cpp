// Python/numpy text formatting used by the comparison logs. Expectations follow Python's
// format-spec rules ('.5g': scientific when the exponent is < -4 or >= 5, trailing zeros removed),
// repr's shortest round-trip rule (fixed for exponents in [-4, 16)), and numpy's array printing
// rules (positional unless a non-zero |value| is < 1e-4, >= 10**min(8, precision of the type), or
// max/min > 1000; 8 fractional digits at most; line width 75).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "parity/core/python_format.h"
#include "parity/core/float8.h"
#include "parity/core/half.h"
#include "test_compare_helpers.h"

namespace parity::compare {
namespace {

using namespace testing;

TEST(CompareFormat, FormatGMatchesPythonSpec) {
  EXPECT_EQ(format_g(1e-5, 5), "1e-05");
  EXPECT_EQ(format_g(123456.0, 5), "1.2346e+05");  // 6 digits before the point -> scientific
  EXPECT_EQ(format_g(12345.0, 5), "12345");
  EXPECT_EQ(format_g(0.5, 5), "0.5");
  EXPECT_EQ(format_g(3.0, 5), "3");
  EXPECT_EQ(format_g(11.0 / 6.0, 5), "1.8333");
  EXPECT_EQ(format_g(0.0001, 5), "0.0001");         // exponent -4 stays fixed
  EXPECT_EQ(format_g(0.00001234, 5), "1.234e-05");  // exponent -5 -> scientific
  EXPECT_EQ(format_g(-0.0, 5), "-0");
  EXPECT_EQ(format_g(NAN, 5), "nan");
  EXPECT_EQ(format_g(-NAN, 5), "nan");  // Python never prints a NaN's sign
  EXPECT_EQ(format_g(INFINITY, 5), "inf");
  EXPECT_EQ(format_g(-INFINITY, 5), "-inf");
  EXPECT_EQ(format_g(static_cast<double>(0.6f), 3), "0.6");  // float32 0.6000000238... at 3 digits
  EXPECT_EQ(format_g(8.11e15, 3), "8.11e+15");
}

// format_g is printf's "%.*g" (Python's '.Ng' for finite values): the same text on random
// doubles of every magnitude, on values next to a rounding boundary of 5 digits, and at a
// precision whose text outgrows the fast path's buffer.
TEST(CompareFormat, FormatGIsPrintfG) {
  auto printf_g = [](double value, int precision) {
    char buffer[512];
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    return std::string(buffer);
  };
  std::mt19937_64 generator(7);
  std::uniform_real_distribution<double> exponent(-30.0, 30.0);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t bits = generator();
    double value;
    std::memcpy(&value, &bits, sizeof value);
    if (std::isfinite(value)) ASSERT_EQ(format_g(value, 1 + i % 17), printf_g(value, 1 + i % 17)) << i;
    const double rounded = std::round(std::pow(10.0, exponent(generator)) * 1e5) / 1e5;
    for (double near : {rounded, std::nextafter(rounded, 0.0), std::nextafter(rounded, 1e300), -rounded})
      ASSERT_EQ(format_g(near, 5), printf_g(near, 5)) << near;
  }
  EXPECT_EQ(format_g(1e-300, 80), printf_g(1e-300, 80));
  EXPECT_GT(format_g(1e-300, 80).size(), 64u);
}

TEST(CompareFormat, PythonFloatRepr) {
  EXPECT_EQ(python_float_repr(1e-5), "1e-05");
  EXPECT_EQ(python_float_repr(0.0001), "0.0001");
  EXPECT_EQ(python_float_repr(0.001), "0.001");
  EXPECT_EQ(python_float_repr(1e16), "1e+16");
  EXPECT_EQ(python_float_repr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(python_float_repr(100.0), "100.0");
  EXPECT_EQ(python_float_repr(0.1), "0.1");
  EXPECT_EQ(python_float_repr(2.0 / 3.0 * 100.0), "66.66666666666666");
  EXPECT_EQ(python_float_repr(2.0 / 3.0), "0.6666666666666666");
  EXPECT_EQ(python_float_repr(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(python_float_repr(1.5e-7), "1.5e-07");
  EXPECT_EQ(python_float_repr(0.0), "0.0");
  EXPECT_EQ(python_float_repr(-2.5), "-2.5");
  EXPECT_EQ(python_float_repr(1e22), "1e+22");
  EXPECT_EQ(python_float_repr(123.456), "123.456");
  EXPECT_EQ(python_float_repr(NAN), "nan");
  EXPECT_EQ(python_float_repr(-INFINITY), "-inf");
}

TEST(CompareFormat, PythonStrAndContainerRepr) {
  EXPECT_EQ(python_str_repr("y"), "'y'");
  EXPECT_EQ(python_str_repr("it's"), "\"it's\"");
  EXPECT_EQ(python_str_repr("a\\b"), "'a\\\\b'");
  EXPECT_EQ(python_str_repr("a'b\"c"), "'a\\'b\"c'");
  EXPECT_EQ(python_str_repr("tab\there"), "'tab\\there'");
  std::vector<std::string> none, two = {"y", "z"};
  EXPECT_EQ(python_list_repr(none), "[]");
  EXPECT_EQ(python_list_repr(two), "['y', 'z']");
  std::vector<int64_t> empty, one = {5}, pair = {0, 3};
  EXPECT_EQ(python_tuple_repr(empty), "()");
  EXPECT_EQ(python_tuple_repr(one), "(5,)");
  EXPECT_EQ(python_tuple_repr(pair), "(0, 3)");
}

TEST(CompareFormat, NumpyPositionalArray) {
  // Integer parts "1".."6" and "-5" -> width 2; no fractional digits -> "x." right-aligned.
  EXPECT_EQ(numpy_array_str(f32({2, 3}, {1, 2, 3, 4, -5, 6}).view()), "[[ 1.  2.  3.]\n [ 4. -5.  6.]]");
  // Fractional parts padded on the right to the longest one.
  EXPECT_EQ(numpy_array_str(f32({1.0f, 2.1f, 0.0f}).view()), "[1.  2.1 0. ]");
  // float32 shortest digits, at most 8 fractional digits.
  EXPECT_EQ(numpy_array_str(f32({1.0f / 7.0f, 1.0f}).view()), "[0.14285715 1.        ]");
}

TEST(CompareFormat, NumpyScientificArray) {
  // 1e-5 < 1e-4 -> scientific; all mantissas single digit -> "1.e-01".
  EXPECT_EQ(numpy_array_str(f32({0.1f, 1e-5f, 3.0f}).view()), "[1.e-01 1.e-05 3.e+00]");
  // Mantissa digits padded with zeros to the longest (7 here: 4.7619004e-02).
  float r = (2.1f - 2.0f) / 2.1f;  // Polygraphy's relative error for 2.0 vs 2.1: 0.047619004
  EXPECT_EQ(numpy_array_str(f32({0.0f, r, 2.7021598e16f}).view()), "[0.0000000e+00 4.7619004e-02 2.7021598e+16]");
}

TEST(CompareFormat, NumpyNonFiniteAndSpecialArrays) {
  // Finite part "1.5" (pad 1+1); "-inf" needs 4 columns -> pad_left grows to 2.
  EXPECT_EQ(numpy_array_str(f32({NAN, 1.5f, -INFINITY}).view()), "[ nan  1.5 -inf]");
  EXPECT_EQ(numpy_array_str(boolean({true, false}).view()), "[ True False]");
  EXPECT_EQ(numpy_array_str(ints<int8_t>(DType::kInt8, {1, -2}).view()), "[ 1 -2]");
  EXPECT_EQ(numpy_array_str(f32(Shape{}, {3.5f}).view()), "3.5");
  EXPECT_EQ(numpy_array_str(f32(Shape{0}, {}).view()), "[]");
  // float16 uses half-precision shortest digits: 1/3 -> 0.33325195 prints "0.3333".
  EXPECT_EQ(numpy_array_str(f16({1.0f / 3.0f, 2.0f / 3.0f}).view()), "[0.3333 0.6665]");
}

TEST(CompareFormat, NumpyThreeDimensionalArrayHasBlankLineBetweenBlocks) {
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i);
  Tensor t = Tensor::from_bytes(DType::kFloat32, Shape{2, 2, 3}, v.data(), v.size() * 4);
  EXPECT_EQ(numpy_array_str(t.view()), "[[[ 0.  1.  2.]\n  [ 3.  4.  5.]]\n\n [[ 6.  7.  8.]\n  [ 9. 10. 11.]]]");
}

TEST(CompareFormat, NumpyWrapsLinesAt75Columns) {
  // 40 five-digit-wide ints: "[" + 12 * "xxxxx " fits in 74 columns, a 13th would not.
  std::vector<int64_t> v(40);
  for (int i = 0; i < 40; ++i) v[static_cast<std::size_t>(i)] = i * 1000;
  Tensor t = Tensor::from_bytes(DType::kInt64, Shape{40}, v.data(), v.size() * 8);
  std::string want =
      "[    0  1000  2000  3000  4000  5000  6000  7000  8000  9000 10000 11000\n"
      " 12000 13000 14000 15000 16000 17000 18000 19000 20000 21000 22000 23000\n"
      " 24000 25000 26000 27000 28000 29000 30000 31000 32000 33000 34000 35000\n"
      " 36000 37000 38000 39000]";
  EXPECT_EQ(numpy_array_str(t.view()), want);
}

TEST(CompareFormat, NumpySummarisesAbove1000Elements) {
  std::vector<int32_t> v(2000, 7);
  Tensor t = Tensor::from_bytes(DType::kInt32, Shape{2000}, v.data(), v.size() * 4);
  EXPECT_EQ(numpy_array_str(t.view()), "[7 7 7 ... 7 7 7]");
}

// ml_dtypes' arrays (bfloat16 here) and object arrays: items as they are, no common width, the same
// wrapping and summarising as numpy's own types. Expected texts are numpy 2.4's str() of
// np.arange(40).astype(ml_dtypes.bfloat16), np.array(['a', "b'c"], dtype=object).reshape(2, 1), and
// np.arange(1200).astype(bfloat16).reshape(2, 600).
TEST(CompareFormat, NumpyArrayOfElementsLaysOutUnpaddedItems) {
  auto integer = [](int64_t i) { return std::to_string(i); };
  EXPECT_EQ(numpy_array_str_of_elements({40}, integer),
            "[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27\n"
            " 28 29 30 31 32 33 34 35 36 37 38 39]");
  std::vector<std::string> texts = {"'a'", "\"b'c\""};
  EXPECT_EQ(numpy_array_str_of_elements({2, 1}, [&](int64_t i) { return texts[static_cast<std::size_t>(i)]; }),
            "[['a']\n [\"b'c\"]]");
  auto bfloat16_text = [](int64_t i) {
    return fmt::format("{:g}", bfloat16_bits_to_float(double_to_bfloat16_bits(static_cast<double>(i))));
  };
  EXPECT_EQ(numpy_array_str_of_elements({2, 600}, bfloat16_text),
            "[[0 1 2 ... 596 600 600]\n [600 600 600 ... 1200 1200 1200]]");
  EXPECT_EQ(numpy_array_str_of_elements({}, integer), "0");
  EXPECT_EQ(numpy_array_str_of_elements({0, 3}, integer), "[]");
}

}  // namespace
}  // namespace parity::compare
