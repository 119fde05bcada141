// Exact float16 (IEEE binary16) and bfloat16 conversions: round to nearest, ties to even; NaN
// stays NaN (quiet), infinities and signed zeros are kept, denormals are handled exactly.
#pragma once

#include <bit>
#include <cstdint>

namespace parity {

uint16_t float_to_float16_bits(float value);
float float16_bits_to_float(uint16_t bits);

uint16_t float_to_bfloat16_bits(float value);
inline float bfloat16_bits_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// Storage types for the two 16-bit float formats (trivially copyable, 2 bytes).
struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float value) : bits(float_to_float16_bits(value)) {}
  static Float16 from_bits(uint16_t b) { Float16 h; h.bits = b; return h; }
  explicit operator float() const { return float16_bits_to_float(bits); }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float value) : bits(float_to_bfloat16_bits(value)) {}
  static BFloat16 from_bits(uint16_t b) { BFloat16 h; h.bits = b; return h; }
  explicit operator float() const { return bfloat16_bits_to_float(bits); }
};

static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2);

}  // namespace parity
