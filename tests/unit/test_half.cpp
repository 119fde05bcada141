// float16 / bfloat16 conversions, checked exhaustively over all 65536 bit patterns against
// independent oracles: the compiler's _Float16 (hardware/libgcc IEEE conversion) for float16 and
// an exact nearest-even search in double arithmetic for bfloat16.
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include <gtest/gtest.h>

#include "parity/core/half.h"

namespace parity {
namespace {

bool same_float(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

// float16 value of bits, from its definition: (-1)^s * 2^(e-15) * 1.m, or 2^-14 * 0.m for e=0.
double float16_reference(uint16_t bits) {
  int sign = bits >> 15, exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  double magnitude;
  if (exponent == 0x1f) magnitude = mantissa ? NAN : INFINITY;
  else if (exponent == 0) magnitude = std::ldexp(mantissa, -24);
  else magnitude = std::ldexp(1024 + mantissa, exponent - 25);
  return sign ? -magnitude : magnitude;
}

TEST(Float16, DecodesEveryBitPatternExactly) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    float got = float16_bits_to_float(static_cast<uint16_t>(bits));
    double want = float16_reference(static_cast<uint16_t>(bits));
    ASSERT_TRUE(same_float(got, static_cast<float>(want)) ||
                (want == 0 && got == 0 && std::signbit(got) == std::signbit(want)))
        << "bits 0x" << std::hex << bits;
    if (std::isnan(want)) ASSERT_TRUE(std::isnan(got));
  }
}

TEST(Float16, RoundTripsEveryBitPattern) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    float f = float16_bits_to_float(static_cast<uint16_t>(bits));
    uint16_t back = float_to_float16_bits(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(float16_bits_to_float(back))) << std::hex << bits;
      ASSERT_EQ(back & 0x8000, bits & 0x8000) << "NaN sign lost for 0x" << std::hex << bits;
    } else {
      ASSERT_EQ(back, bits) << "bits 0x" << std::hex << bits;
    }
  }
}

TEST(Float16, RoundsLikeTheCompilersFloat16) {
  auto check = [](float f) {
    uint16_t want = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
    uint16_t got = float_to_float16_bits(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(float16_bits_to_float(got)));
    } else {
      ASSERT_EQ(got, want) << "float " << f << " (0x" << std::hex << std::bit_cast<uint32_t>(f) << ")";
    }
  };
  // Every float16 value, and the exact midpoints and near-midpoints between neighbours: where
  // rounding to nearest even matters.
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {
    for (int sign = 0; sign < 2; ++sign) {
      uint16_t b = static_cast<uint16_t>(bits | (sign << 15));
      double lo = float16_reference(b), hi = float16_reference(static_cast<uint16_t>(b + 1));
      double mid = (lo + hi) / 2;
      float m = static_cast<float>(mid);
      check(m);
      check(std::nextafter(m, 0.0f));
      check(std::nextafter(m, INFINITY));
      check(std::nextafter(m, -INFINITY));
    }
  }
  // Overflow, underflow, specials and a random sample of all floats.
  for (float f : {65504.0f, 65519.99f, 65520.0f, 1e10f, -1e10f, 1e-8f, 2.98e-8f, 2.99e-8f, 5.96e-8f,
                  0.0f, -0.0f, INFINITY, -INFINITY, NAN, std::numeric_limits<float>::denorm_min()})
    check(f);
  std::mt19937 rng(1234);
  for (int i = 0; i < 2000000; ++i) check(std::bit_cast<float>(static_cast<uint32_t>(rng())));
}

// Nearest bfloat16 by exhaustive comparison of the two candidates around f, ties to even.
uint16_t bfloat16_reference(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  uint16_t down = static_cast<uint16_t>(bits >> 16);
  uint16_t up = static_cast<uint16_t>(down + 1);
  double d = std::fabs(static_cast<double>(f) - bfloat16_bits_to_float(down));
  float up_value = bfloat16_bits_to_float(up);
  double u = std::isinf(up_value) ? std::ldexp(1.0, 128) - std::fabs(static_cast<double>(f)) :
                                     std::fabs(static_cast<double>(up_value) - f);
  if (std::isinf(up_value)) {
    // Rounding up overflows to infinity: compare against the halfway point to 2^128.
    if (d < u) return down;
    if (d > u) return up;
    return (down & 1) ? up : down;
  }
  if (d < u) return down;
  if (d > u) return up;
  return (down & 1) ? up : down;
}

TEST(BFloat16, RoundTripsEveryBitPattern) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    float f = bfloat16_bits_to_float(static_cast<uint16_t>(bits));
    uint16_t back = float_to_bfloat16_bits(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(bfloat16_bits_to_float(back))) << std::hex << bits;
      ASSERT_EQ(back & 0x8000, bits & 0x8000);
    } else {
      ASSERT_EQ(back, bits) << "bits 0x" << std::hex << bits;
    }
  }
}

TEST(BFloat16, RoundsToNearestEven) {
  auto check = [](float f) {
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(bfloat16_bits_to_float(float_to_bfloat16_bits(f))));
      return;
    }
    ASSERT_EQ(float_to_bfloat16_bits(f), bfloat16_reference(f))
        << "float " << f << " (0x" << std::hex << std::bit_cast<uint32_t>(f) << ")";
  };
  for (uint32_t bits = 0; bits < 65536; ++bits) {  // every pattern's midpoint and neighbours
    uint32_t base = bits << 16;
    for (uint32_t low : {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) check(std::bit_cast<float>(base | low));
  }
  std::mt19937 rng(99);
  for (int i = 0; i < 2000000; ++i) check(std::bit_cast<float>(static_cast<uint32_t>(rng())));
}

TEST(BFloat16, NaNStaysQuietNaNEvenWhenRoundingWouldCarry) {
  // 0x7fffffff would round to 0x8000 (negative zero) with a naive carry.
  EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(float_to_bfloat16_bits(std::bit_cast<float>(0x7fffffffu)))));
  EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(float_to_bfloat16_bits(std::bit_cast<float>(0x7f800001u)))));
}

// double -> float16 / bfloat16 must round once. Doubles just above a midpoint between two
// neighbours round up, but the nearest float to them is the midpoint itself, which a
// double -> float -> half path rounds to even (down half the time). Checked against the compiler's
// direct double -> _Float16 conversion, and for bfloat16 against the side of the midpoint.
TEST(Float16, FromDoubleRoundsOnceLikeTheCompiler) {
  auto check = [](double d) {
    uint16_t want = std::bit_cast<uint16_t>(static_cast<_Float16>(d));
    ASSERT_EQ(Float16::from_double(d).bits, want) << "double " << d;
  };
  int double_rounding_cases = 0;
  for (uint32_t bits = 0; bits < 0x7bff; ++bits) {
    double lo = float16_reference(static_cast<uint16_t>(bits));
    double hi = float16_reference(static_cast<uint16_t>(bits + 1));
    double mid = (lo + hi) / 2;
    for (double d : {mid, mid * (1 + 0x1p-40), mid * (1 - 0x1p-40), -mid * (1 + 0x1p-40), mid + 0x1p-60}) {
      check(d);
      if (float16_bits_to_float(float_to_float16_bits(static_cast<float>(d))) !=
          static_cast<float>(float16_reference(std::bit_cast<uint16_t>(static_cast<_Float16>(d)))))
        ++double_rounding_cases;
    }
  }
  // The cases above do exercise the difference (else this test could not fail on the old path).
  EXPECT_GT(double_rounding_cases, 1000);
  for (double d : {65504.0, 65519.999, 65520.0, 1e300, -1e300, 1e-300, 0.0, -0.0, double(INFINITY),
                   -double(INFINITY), 0x1p-25, 0x1p-25 * (1 + 0x1p-40), 3.4028235677973366e38})
    check(d);
  EXPECT_TRUE(std::isnan(float16_bits_to_float(Float16::from_double(NAN).bits)));
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> exponent(-26, 17);
  for (int i = 0; i < 1000000; ++i) {
    double d = std::ldexp(1.0 + std::ldexp(static_cast<double>(rng() >> 11), -53), static_cast<int>(exponent(rng)));
    check(rng() & 1 ? d : -d);
  }
}

TEST(BFloat16, FromDoubleRoundsOnce) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint16_t low = static_cast<uint16_t>(rng() & 0x7f7e);  // finite, below the largest value
    double lo = bfloat16_bits_to_float(low), hi = bfloat16_bits_to_float(static_cast<uint16_t>(low + 1));
    double mid = (lo + hi) / 2;
    if (lo == 0) continue;
    EXPECT_EQ(BFloat16::from_double(mid + (hi - lo) * 0x1p-30).bits, low + 1) << lo;  // above: up
    EXPECT_EQ(BFloat16::from_double(mid - (hi - lo) * 0x1p-30).bits, low) << lo;      // below: down
    EXPECT_EQ(BFloat16::from_double(mid).bits, (low & 1) ? low + 1 : low) << lo;      // tie: even
  }
  EXPECT_EQ(BFloat16::from_double(1e300).bits, 0x7f80);
  EXPECT_EQ(BFloat16::from_double(-1e300).bits, 0xff80);
}

}  // namespace
}  // namespace parity
