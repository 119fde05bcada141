// float8 / float4 / float6 / E8M0 conversions (parity/core/float8.h), checked exhaustively over
// every bit pattern against oracles written here from the formats' definitions:
//   - decoding: (-1)^s * 2^(1-bias) * 0.m for a zero exponent field, (-1)^s * 2^(e-bias) * 1.m
//     otherwise (ldexp), with each format's NaN / Inf patterns listed by hand;
//   - encoding: a brute-force search for the nearest representable value over all codes (ties
//     to the code with an even mantissa), plus one virtual value one unit above the largest
//     finite value standing for "rounds past the top" (overflow).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "parity/core/error.h"
#include "parity/core/float8.h"
#include "parity/core/half.h"

namespace parity {
namespace {

// The formats, written down independently of the implementation.
struct Spec {
  DType dtype;
  const char* name;
  int e, m, bias;
  double max;          // largest finite value
  bool fnuz;           // no -0, 0x80 is the only NaN
  bool ieee;           // all-ones exponent: Inf (mantissa 0) / NaN
  bool all_ones_nan;   // S.1111.111 is NaN (E4M3FN)
  bool no_specials;    // float4 / float6: no NaN, no Inf
};

const std::vector<Spec>& specs() {
  static const std::vector<Spec> all = {
      {DType::kFloat8E4M3FN, "E4M3FN", 4, 3, 7, 448.0, false, false, true, false},
      {DType::kFloat8E4M3FNUZ, "E4M3FNUZ", 4, 3, 8, 240.0, true, false, false, false},
      {DType::kFloat8E5M2, "E5M2", 5, 2, 15, 57344.0, false, true, false, false},
      {DType::kFloat8E5M2FNUZ, "E5M2FNUZ", 5, 2, 16, 57344.0, true, false, false, false},
      {DType::kFloat4E2M1, "E2M1", 2, 1, 1, 6.0, false, false, false, true},
      {DType::kFloat6E2M3, "E2M3", 2, 3, 1, 7.5, false, false, false, true},
      {DType::kFloat6E3M2, "E3M2", 3, 2, 3, 28.0, false, false, false, true},
  };
  return all;
}

int bits_of(const Spec& s) { return 1 + s.e + s.m; }
uint32_t codes_of(const Spec& s) { return 1u << bits_of(s); }
uint32_t sign_bit(const Spec& s) { return 1u << (s.e + s.m); }

bool ref_is_nan(const Spec& s, uint32_t code) {
  uint32_t exponent = (code >> s.m) & ((1u << s.e) - 1), mantissa = code & ((1u << s.m) - 1);
  if (s.fnuz) return code == sign_bit(s);
  if (s.ieee) return exponent == (1u << s.e) - 1 && mantissa != 0;
  if (s.all_ones_nan) return exponent == (1u << s.e) - 1 && mantissa == (1u << s.m) - 1;
  return false;
}

bool ref_is_inf(const Spec& s, uint32_t code) {
  uint32_t exponent = (code >> s.m) & ((1u << s.e) - 1), mantissa = code & ((1u << s.m) - 1);
  return s.ieee && exponent == (1u << s.e) - 1 && mantissa == 0;
}

double ref_decode(const Spec& s, uint32_t code) {
  if (ref_is_nan(s, code)) return std::numeric_limits<double>::quiet_NaN();
  bool negative = (code & sign_bit(s)) != 0;
  if (ref_is_inf(s, code)) return negative ? -INFINITY : INFINITY;
  int exponent = static_cast<int>((code >> s.m) & ((1u << s.e) - 1));
  int mantissa = static_cast<int>(code & ((1u << s.m) - 1));
  double magnitude = exponent == 0 ? std::ldexp(mantissa / std::ldexp(1.0, s.m), 1 - s.bias)
                                   : std::ldexp(1.0 + mantissa / std::ldexp(1.0, s.m), exponent - s.bias);
  return negative ? -magnitude : magnitude;
}

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// The expected encoding of x by brute force. Returns the code, or -1 for "overflow" (the
// caller then expects saturation / Inf / NaN depending on the mode).
int64_t ref_nearest(const Spec& s, double x) {
  const double magnitude = std::fabs(x);
  // Candidates: non-negative finite codes plus the virtual "one unit above max".
  double best_distance = INFINITY;
  int64_t best = -2;
  bool best_even = false;
  uint32_t max_code = 0;
  for (uint32_t code = 0; code < sign_bit(s); ++code) {
    double v = ref_decode(s, code);
    if (std::isnan(v) || std::isinf(v)) continue;
    if (v == s.max) max_code = code;
    double distance = std::fabs(v - magnitude);
    bool even = (code & 1u) == 0;
    if (distance < best_distance || (distance == best_distance && even && !best_even)) {
      best_distance = distance, best = code, best_even = even;
    }
  }
  double unit_at_max = std::ldexp(1.0, static_cast<int>(std::floor(std::log2(s.max))) - s.m);
  double above = s.max + unit_at_max;
  bool above_even = (max_code & 1u) != 0;  // the next mantissa after max flips the last bit
  if (magnitude >= above) return -1;
  double distance = std::fabs(above - magnitude);
  if (distance < best_distance || (distance == best_distance && above_even && !best_even)) return -1;
  return best;
}

uint32_t expected_encoding(const Spec& s, double x, bool saturate) {
  bool negative = std::signbit(x);
  uint32_t sign = negative ? sign_bit(s) : 0u;
  uint32_t max_code = 0;
  for (uint32_t code = 0; code < sign_bit(s); ++code)
    if (ref_decode(s, code) == s.max) max_code = code;
  auto overflow = [&]() -> uint32_t {
    if (saturate || s.no_specials) return sign | max_code;
    if (s.fnuz) return sign_bit(s);
    if (s.ieee) return sign | (((1u << s.e) - 1) << s.m);                   // Inf
    return sign | (((1u << s.e) - 1) << s.m) | ((1u << s.m) - 1);           // E4M3FN NaN
  };
  if (std::isinf(x)) return overflow();
  int64_t code = ref_nearest(s, x);
  if (code < 0) return overflow();
  if (code == 0) return (s.fnuz || !negative) ? 0u : sign_bit(s);
  return sign | static_cast<uint32_t>(code);
}

TEST(MiniFloat, FormatsMatchTheirDefinitions) {
  for (const auto& s : specs()) {
    const auto& f = minifloat_format(s.dtype);
    EXPECT_EQ(f.exponent_bits, s.e) << s.name;
    EXPECT_EQ(f.mantissa_bits, s.m) << s.name;
    EXPECT_EQ(f.max_finite(), s.max) << s.name;
    EXPECT_TRUE(is_minifloat(s.dtype));
  }
  EXPECT_FALSE(is_minifloat(DType::kFloat8E8M0));
  EXPECT_FALSE(is_minifloat(DType::kFloat32));
}

TEST(MiniFloat, DecodesEveryCode) {
  for (const auto& s : specs()) {
    for (uint32_t code = 0; code < codes_of(s); ++code) {
      double want = ref_decode(s, code);
      double got = minifloat_decode(code, minifloat_format(s.dtype));
      ASSERT_TRUE(same_value(got, want)) << s.name << " code 0x" << std::hex << code << ": " << got << " vs " << want;
      float got_float = minifloat_to_float(static_cast<uint8_t>(code), s.dtype);
      ASSERT_TRUE(same_value(got_float, want)) << s.name << " code 0x" << std::hex << code;
    }
  }
}

TEST(MiniFloat, EveryValueRoundTrips) {
  for (const auto& s : specs()) {
    for (uint32_t code = 0; code < codes_of(s); ++code) {
      double v = ref_decode(s, code);
      if (std::isnan(v)) continue;
      for (bool saturate : {true, false}) {
        uint32_t got = float_to_minifloat(v, s.dtype, saturate);
        uint32_t want = code;
        if (std::isinf(v) && saturate) want = (code & sign_bit(s)) | minifloat_format(s.dtype).max_finite_bits();
        ASSERT_EQ(got, want) << s.name << " code 0x" << std::hex << code << " saturate " << saturate;
      }
    }
  }
}

TEST(MiniFloat, RoundsToNearestEvenAgainstBruteForce) {
  std::mt19937_64 rng(1234);
  for (const auto& s : specs()) {
    // Every finite non-negative value, sorted, plus the overflow step above the max.
    std::vector<double> values;
    for (uint32_t code = 0; code < sign_bit(s); ++code) {
      double v = ref_decode(s, code);
      if (std::isfinite(v)) values.push_back(v);
    }
    std::sort(values.begin(), values.end());
    std::vector<double> probes;
    for (std::size_t i = 0; i + 1 < values.size(); ++i) {
      double mid = (values[i] + values[i + 1]) / 2;  // exact tie
      probes.insert(probes.end(), {mid, std::nextafter(mid, 0.0), std::nextafter(mid, INFINITY), values[i],
                                   (values[i] * 3 + values[i + 1]) / 4});
    }
    double top = values.back();
    double unit = std::ldexp(1.0, static_cast<int>(std::floor(std::log2(top))) - s.m);
    for (double k : {0.25, 0.5, 0.75, 1.0, 1.5, 3.0, 1e6})
      probes.push_back(top + k * unit);
    probes.push_back(std::nextafter(top + unit / 2, 0.0));
    probes.push_back(std::nextafter(top + unit / 2, INFINITY));
    probes.push_back(values[1] / 2);                       // half the smallest subnormal: tie to 0
    probes.push_back(std::nextafter(values[1] / 2, 1.0));  // just above: the smallest subnormal
    probes.push_back(values[1] / 3);
    probes.push_back(1e-300);
    probes.push_back(std::numeric_limits<double>::denorm_min());
    probes.push_back(1e300);
    std::uniform_real_distribution<double> log_magnitude(std::log2(values[1]) - 4, std::log2(top) + 3);
    for (int i = 0; i < 4000; ++i) probes.push_back(std::exp2(log_magnitude(rng)));
    for (double p : probes) {
      for (double x : {p, -p}) {
        for (bool saturate : {true, false}) {
          uint32_t want = expected_encoding(s, x, saturate);
          uint32_t got = float_to_minifloat(x, s.dtype, saturate);
          ASSERT_EQ(got, want) << s.name << " x=" << x << " saturate " << saturate;
        }
      }
    }
  }
}

TEST(MiniFloat, SpecialValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // ONNX Cast tables: saturate -> +/- max for Inf; no saturate -> NaN / Inf.
  EXPECT_EQ(float_to_minifloat(INFINITY, DType::kFloat8E4M3FN, true), 0x7E);
  EXPECT_EQ(float_to_minifloat(-INFINITY, DType::kFloat8E4M3FN, true), 0xFE);
  EXPECT_EQ(float_to_minifloat(INFINITY, DType::kFloat8E4M3FN, false), 0x7F);
  EXPECT_EQ(float_to_minifloat(-INFINITY, DType::kFloat8E4M3FN, false), 0xFF);
  EXPECT_EQ(float_to_minifloat(INFINITY, DType::kFloat8E4M3FNUZ, true), 0x7F);
  EXPECT_EQ(float_to_minifloat(-INFINITY, DType::kFloat8E4M3FNUZ, false), 0x80);
  EXPECT_EQ(float_to_minifloat(INFINITY, DType::kFloat8E5M2, false), 0x7C);
  EXPECT_EQ(float_to_minifloat(-INFINITY, DType::kFloat8E5M2, false), 0xFC);
  EXPECT_EQ(float_to_minifloat(INFINITY, DType::kFloat8E5M2, true), 0x7B);
  EXPECT_EQ(float_to_minifloat(INFINITY, DType::kFloat8E5M2FNUZ, false), 0x80);
  EXPECT_EQ(float_to_minifloat(1e6, DType::kFloat8E5M2FNUZ, true), 0x7F);
  EXPECT_EQ(float_to_minifloat(INFINITY, DType::kFloat4E2M1, false), 0x7);  // no Inf: saturates
  EXPECT_EQ(float_to_minifloat(-1e9, DType::kFloat4E2M1, false), 0xF);
  // NaN
  for (bool saturate : {true, false}) {
    EXPECT_EQ(float_to_minifloat(nan, DType::kFloat8E4M3FN, saturate), 0x7F);
    EXPECT_EQ(float_to_minifloat(-nan, DType::kFloat8E4M3FN, saturate), 0xFF);
    EXPECT_EQ(float_to_minifloat(nan, DType::kFloat8E4M3FNUZ, saturate), 0x80);
    EXPECT_EQ(float_to_minifloat(nan, DType::kFloat8E5M2FNUZ, saturate), 0x80);
    uint8_t e5m2 = float_to_minifloat(nan, DType::kFloat8E5M2, saturate);
    EXPECT_TRUE((e5m2 & 0x7C) == 0x7C && (e5m2 & 0x3) != 0);
    EXPECT_EQ(float_to_minifloat(nan, DType::kFloat4E2M1, saturate), 0x8);
  }
  // Signed zeros: -0 kept except in FNUZ formats; negative underflow too.
  EXPECT_EQ(float_to_minifloat(-0.0, DType::kFloat8E4M3FN, true), 0x80);
  EXPECT_EQ(float_to_minifloat(-0.0, DType::kFloat8E4M3FNUZ, true), 0x00);
  EXPECT_EQ(float_to_minifloat(-1e-7, DType::kFloat8E5M2FNUZ, true), 0x00);
  EXPECT_EQ(float_to_minifloat(-1e-7, DType::kFloat8E5M2, true), 0x80);
  // E4M3FN: 464 is the tie between 448 (mantissa 110, even) and 480 (past the top).
  EXPECT_EQ(float_to_minifloat(464.0, DType::kFloat8E4M3FN, false), 0x7E);
  EXPECT_EQ(float_to_minifloat(464.0001, DType::kFloat8E4M3FN, false), 0x7F);
  // E5M2: 61440 ties between 57344 (odd) and 65536: rounds up, past the top.
  EXPECT_EQ(float_to_minifloat(61440.0, DType::kFloat8E5M2, false), 0x7C);
  EXPECT_EQ(float_to_minifloat(61439.0, DType::kFloat8E5M2, false), 0x7B);
}

TEST(E8M0, DecodesEveryCode) {
  for (uint32_t code = 0; code < 255; ++code) {
    double want = std::ldexp(1.0, static_cast<int>(code) - 127);
    ASSERT_EQ(static_cast<double>(e8m0_to_float(static_cast<uint8_t>(code))), want) << code;
  }
  EXPECT_TRUE(std::isnan(e8m0_to_float(0xFF)));
}

TEST(E8M0, RoundTripsAndRounds) {
  const E8M0Rounding modes[] = {E8M0Rounding::kUp, E8M0Rounding::kDown, E8M0Rounding::kNearest};
  for (int code = 0; code < 255; ++code) {
    double power = std::ldexp(1.0, code - 127);
    for (auto mode : modes)
      for (bool saturate : {true, false}) ASSERT_EQ(float_to_e8m0(power, saturate, mode), code);
    if (code == 254) continue;
    // Between 2^e and 2^(e+1): up -> e+1, down -> e, nearest by the linear midpoint 1.5 * 2^e.
    for (double f : {1.0 + 1e-9, 1.25, 1.5 - 1e-9, 1.5, 1.75, 2.0 - 1e-9}) {
      double x = power * f;
      ASSERT_EQ(float_to_e8m0(x, true, E8M0Rounding::kUp), code + 1) << code << " " << f;
      ASSERT_EQ(float_to_e8m0(x, true, E8M0Rounding::kDown), code) << code << " " << f;
      ASSERT_EQ(float_to_e8m0(x, true, E8M0Rounding::kNearest), f >= 1.5 ? code + 1 : code) << code << " " << f;
      ASSERT_EQ(float_to_e8m0(-x, true, E8M0Rounding::kDown), code);  // sign ignored
    }
  }
  // Ends of the range.
  const double top = std::ldexp(1.0, 127), bottom = std::ldexp(1.0, -127);
  EXPECT_EQ(float_to_e8m0(top * 1.5, true, E8M0Rounding::kUp), 0xFE);
  EXPECT_EQ(float_to_e8m0(top * 1.5, false, E8M0Rounding::kUp), 0xFF);
  EXPECT_EQ(float_to_e8m0(top * 1.5, false, E8M0Rounding::kDown), 0xFE);
  EXPECT_EQ(float_to_e8m0(top * 4, true, E8M0Rounding::kDown), 0xFE);
  EXPECT_EQ(float_to_e8m0(top * 4, false, E8M0Rounding::kDown), 0xFF);
  EXPECT_EQ(float_to_e8m0(bottom / 2, true, E8M0Rounding::kDown), 0x00);
  EXPECT_EQ(float_to_e8m0(bottom / 2, false, E8M0Rounding::kDown), 0xFF);
  EXPECT_EQ(float_to_e8m0(bottom * 0.75, false, E8M0Rounding::kUp), 0x00);
  EXPECT_EQ(float_to_e8m0(bottom * 0.75, false, E8M0Rounding::kNearest), 0x00);
  EXPECT_EQ(float_to_e8m0(bottom * 0.7, false, E8M0Rounding::kNearest), 0xFF);
  // Specials (ONNX Cast table: saturate+up / non-saturate+nearest).
  EXPECT_EQ(float_to_e8m0(0.0, true, E8M0Rounding::kUp), 0x00);
  EXPECT_EQ(float_to_e8m0(0.0, false, E8M0Rounding::kNearest), 0xFF);
  EXPECT_EQ(float_to_e8m0(INFINITY, true, E8M0Rounding::kUp), 0xFE);
  EXPECT_EQ(float_to_e8m0(INFINITY, false, E8M0Rounding::kNearest), 0xFF);
  EXPECT_EQ(float_to_e8m0(NAN, true, E8M0Rounding::kUp), 0xFF);
  EXPECT_EQ(e8m0_rounding_from_string("nearest"), E8M0Rounding::kNearest);
  EXPECT_THROW(e8m0_rounding_from_string("sideways"), Error);
}

// double -> float16 must round once: the compiler's _Float16 conversion is the oracle.
TEST(DoubleToHalf, MatchesCompilerConversion) {
  std::mt19937_64 rng(99);
  std::vector<double> probes;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    double v = float16_bits_to_float(static_cast<uint16_t>(bits));
    if (!std::isfinite(v)) continue;
    probes.push_back(v);
    double next = float16_bits_to_float(static_cast<uint16_t>(bits + 1));
    if (std::isfinite(next) && (bits & 0x7fff) != 0x7bff) {
      double mid = (v + next) / 2;
      probes.insert(probes.end(),
                    {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e300), std::nextafter(mid, -1e300)});
    }
  }
  std::uniform_int_distribution<uint64_t> any;
  for (int i = 0; i < 200000; ++i) {
    double d = std::bit_cast<double>(any(rng));
    int unused_exponent = 0;
    if (std::isfinite(d))
      probes.push_back(std::ldexp(std::frexp(d, &unused_exponent), static_cast<int>(any(rng) % 60) - 40));
  }
  probes.push_back(INFINITY);
  probes.push_back(-INFINITY);
  probes.push_back(65520.0);  // tie between 65504 and the overflow step: Inf
  probes.push_back(std::nextafter(65520.0, 0.0));
  for (double d : probes) {
    auto want = std::bit_cast<uint16_t>(static_cast<_Float16>(d));
    ASSERT_EQ(double_to_float16_bits(d), want) << d;
  }
  // The case float rounding breaks: 1 + 2^-11 + 2^-40 rounds to float as the exact tie 1 + 2^-11.
  EXPECT_EQ(double_to_float16_bits(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)), 0x3C01);
  EXPECT_TRUE(std::isnan(float16_bits_to_float(double_to_float16_bits(NAN))));
}

// double -> bfloat16 must round once: compared with a nearest-even search over the two
// neighbouring bfloat16 values of the truncated pattern.
TEST(DoubleToBFloat16, RoundsOnce) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> any;
  for (int i = 0; i < 200000; ++i) {
    double d = std::bit_cast<double>(any(rng));
    if (!std::isfinite(d) || std::fabs(d) > 1e38 || std::fabs(d) < 1e-37) continue;
    // Neighbours: truncate the float-truncated value to bfloat16, and the next one up.
    float toward_zero = static_cast<float>(d);
    if (std::fabs(static_cast<double>(toward_zero)) > std::fabs(d)) toward_zero = std::nextafter(toward_zero, 0.0f);
    uint16_t low = static_cast<uint16_t>(std::bit_cast<uint32_t>(toward_zero) >> 16);
    uint16_t high = static_cast<uint16_t>(low + 1);
    double lv = bfloat16_bits_to_float(low), hv = bfloat16_bits_to_float(high);
    double dl = std::fabs(d - lv), dh = std::fabs(hv - d);
    uint16_t want = dl < dh ? low : dh < dl ? high : ((low & 1) ? high : low);
    ASSERT_EQ(double_to_bfloat16_bits(d), want) << d;
  }
  EXPECT_EQ(double_to_bfloat16_bits(1e39), 0x7F80);
  EXPECT_EQ(double_to_bfloat16_bits(-1e39), 0xFF80);
  EXPECT_EQ(double_to_bfloat16_bits(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)), 0x3F81);
}

}  // namespace
}  // namespace parity
