// Exact float16 (IEEE binary16) and bfloat16 conversions: round to nearest, ties to even; NaN
// stays NaN (quiet), infinities and signed zeros are kept, denormals are handled exactly.
#pragma once

#include <bit>
#include <cstdint>

namespace parity {

uint16_t float_to_float16_bits(float value);
float float16_bits_to_float(uint16_t bits);

uint16_t float_to_bfloat16_bits(float value);

// The double rounded to float "to odd": the nearest float toward zero, its last mantissa bit set
// when the conversion is inexact. Rounding that float to nearest-even in a format with at least two
// fewer mantissa bits (float16, bfloat16) gives what rounding the double directly would, so a
// double reaches float16/bfloat16 with one rounding, not two.
float double_to_float_round_to_odd(double value);
inline uint16_t double_to_float16_bits(double value) {
  return float_to_float16_bits(double_to_float_round_to_odd(value));
}
inline uint16_t double_to_bfloat16_bits(double value) {
  return float_to_bfloat16_bits(double_to_float_round_to_odd(value));
}
inline float bfloat16_bits_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// Storage types for the two 16-bit float formats (trivially copyable, 2 bytes).
struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float value) : bits(float_to_float16_bits(value)) {}
  static Float16 from_bits(uint16_t b) { Float16 h; h.bits = b; return h; }
  static Float16 from_double(double value) { return from_bits(double_to_float16_bits(value)); }
  explicit operator float() const { return float16_bits_to_float(bits); }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float value) : bits(float_to_bfloat16_bits(value)) {}
  static BFloat16 from_bits(uint16_t b) { BFloat16 h; h.bits = b; return h; }
  static BFloat16 from_double(double value) { return from_bits(double_to_bfloat16_bits(value)); }
  explicit operator float() const { return bfloat16_bits_to_float(bits); }
};

static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2);

}  // namespace parity
