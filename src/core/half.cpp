#include "parity/core/half.h"

#include <cmath>
#include <cstring>

namespace parity {

uint16_t float_to_float16_bits(float value) {
  uint32_t f = std::bit_cast<uint32_t>(value);
  uint32_t sign = (f >> 16) & 0x8000u;
  uint32_t exponent = (f >> 23) & 0xffu;
  uint32_t mantissa = f & 0x7fffffu;

  if (exponent == 0xff) {  // Inf or NaN (NaN stays quiet NaN, keeps top payload bits)
    if (mantissa == 0) return static_cast<uint16_t>(sign | 0x7c00u);
    return static_cast<uint16_t>(sign | 0x7e00u | (mantissa >> 13));
  }
  int32_t e = static_cast<int32_t>(exponent) - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> Inf
  if (e <= 0) {
    // Subnormal half (or zero). Value = 1.mantissa * 2^(exponent-127); shift the 24-bit
    // significand so its units are 2^-24 (the half subnormal step), rounding to nearest even.
    if (e < -10) return static_cast<uint16_t>(sign);  // below half of the smallest subnormal
    uint32_t significand = mantissa | 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);  // 14..24
    uint32_t half_mantissa = significand >> shift;
    uint32_t remainder = significand & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (half_mantissa & 1u))) ++half_mantissa;
    return static_cast<uint16_t>(sign | half_mantissa);  // a carry into the exponent is correct
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  uint32_t remainder = mantissa & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u))) ++half;  // may carry to Inf
  return static_cast<uint16_t>(half);
}

float float16_bits_to_float(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t f;
  if (exponent == 0x1f) {
    f = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    f = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    f = sign;
  } else {  // subnormal: normalize
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    f = sign | (static_cast<uint32_t>(127 - 15 + 1 - shift) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(f);
}

uint16_t float_to_bfloat16_bits(float value) {
  uint32_t f = std::bit_cast<uint32_t>(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep sign, force quiet
    return static_cast<uint16_t>((f >> 16) | 0x0040u);
  }
  uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
  return static_cast<uint16_t>((f + rounding) >> 16);
}

float double_to_float_round_to_odd(double value) {
  float nearest = static_cast<float>(value);
  if (std::isnan(value) || static_cast<double>(nearest) == value) return nearest;
  // Inexact (an overflow to infinity included): the float toward zero, with the sticky bit set.
  float toward_zero =
      std::fabs(static_cast<double>(nearest)) > std::fabs(value) ? std::nextafter(nearest, 0.0f) : nearest;
  return std::bit_cast<float>(std::bit_cast<uint32_t>(toward_zero) | 1u);
}

}  // namespace parity
