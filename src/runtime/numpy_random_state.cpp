// numpy's legacy np.random.RandomState, replayed without numpy. See numpy_random_state.h.
#include "parity/runtime/numpy_random_state.h"

#include <bit>
#include <cstddef>
#include <type_traits>

#include "parity/core/error.h"

namespace parity::runtime {

// ---------------------------------------------------------------------------------------------
// MT19937 (Matsumoto & Nishimura), seeded with init_genrand like numpy's legacy seeding of an
// integer.

namespace {
constexpr int kN = 624;
constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu;
constexpr uint32_t kUpper = 0x80000000u;
constexpr uint32_t kLower = 0x7fffffffu;
}  // namespace

NumpyRandomState::NumpyRandomState(uint32_t seed) {
  uint32_t value = seed;
  for (int i = 0; i < kN; ++i) {
    key_[i] = value;
    value = 1812433253u * (value ^ (value >> 30)) + static_cast<uint32_t>(i + 1);
  }
  pos_ = kN;
}

void NumpyRandomState::regenerate() {
  for (int i = 0; i < kN; ++i) {
    const uint32_t y = (key_[i] & kUpper) | (key_[(i + 1) % kN] & kLower);
    key_[i] = key_[(i + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
  }
  pos_ = 0;
}

uint32_t NumpyRandomState::next_uint32() {
  if (pos_ >= kN) regenerate();
  uint32_t y = key_[pos_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

uint64_t NumpyRandomState::next_uint64() {
  const uint64_t high = next_uint32();
  const uint64_t low = next_uint32();
  return (high << 32) | low;
}

double NumpyRandomState::random_sample() {
  const uint32_t a = next_uint32() >> 5;  // 27 bits
  const uint32_t b = next_uint32() >> 6;  // 26 bits
  return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b)) / 9007199254740992.0;
}

void NumpyRandomState::random_sample(std::span<double> out) {
  for (double& v : out) v = random_sample();
}

// ---------------------------------------------------------------------------------------------
// randint. numpy draws `off + v` with v uniform in [0, rng] (rng = high - low, in the unsigned
// type of the dtype's width) by masked rejection: v = bits & mask, retried while v > rng, where
// mask is the smallest all-ones value >= rng. Which bits are drawn depends on the width:
//   rng == 0            nothing is drawn; every value is `off`
//   8/16-bit dtypes     a 32-bit draw is split into 4 (8-bit) or 2 (16-bit) pieces, lowest
//                       first; a new draw is made only when the pieces run out (rejected pieces
//                       count as used); leftover pieces are dropped at the end of the call
//   bool                one 32-bit draw gives 32 values, bit 0 first (the value is the bit
//                       itself: `off` is ignored, as in numpy, which is right since rng != 0
//                       implies [False, True])
//   32-bit dtypes       one 32-bit draw per attempt
//   64-bit dtypes       one 32-bit draw per attempt while rng < 2^32, else one 64-bit draw
//                       (two 32-bit draws, the first is the high half)

namespace {

template <typename U>
U smallest_mask(U rng) {
  U mask = rng;
  for (unsigned shift = 1; shift < sizeof(U) * 8; shift <<= 1) mask |= mask >> shift;
  return mask;
}

// 8- and 16-bit: pieces of buffered 32-bit draws.
template <typename U>
void fill_buffered_small(NumpyRandomState& state, U off, U rng, U* out, std::size_t count) {
  static_assert(sizeof(U) == 1 || sizeof(U) == 2);
  constexpr int kBits = sizeof(U) * 8;
  constexpr int kPieces = 32 / kBits;
  if (rng == 0) {
    for (std::size_t i = 0; i < count; ++i) out[i] = off;
    return;
  }
  const U mask = smallest_mask<U>(rng);
  uint32_t buffer = 0;
  int left = 0;  // pieces still unused in `buffer` beyond the current one
  for (std::size_t i = 0; i < count; ++i) {
    U value;
    do {
      if (left == 0) {
        buffer = state.next_uint32();
        left = kPieces - 1;
      } else {
        buffer >>= kBits;
        --left;
      }
      value = static_cast<U>(static_cast<U>(buffer) & mask);
    } while (value > rng);
    out[i] = static_cast<U>(off + value);
  }
}

void fill_u32(NumpyRandomState& state, uint32_t off, uint32_t rng, uint32_t* out,
              std::size_t count) {
  if (rng == 0) {
    for (std::size_t i = 0; i < count; ++i) out[i] = off;
    return;
  }
  const uint32_t mask = smallest_mask<uint32_t>(rng);
  for (std::size_t i = 0; i < count; ++i) {
    uint32_t value;
    do {
      value = state.next_uint32() & mask;
    } while (value > rng);
    out[i] = off + value;
  }
}

void fill_u64(NumpyRandomState& state, uint64_t off, uint64_t rng, uint64_t* out,
              std::size_t count) {
  if (rng == 0) {
    for (std::size_t i = 0; i < count; ++i) out[i] = off;
    return;
  }
  if (rng <= 0xffffffffull) {
    const uint32_t rng32 = static_cast<uint32_t>(rng);
    const uint32_t mask = smallest_mask<uint32_t>(rng32);
    for (std::size_t i = 0; i < count; ++i) {
      uint32_t value;
      do {
        value = state.next_uint32() & mask;
      } while (value > rng32);
      out[i] = off + value;
    }
    return;
  }
  const uint64_t mask = smallest_mask<uint64_t>(rng);
  for (std::size_t i = 0; i < count; ++i) {
    uint64_t value;
    do {
      value = state.next_uint64() & mask;
    } while (value > rng);
    out[i] = off + value;
  }
}

void fill_bool(NumpyRandomState& state, bool off, bool rng, bool* out, std::size_t count) {
  if (!rng) {
    for (std::size_t i = 0; i < count; ++i) out[i] = off;
    return;
  }
  uint32_t buffer = 0;
  int left = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (left == 0) {
      buffer = state.next_uint32();
      left = 31;
    } else {
      buffer >>= 1;
      --left;
    }
    out[i] = (buffer & 1u) != 0;
  }
}

}  // namespace

template <typename T>
void NumpyRandomState::randint_inclusive(T low, T high, std::span<T> out) {
  if (low > high) {
    raise<InvalidInputError>("randint: low ({}) is greater than high ({})", low, high);
  }
  if constexpr (std::is_same_v<T, bool>) {
    fill_bool(*this, low, low != high, out.data(), out.size());
  } else {
    using U = std::make_unsigned_t<T>;
    const U off = static_cast<U>(low);
    const U rng = static_cast<U>(static_cast<U>(high) - off);
    U* dest = reinterpret_cast<U*>(out.data());
    if constexpr (sizeof(T) <= 2) {
      fill_buffered_small<U>(*this, off, rng, dest, out.size());
    } else if constexpr (sizeof(T) == 4) {
      fill_u32(*this, off, rng, dest, out.size());
    } else {
      fill_u64(*this, off, rng, dest, out.size());
    }
  }
}

template void NumpyRandomState::randint_inclusive<int8_t>(int8_t, int8_t, std::span<int8_t>);
template void NumpyRandomState::randint_inclusive<int16_t>(int16_t, int16_t, std::span<int16_t>);
template void NumpyRandomState::randint_inclusive<int32_t>(int32_t, int32_t, std::span<int32_t>);
template void NumpyRandomState::randint_inclusive<int64_t>(int64_t, int64_t, std::span<int64_t>);
template void NumpyRandomState::randint_inclusive<uint8_t>(uint8_t, uint8_t, std::span<uint8_t>);
template void NumpyRandomState::randint_inclusive<uint16_t>(uint16_t, uint16_t,
                                                            std::span<uint16_t>);
template void NumpyRandomState::randint_inclusive<uint32_t>(uint32_t, uint32_t,
                                                            std::span<uint32_t>);
template void NumpyRandomState::randint_inclusive<uint64_t>(uint64_t, uint64_t,
                                                            std::span<uint64_t>);
template void NumpyRandomState::randint_inclusive<bool>(bool, bool, std::span<bool>);

// ---------------------------------------------------------------------------------------------
// float64 -> float16 in one rounding step.

uint16_t double_to_float16_bits(double value) {
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 48) & 0x8000u);
  const int biased = static_cast<int>((bits >> 52) & 0x7ffu);
  const uint64_t fraction = bits & ((uint64_t{1} << 52) - 1);
  if (biased == 0x7ff) {
    if (fraction == 0) return sign | 0x7c00u;
    uint16_t payload = static_cast<uint16_t>(fraction >> 42);
    if (payload == 0) payload = 1;  // stays a NaN
    return sign | 0x7c00u | payload;
  }
  const int exponent = biased - 1023;
  if (exponent >= 16) return sign | 0x7c00u;  // >= 65536: infinity
  if (exponent < -25) return sign;            // < 2^-25: below half the smallest subnormal
  const uint64_t mantissa = fraction | (uint64_t{1} << 52);  // 53 significant bits
  int shift;
  uint32_t base;
  if (exponent >= -14) {
    // Normal half: 11 significant bits (implicit one included) in units of 2^(exponent - 10).
    shift = 42;
    base = static_cast<uint32_t>(exponent + 14) << 10;
  } else {
    // Subnormal half: units of 2^-24.
    shift = 28 - exponent;
    base = 0;
  }
  uint64_t quotient = mantissa >> shift;
  const uint64_t remainder = mantissa & ((uint64_t{1} << shift) - 1);
  const uint64_t halfway = uint64_t{1} << (shift - 1);
  if (remainder > halfway || (remainder == halfway && (quotient & 1u))) ++quotient;
  // A carry out of the significand moves into the exponent (and up to infinity) by itself.
  return sign | static_cast<uint16_t>(base + quotient);
}

}  // namespace parity::runtime
