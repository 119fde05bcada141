// Vectorised kernels of the radix selection (private to statistics): over float32 values read as
// ordered keys (a float's bits mapped so that unsigned order is the floats' order, negative values
// reversed, -0 just below +0), or over such keys already made. Where the CPU has AVX-512 they use
// it (kernels::level(), as the pair statistics' kernels); elsewhere portable scalar code runs.
// Both give the same results.
#pragma once

#include <bit>
#include <cstdint>

namespace parity::statistics::detail::kernels {

constexpr int kDigitBits = 11;
constexpr uint32_t kDigitBuckets = 1u << kDigitBits;

inline uint32_t key_of(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  return bits ^ ((bits & 0x80000000u) ? 0xffffffffu : 0x80000000u);
}

// The smallest and largest key of n >= 1 values (or keys).
void key_range(const float* values, int64_t n, uint32_t& low, uint32_t& high);
void key_range(const uint32_t* keys, int64_t n, uint32_t& low, uint32_t& high);

// digits[i] = (key(i) >> shift) & (kDigitBuckets - 1) for i < n.
void key_digits(const float* values, int64_t n, int shift, uint16_t* digits);
void key_digits(const uint32_t* keys, int64_t n, int shift, uint16_t* digits);

// The keys whose digit at `shift` is a marked bucket (bit d of marked[d / 32] set; kDigitBuckets
// bits), written in order at `out`, which has room for one more than their count (the portable
// version stores every key at the next slot and advances on a match). Returns how many.
int64_t keys_in_buckets(const float* values, int64_t n, int shift, const uint32_t* marked, uint32_t* out);
int64_t keys_in_buckets(const uint32_t* keys, int64_t n, int shift, const uint32_t* marked, uint32_t* out);

}  // namespace parity::statistics::detail::kernels
