#include "rank_selection_kernels.h"

#include "avx512_common.h"

#include <algorithm>
#include <bit>

#include "float_kernels.h"

namespace parity::statistics::detail::kernels {
namespace {

inline uint32_t key_at(const float* values, int64_t i) { return key_of(values[i]); }
inline uint32_t key_at(const uint32_t* keys, int64_t i) { return keys[i]; }

namespace portable {

template <typename T>
void key_range(const T* source, int64_t n, uint32_t& low, uint32_t& high) {
  low = ~0u;
  high = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t key = key_at(source, i);
    low = std::min(low, key);
    high = std::max(high, key);
  }
}

template <typename T>
void key_digits(const T* source, int64_t n, int shift, uint16_t* digits) {
  for (int64_t i = 0; i < n; ++i) digits[i] = static_cast<uint16_t>((key_at(source, i) >> shift) & (kDigitBuckets - 1));
}

template <typename T>
int64_t keys_in_buckets(const T* source, int64_t n, int shift, const uint32_t* marked, uint32_t* out) {
  int64_t taken = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t key = key_at(source, i);
    const uint32_t digit = (key >> shift) & (kDigitBuckets - 1);
    out[taken] = key;
    taken += (marked[digit >> 5] >> (digit & 31)) & 1u;
  }
  return taken;
}

}  // namespace portable

namespace avx512 {

// Sixteen keys: a float's bits xor all ones where negative, else xor the sign bit.
PARITY_AVX512 inline __m512i load_keys(const float* values, __mmask16 lanes) {
  const __m512i bits = _mm512_maskz_loadu_epi32(lanes, values);
  const __m512i flip = _mm512_or_si512(_mm512_srai_epi32(bits, 31), _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  return _mm512_xor_si512(bits, flip);
}
PARITY_AVX512 inline __m512i load_keys(const uint32_t* keys, __mmask16 lanes) {
  return _mm512_maskz_loadu_epi32(lanes, keys);
}

template <typename T>
PARITY_AVX512 void key_range(const T* source, int64_t n, uint32_t& low, uint32_t& high) {
  __m512i lows = _mm512_set1_epi32(-1), highs = _mm512_setzero_si512();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = tail_mask(n - i);
    const __m512i keys = load_keys(source + i, lanes);
    lows = _mm512_mask_min_epu32(lows, lanes, lows, keys);
    highs = _mm512_mask_max_epu32(highs, lanes, highs, keys);
  }
  low = _mm512_reduce_min_epu32(lows);
  high = _mm512_reduce_max_epu32(highs);
}

template <typename T>
PARITY_AVX512 void key_digits(const T* source, int64_t n, int shift, uint16_t* digits) {
  const __m128i count = _mm_cvtsi32_si128(shift);
  const __m512i mask = _mm512_set1_epi32(static_cast<int>(kDigitBuckets - 1));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = tail_mask(n - i);
    const __m512i digit = _mm512_and_si512(_mm512_srl_epi32(load_keys(source + i, lanes), count), mask);
    _mm256_mask_storeu_epi16(digits + i, lanes, _mm512_cvtepi32_epi16(digit));
  }
}

template <typename T>
PARITY_AVX512 int64_t keys_in_buckets(const T* source, int64_t n, int shift, const uint32_t* marked, uint32_t* out) {
  static_assert(kDigitBuckets == 2048, "the marks are 64 words, in four registers");
  const __m512i words0 = _mm512_loadu_si512(marked), words1 = _mm512_loadu_si512(marked + 16);
  const __m512i words2 = _mm512_loadu_si512(marked + 32), words3 = _mm512_loadu_si512(marked + 48);
  const __m128i count = _mm_cvtsi32_si128(shift);
  const __m512i digit_mask = _mm512_set1_epi32(static_cast<int>(kDigitBuckets - 1));
  const __m512i bit_mask = _mm512_set1_epi32(31), upper_half = _mm512_set1_epi32(1 << 10);
  int64_t taken = 0;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = tail_mask(n - i);
    const __m512i keys = load_keys(source + i, lanes);
    const __m512i digit = _mm512_and_si512(_mm512_srl_epi32(keys, count), digit_mask);
    // The digit's word (digit >> 5, 0..63): its low five bits pick within a pair of registers,
    // the sixth (digit bit 10) which pair.
    const __m512i word_index = _mm512_srli_epi32(digit, 5);
    const __m512i low_words = _mm512_permutex2var_epi32(words0, word_index, words1);
    const __m512i high_words = _mm512_permutex2var_epi32(words2, word_index, words3);
    const __mmask16 upper = _mm512_test_epi32_mask(digit, upper_half);
    const __m512i word = _mm512_mask_blend_epi32(upper, low_words, high_words);
    const __m512i bit = _mm512_srlv_epi32(word, _mm512_and_si512(digit, bit_mask));
    const __mmask16 hit = _mm512_mask_test_epi32_mask(lanes, bit, _mm512_set1_epi32(1));
    if (hit) {
      _mm512_mask_compressstoreu_epi32(out + taken, hit, keys);
      taken += std::popcount(static_cast<unsigned>(hit));
    }
  }
  return taken;
}

}  // namespace avx512

inline bool wide() { return level() == Level::kAvx512; }

}  // namespace

void key_range(const float* values, int64_t n, uint32_t& low, uint32_t& high) {
  if (wide()) avx512::key_range(values, n, low, high);
  else portable::key_range(values, n, low, high);
}
void key_range(const uint32_t* keys, int64_t n, uint32_t& low, uint32_t& high) {
  if (wide()) avx512::key_range(keys, n, low, high);
  else portable::key_range(keys, n, low, high);
}

void key_digits(const float* values, int64_t n, int shift, uint16_t* digits) {
  if (wide()) avx512::key_digits(values, n, shift, digits);
  else portable::key_digits(values, n, shift, digits);
}
void key_digits(const uint32_t* keys, int64_t n, int shift, uint16_t* digits) {
  if (wide()) avx512::key_digits(keys, n, shift, digits);
  else portable::key_digits(keys, n, shift, digits);
}

int64_t keys_in_buckets(const float* values, int64_t n, int shift, const uint32_t* marked, uint32_t* out) {
  return wide() ? avx512::keys_in_buckets(values, n, shift, marked, out)
                : portable::keys_in_buckets(values, n, shift, marked, out);
}
int64_t keys_in_buckets(const uint32_t* keys, int64_t n, int shift, const uint32_t* marked, uint32_t* out) {
  return wide() ? avx512::keys_in_buckets(keys, n, shift, marked, out)
                : portable::keys_in_buckets(keys, n, shift, marked, out);
}

}  // namespace parity::statistics::detail::kernels
