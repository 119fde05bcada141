#include "float_kernels.h"

#include "avx512_common.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>

namespace parity::statistics::detail::kernels {
namespace {

constexpr uint32_t kExponentMask = 0x7f800000u;

inline bool finite_bits(float v) { return (std::bit_cast<uint32_t>(v) & kExponentMask) != kExponentMask; }

// ---- Portable versions (the scalar code's operations, value by value) ----
namespace portable {

bool errors(const float* x, const float* y, int64_t n, float epsilon, float atol, float rtol, float* d, float* r,
            float* mx, float* my, ChunkExtremes& extremes, Verdict& verdict) {
  const float inf = std::numeric_limits<float>::infinity();
  MinMax mx_x{inf, -inf}, mx_y = mx_x, mx_d = mx_x, mx_r = mx_x, mx_nz = mx_x;
  auto extend = [](MinMax& m, float v) {
    m.min = v < m.min ? v : m.min;
    m.max = v > m.max ? v : m.max;
  };
  bool finite = true, any_nonzero = false;
  for (int64_t i = 0; i < n; ++i) {
    const float dv = std::fabs(x[i] - y[i]);
    const float reference = y[i] == 0 ? epsilon : std::fabs(y[i]);
    const float rv = dv / reference;
    d[i] = dv;
    r[i] = rv;
    mx[i] = std::fabs(x[i]);
    my[i] = std::fabs(y[i]);
    finite &= finite_bits(dv) & finite_bits(rv);  // |x - y| is finite only where x and y both are
    extend(mx_x, x[i]);
    extend(mx_y, y[i]);
    extend(mx_d, dv);
    extend(mx_r, rv);
    verdict.mismatches += (dv > atol && rv > rtol) ? 1 : 0;
    if (y[i] == 0) {
      ++verdict.zero_references;
      verdict.max_abs_at_zero = std::max(verdict.max_abs_at_zero, dv);
    } else {
      any_nonzero = true;
      extend(mx_nz, rv);
    }
  }
  extremes = ChunkExtremes{mx_x, mx_y, mx_d, mx_r, mx_nz, any_nonzero};
  return finite;
}

void shifted_sums(const float* v, int64_t n, double shift, double* sums) {
  double s1 = sums[0], s2 = sums[1], plain = sums[2];
  for (int64_t i = 0; i < n; ++i) {
    const double value = static_cast<double>(v[i]);
    const double c = value - shift;
    s1 += c;
    s2 += c * c;
    plain += value;
  }
  sums[0] = s1;
  sums[1] = s2;
  sums[2] = plain;
}

void count_bins(const float* v, int64_t n, const BinSpec& spec, std::array<int64_t, 10>& counts) {
  for (int64_t i = 0; i < n; ++i) {
    int b = spec.bin(static_cast<double>(v[i]));
    if (b >= 0) ++counts[static_cast<std::size_t>(b)];
  }
}

int64_t window(const float* v, int64_t n, float low, float high, WindowCounts& counts, float* inside) {
  int64_t taken = 0;
  const bool point = low == high;
  for (int64_t i = 0; i < n; ++i) {
    const float value = v[i];
    counts.below += value < low;
    counts.at_low += value == low;
    if (!point) counts.at_high += value == high;
    inside[taken] = value;
    taken += (value > low && value < high) ? 1 : 0;
  }
  return taken;
}

int64_t select_nonzero_reference(const float* v, const float* y, int64_t n, float* out) {
  int64_t taken = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[taken] = v[i];
    taken += y[i] != 0 ? 1 : 0;
  }
  return taken;
}

void differences_and_squares(const float* x, const float* y, int64_t n, float epsilon, const float* means, float* d,
                             float* r, float* const* squares) {
  for (int64_t i = 0; i < n; ++i) {
    const float dv = std::fabs(x[i] - y[i]);
    const float rv = dv / (y[i] == 0 ? epsilon : std::fabs(y[i]));
    d[i] = dv;
    r[i] = rv;
    const float values[4] = {x[i], y[i], dv, rv};
    for (int k = 0; k < 4; ++k) {
      const float c = values[k] - means[k];
      squares[k][i] = c * c;
    }
  }
}

bool magnitudes(const float* x, int64_t n, float* magnitude, MinMax& extremes, int64_t& zeros) {
  const float inf = std::numeric_limits<float>::infinity();
  MinMax found{inf, -inf};
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) {
    magnitude[i] = std::fabs(x[i]);
    finite &= finite_bits(x[i]);
    found.min = x[i] < found.min ? x[i] : found.min;
    found.max = x[i] > found.max ? x[i] : found.max;
    zeros += x[i] == 0 ? 1 : 0;
  }
  extremes = found;
  return finite;
}

void squared_deviations(const float* v, int64_t n, float mean, float* squares) {
  for (int64_t i = 0; i < n; ++i) {
    const float c = v[i] - mean;
    squares[i] = c * c;
  }
}

int64_t half_open_windows(const float* v, int64_t n, int count, const float* lows, const float* highs,
                          WindowCounts* counts, float* inside) {
  int64_t taken = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float value = v[i];
    bool in = false;
    for (int w = 0; w < count; ++w) {
      counts[w].below += value < lows[w];
      in |= value >= lows[w] && value < highs[w];
    }
    inside[taken] = value;
    taken += in ? 1 : 0;
  }
  return taken;
}

}  // namespace portable

// ---- AVX-512 versions ----
namespace avx512 {

// Lanes whose value is NaN or infinite.
PARITY_AVX512 inline __mmask16 not_finite(__m512 v, __mmask16 lanes) {
  const __m512i exponent = _mm512_set1_epi32(static_cast<int>(kExponentMask));
  __m512i bits = _mm512_and_si512(_mm512_castps_si512(v), exponent);
  return _mm512_mask_cmpeq_epi32_mask(lanes, bits, exponent);
}

PARITY_AVX512 bool errors(const float* x, const float* y, int64_t n, float epsilon, float atol, float rtol, float* d,
                          float* r, float* mx, float* my, ChunkExtremes& extremes, Verdict& verdict) {
  const __m512 eps = _mm512_set1_ps(epsilon);
  const __m512 zero = _mm512_setzero_ps();
  const __m512 va = _mm512_set1_ps(atol), vrt = _mm512_set1_ps(rtol);
  const __m512 inf = _mm512_set1_ps(std::numeric_limits<float>::infinity());
  const __m512 minus_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  // Extremes of x, y, d, r and of r at non-zero references (the tail's lanes left out).
  __m512 low[5] = {inf, inf, inf, inf, inf}, high[5] = {minus_inf, minus_inf, minus_inf, minus_inf, minus_inf};
  __m512 max_at_zero = zero;
  int64_t mismatches = 0, zeros = 0;
  __mmask16 bad = 0, nonzero_seen = 0;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = tail_mask(n - i);
    __m512 vx = _mm512_maskz_loadu_ps(lanes, x + i);
    __m512 vy = _mm512_maskz_loadu_ps(lanes, y + i);
    __m512 vd = _mm512_abs_ps(_mm512_sub_ps(vx, vy));
    __m512 my_v = _mm512_abs_ps(vy);
    __mmask16 zero_y = _mm512_cmp_ps_mask(vy, zero, _CMP_EQ_OQ);
    __m512 reference = _mm512_mask_blend_ps(zero_y, my_v, eps);
    __m512 vr = _mm512_div_ps(vd, reference);
    _mm512_mask_storeu_ps(d + i, lanes, vd);
    _mm512_mask_storeu_ps(r + i, lanes, vr);
    _mm512_mask_storeu_ps(mx + i, lanes, _mm512_abs_ps(vx));
    _mm512_mask_storeu_ps(my + i, lanes, my_v);
    // |x - y| is finite only where x and y both are: d and r say it all.
    bad |= not_finite(vd, lanes) | not_finite(vr, lanes);
    const __m512 values[4] = {vx, vy, vd, vr};
    for (int k = 0; k < 4; ++k) {
      low[k] = _mm512_mask_min_ps(low[k], lanes, low[k], values[k]);
      high[k] = _mm512_mask_max_ps(high[k], lanes, high[k], values[k]);
    }
    const __mmask16 at_zero = zero_y & lanes, nonzero = static_cast<__mmask16>(~zero_y & lanes);
    low[4] = _mm512_mask_min_ps(low[4], nonzero, low[4], vr);
    high[4] = _mm512_mask_max_ps(high[4], nonzero, high[4], vr);
    nonzero_seen |= nonzero;
    const __mmask16 fail =
        _mm512_mask_cmp_ps_mask(lanes, vd, va, _CMP_GT_OQ) & _mm512_mask_cmp_ps_mask(lanes, vr, vrt, _CMP_GT_OQ);
    mismatches += std::popcount(static_cast<unsigned>(fail));
    zeros += std::popcount(static_cast<unsigned>(at_zero));
    max_at_zero = _mm512_mask_max_ps(max_at_zero, at_zero, max_at_zero, vd);
  }
  MinMax found[5];
  for (int k = 0; k < 5; ++k) found[k] = MinMax{_mm512_reduce_min_ps(low[k]), _mm512_reduce_max_ps(high[k])};
  extremes = ChunkExtremes{found[0], found[1], found[2], found[3], found[4], nonzero_seen != 0};
  verdict.mismatches += mismatches;
  verdict.zero_references += zeros;
  if (zeros) verdict.max_abs_at_zero = std::max(verdict.max_abs_at_zero, _mm512_reduce_max_ps(max_at_zero));
  return bad == 0;
}

PARITY_AVX512 void shifted_sums(const float* v, int64_t n, double shift, double* sums) {
  const __m512d center = _mm512_set1_pd(shift);
  // Two sets of accumulators (the low and high eight values of each 16), so the adds overlap.
  __m512d s1[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()}, s2[2] = {s1[0], s1[0]}, plain[2] = {s1[0], s1[0]};
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = tail_mask(n - i);
    const __m512 value = _mm512_maskz_loadu_ps(lanes, v + i);
    const __m512d half[2] = {_mm512_cvtps_pd(_mm512_castps512_ps256(value)),
                             _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(value), 1)))};
    const __mmask8 used[2] = {static_cast<__mmask8>(lanes & 0xff), static_cast<__mmask8>(lanes >> 8)};
    for (int h = 0; h < 2; ++h) {
      const __m512d c = _mm512_maskz_sub_pd(used[h], half[h], center);
      s1[h] = _mm512_add_pd(s1[h], c);
      s2[h] = _mm512_fmadd_pd(c, c, s2[h]);
      plain[h] = _mm512_add_pd(plain[h], half[h]);
    }
  }
  sums[0] += _mm512_reduce_add_pd(_mm512_add_pd(s1[0], s1[1]));
  sums[1] += _mm512_reduce_add_pd(_mm512_add_pd(s2[0], s2[1]));
  sums[2] += _mm512_reduce_add_pd(_mm512_add_pd(plain[0], plain[1]));
}

// BinSpec::bin for 8 values (as doubles): the bin index, or -1 outside the range.
PARITY_AVX512 inline __m256i bins_of(__m256 values, const BinSpec& spec, __m512d edges_low, __m512d edges_high) {
  __m512d x = _mm512_cvtps_pd(values);
  __mmask8 keep = _mm512_cmp_pd_mask(x, _mm512_set1_pd(spec.keep_first), _CMP_GE_OQ) &
                  _mm512_cmp_pd_mask(x, _mm512_set1_pd(spec.keep_last), _CMP_LE_OQ);
  __m512d f;
  if (spec.arithmetic == BinSpec::Arithmetic::kSingle) {
    __m256 num = _mm256_sub_ps(values, _mm256_set1_ps(static_cast<float>(spec.first_bin)));
    if (spec.supplied) {
      f = _mm512_mul_pd(_mm512_div_pd(_mm512_cvtps_pd(num), _mm512_set1_pd(spec.denominator)), _mm512_set1_pd(10.0));
    } else {
      __m256 q = _mm256_div_ps(num, _mm256_set1_ps(static_cast<float>(spec.denominator)));
      f = _mm512_cvtps_pd(_mm256_mul_ps(q, _mm256_set1_ps(10.0f)));
    }
  } else {
    f = _mm512_mul_pd(_mm512_div_pd(_mm512_sub_pd(x, _mm512_set1_pd(spec.first_bin)), _mm512_set1_pd(spec.denominator)),
                      _mm512_set1_pd(10.0));
  }
  // static_cast<int> truncates; out-of-int-range values become INT_MIN and clamp to 0 below, as
  // in the scalar code (only values outside the kept range can be that far).
  __m256i index = _mm512_cvttpd_epi32(f);
  index = _mm256_min_epi32(_mm256_max_epi32(index, _mm256_setzero_si256()), _mm256_set1_epi32(9));
  __m512i index64 = _mm512_cvtepi32_epi64(index);
  __m512d lower_edge = _mm512_permutex2var_pd(edges_low, index64, edges_high);
  __m512i next64 = _mm512_add_epi64(index64, _mm512_set1_epi64(1));
  __m512d upper_edge = _mm512_permutex2var_pd(edges_low, next64, edges_high);
  __mmask8 below = _mm512_cmp_pd_mask(x, lower_edge, _CMP_LT_OQ);
  __mmask8 not_last = _mm256_cmpneq_epi32_mask(index, _mm256_set1_epi32(9));
  __mmask8 above = static_cast<__mmask8>(~below & not_last & _mm512_cmp_pd_mask(x, upper_edge, _CMP_GE_OQ));
  index = _mm256_mask_sub_epi32(index, below, index, _mm256_set1_epi32(1));
  index = _mm256_mask_add_epi32(index, above, index, _mm256_set1_epi32(1));
  return _mm256_mask_blend_epi32(keep, _mm256_set1_epi32(-1), index);
}

PARITY_AVX512 void count_bins(const float* v, int64_t n, const BinSpec& spec, std::array<int64_t, 10>& counts) {
  alignas(64) double table[16];
  for (int i = 0; i < 16; ++i) table[i] = spec.edges[static_cast<std::size_t>(std::min(i, 10))];
  const __m512d edges_low = _mm512_load_pd(table), edges_high = _mm512_load_pd(table + 8);
  // Per-bin counters in 16 lanes of int32 (a chunk is far below 2^31 values).
  __m512i bin_counts[10];
  for (auto& c : bin_counts) c = _mm512_setzero_si512();
  const __m512i one = _mm512_set1_epi32(1);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = tail_mask(n - i);
    __m512 values = _mm512_maskz_loadu_ps(lanes, v + i);
    __m256i low = bins_of(_mm512_castps512_ps256(values), spec, edges_low, edges_high);
    __m256i high = bins_of(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(values), 1)), spec, edges_low,
                           edges_high);
    __m512i index = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
    for (int b = 0; b < 10; ++b) {
      __mmask16 hit = _mm512_mask_cmpeq_epi32_mask(lanes, index, _mm512_set1_epi32(b));
      bin_counts[b] = _mm512_mask_add_epi32(bin_counts[b], hit, bin_counts[b], one);
    }
  }
  for (int b = 0; b < 10; ++b) counts[static_cast<std::size_t>(b)] += _mm512_reduce_add_epi32(bin_counts[b]);
}

// windows() (Ties) or half_open_windows() for W windows per loaded vector. With ties, four
// comparisons a window: below (v < low), at the ends (v == low, v == high), and inside = v < high
// and neither below nor at low (no NaN here); each window keeps its own values. Half-open, two:
// below, and inside = v < high and not below; the values inside any window go to one buffer,
// inside[0] (one compress a vector instead of one a window), and taken[0] says how many.
template <bool Ties, int W>
PARITY_AVX512 void windows_of(const float* v, int64_t n, const float* lows, const float* highs, WindowCounts* counts,
                              float* const* inside, int64_t* taken) {
  __m512 low[W], high[W];
  __m512i below[W], at_low[W], at_high[W];
  int64_t kept[W];
  for (int w = 0; w < W; ++w) {
    low[w] = _mm512_set1_ps(lows[w]);
    high[w] = _mm512_set1_ps(highs[w]);
    below[w] = at_low[w] = at_high[w] = _mm512_setzero_si512();
    kept[w] = 0;
  }
  const __m512i one = _mm512_set1_epi32(1);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = tail_mask(n - i);
    const __m512 value = _mm512_maskz_loadu_ps(lanes, v + i);
    [[maybe_unused]] __mmask16 in_any = 0;
    for (int w = 0; w < W; ++w) {
      const __mmask16 lt_low = _mm512_mask_cmp_ps_mask(lanes, value, low[w], _CMP_LT_OQ);
      const __mmask16 lt_high = _mm512_mask_cmp_ps_mask(lanes, value, high[w], _CMP_LT_OQ);
      below[w] = _mm512_mask_add_epi32(below[w], lt_low, below[w], one);
      if constexpr (Ties) {
        const __mmask16 eq_low = _mm512_mask_cmp_ps_mask(lanes, value, low[w], _CMP_EQ_OQ);
        const __mmask16 eq_high = _mm512_mask_cmp_ps_mask(lanes, value, high[w], _CMP_EQ_OQ);
        at_low[w] = _mm512_mask_add_epi32(at_low[w], eq_low, at_low[w], one);
        at_high[w] = _mm512_mask_add_epi32(at_high[w], eq_high, at_high[w], one);
        const __mmask16 in = _kandn_mask16(_kor_mask16(lt_low, eq_low), lt_high);
        _mm512_storeu_ps(inside[w] + kept[w], _mm512_maskz_compress_ps(in, value));
        kept[w] += std::popcount(static_cast<unsigned>(in));
      } else {
        in_any |= _kandn_mask16(lt_low, lt_high);
      }
    }
    if constexpr (!Ties) {
      _mm512_storeu_ps(inside[0] + kept[0], _mm512_maskz_compress_ps(in_any, value));
      kept[0] += std::popcount(static_cast<unsigned>(in_any));
    }
  }
  for (int w = 0; w < W; ++w) {
    counts[w].below += _mm512_reduce_add_epi32(below[w]);
    if constexpr (Ties) {
      counts[w].at_low += _mm512_reduce_add_epi32(at_low[w]);
      if (lows[w] != highs[w]) counts[w].at_high += _mm512_reduce_add_epi32(at_high[w]);
      taken[w] = kept[w];
    }
  }
  if constexpr (!Ties) taken[0] = kept[0];
}

// Groups of up to four windows: their bounds and counters stay in registers. Tied windows keep
// their own buffers, so any number of them can be taken four at a time; half-open windows share
// one buffer, so half_open_windows() passes at most four (one group).
template <bool Ties>
PARITY_AVX512 void windows_in_groups(const float* v, int64_t n, int count, const float* lows, const float* highs,
                                     WindowCounts* counts, float* const* inside, int64_t* taken) {
  for (int first = 0; first < count; first += 4) {
    const float* l = lows + first;
    const float* h = highs + first;
    switch (std::min(count - first, 4)) {
      case 1: windows_of<Ties, 1>(v, n, l, h, counts + first, inside + first, taken + first); break;
      case 2: windows_of<Ties, 2>(v, n, l, h, counts + first, inside + first, taken + first); break;
      case 3: windows_of<Ties, 3>(v, n, l, h, counts + first, inside + first, taken + first); break;
      default: windows_of<Ties, 4>(v, n, l, h, counts + first, inside + first, taken + first); break;
    }
  }
}

// One pass: the division's latency overlaps the squares' arithmetic.
PARITY_AVX512 void differences_and_squares(const float* x, const float* y, int64_t n, float epsilon,
                                           const float* means, float* d, float* r, float* const* squares) {
  const __m512 eps = _mm512_set1_ps(epsilon);
  const __m512 zero = _mm512_setzero_ps();
  const __m512 mean[4] = {_mm512_set1_ps(means[0]), _mm512_set1_ps(means[1]), _mm512_set1_ps(means[2]),
                          _mm512_set1_ps(means[3])};
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = tail_mask(n - i);
    const __m512 vx = _mm512_maskz_loadu_ps(lanes, x + i);
    const __m512 vy = _mm512_maskz_loadu_ps(lanes, y + i);
    const __m512 vd = _mm512_abs_ps(_mm512_sub_ps(vx, vy));
    const __mmask16 zero_y = _mm512_cmp_ps_mask(vy, zero, _CMP_EQ_OQ);
    const __m512 reference = _mm512_mask_blend_ps(zero_y, _mm512_abs_ps(vy), eps);
    const __m512 vr = _mm512_div_ps(vd, reference);
    _mm512_mask_storeu_ps(d + i, lanes, vd);
    _mm512_mask_storeu_ps(r + i, lanes, vr);
    const __m512 values[4] = {vx, vy, vd, vr};
    for (int k = 0; k < 4; ++k) {
      const __m512 c = _mm512_sub_ps(values[k], mean[k]);
      _mm512_mask_storeu_ps(squares[k] + i, lanes, _mm512_mul_ps(c, c));
    }
  }
}

PARITY_AVX512 bool magnitudes(const float* x, int64_t n, float* magnitude, MinMax& extremes, int64_t& zeros) {
  const __m512 zero = _mm512_setzero_ps();
  __m512 low = _mm512_set1_ps(std::numeric_limits<float>::infinity());
  __m512 high = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __mmask16 bad = 0;
  int64_t zero_count = 0;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(lanes, x + i);
    _mm512_mask_storeu_ps(magnitude + i, lanes, _mm512_abs_ps(v));
    bad |= not_finite(v, lanes);
    low = _mm512_mask_min_ps(low, lanes, low, v);
    high = _mm512_mask_max_ps(high, lanes, high, v);
    zero_count += std::popcount(static_cast<unsigned>(_mm512_mask_cmp_ps_mask(lanes, v, zero, _CMP_EQ_OQ)));
  }
  extremes = MinMax{_mm512_reduce_min_ps(low), _mm512_reduce_max_ps(high)};
  zeros += zero_count;
  return bad == 0;
}

PARITY_AVX512 void squared_deviations(const float* v, int64_t n, float mean, float* squares) {
  const __m512 center = _mm512_set1_ps(mean);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = tail_mask(n - i);
    const __m512 c = _mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, v + i), center);
    _mm512_mask_storeu_ps(squares + i, lanes, _mm512_mul_ps(c, c));
  }
}

// count_bins by cumulative counts (see bins_by_edges): C[k] = kept values >= edges[k].
PARITY_AVX512 void count_bins_by_edges(const float* v, int64_t n, const BinSpec& spec,
                                       std::array<int64_t, 10>& counts) {
  const __m512 keep_first = _mm512_set1_ps(static_cast<float>(spec.keep_first));
  const __m512 keep_last = _mm512_set1_ps(static_cast<float>(spec.keep_last));
  __m512 edges[10];
  for (int k = 1; k < 10; ++k) edges[k] = _mm512_set1_ps(static_cast<float>(spec.edges[static_cast<std::size_t>(k)]));
  const __m512i one = _mm512_set1_epi32(1);
  __m512i at_least[10];
  for (auto& c : at_least) c = _mm512_setzero_si512();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = tail_mask(n - i);
    __m512 value = _mm512_maskz_loadu_ps(lanes, v + i);
    __mmask16 kept = _mm512_mask_cmp_ps_mask(lanes, value, keep_first, _CMP_GE_OQ) &
                     _mm512_cmp_ps_mask(value, keep_last, _CMP_LE_OQ);
    at_least[0] = _mm512_mask_add_epi32(at_least[0], kept, at_least[0], one);
    for (int k = 1; k < 10; ++k)
      at_least[k] = _mm512_mask_add_epi32(at_least[k], _mm512_mask_cmp_ps_mask(kept, value, edges[k], _CMP_GE_OQ),
                                          at_least[k], one);
  }
  int64_t cumulative[11];
  for (int k = 0; k < 10; ++k) cumulative[k] = _mm512_reduce_add_epi32(at_least[k]);
  cumulative[10] = 0;
  for (int b = 0; b < 10; ++b) counts[static_cast<std::size_t>(b)] += cumulative[b] - cumulative[b + 1];
}

PARITY_AVX512 int64_t select_nonzero_reference(const float* v, const float* y, int64_t n, float* out) {
  const __m512 zero = _mm512_setzero_ps();
  int64_t taken = 0;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = tail_mask(n - i);
    __mmask16 keep = _mm512_mask_cmp_ps_mask(lanes, _mm512_maskz_loadu_ps(lanes, y + i), zero, _CMP_NEQ_UQ);
    _mm512_storeu_ps(out + taken, _mm512_maskz_compress_ps(keep, _mm512_maskz_loadu_ps(lanes, v + i)));
    taken += std::popcount(static_cast<unsigned>(keep));
  }
  return taken;
}

#undef PARITY_AVX512

}  // namespace avx512

bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

std::atomic<Level>& current_level() {
  static std::atomic<Level> value{cpu_has_avx512() ? Level::kAvx512 : Level::kPortable};
  return value;
}

inline bool wide() { return current_level().load(std::memory_order_relaxed) == Level::kAvx512; }

}  // namespace

Level level() { return current_level().load(); }

void force_level(Level wanted) {
  if (wanted == Level::kAvx512 && !cpu_has_avx512()) wanted = Level::kPortable;
  current_level().store(wanted);
}

bool errors(const float* x, const float* y, int64_t n, float epsilon, float atol, float rtol, float* d, float* r,
            float* mx, float* my, ChunkExtremes& extremes, Verdict& verdict) {
  return wide() ? avx512::errors(x, y, n, epsilon, atol, rtol, d, r, mx, my, extremes, verdict)
                : portable::errors(x, y, n, epsilon, atol, rtol, d, r, mx, my, extremes, verdict);
}

bool magnitudes(const float* x, int64_t n, float* magnitude, MinMax& extremes, int64_t& zeros) {
  return wide() ? avx512::magnitudes(x, n, magnitude, extremes, zeros)
                : portable::magnitudes(x, n, magnitude, extremes, zeros);
}

void squared_deviations(const float* v, int64_t n, float mean, float* squares) {
  if (wide()) avx512::squared_deviations(v, n, mean, squares);
  else portable::squared_deviations(v, n, mean, squares);
}

int64_t first_equal(const float* v, int64_t n, float value) {
  for (int64_t i = 0; i < n; ++i)
    if (v[i] == value) return i;
  return n;
}

void shifted_sums(const float* v, int64_t n, double shift, double* sums) {
  if (wide()) avx512::shifted_sums(v, n, shift, sums);
  else portable::shifted_sums(v, n, shift, sums);
}

// numpy finds a value's bin by a guess, (x - first) / (last - first) * 10 truncated, moved by at
// most one bin after comparing x with the edges around it. Where the guess is provably within one
// bin of the true one (float32 edges, strictly increasing, each bin far wider than the edges'
// float32 rounding), the result is the bin whose edges enclose x: counted by comparisons alone.
static bool bins_by_edges(const BinSpec& spec) {
  if (spec.arithmetic != BinSpec::Arithmetic::kSingle) return false;
  auto is_float = [](double v) { return static_cast<double>(static_cast<float>(v)) == v; };
  if (!is_float(spec.keep_first) || !is_float(spec.keep_last)) return false;
  for (double e : spec.edges)
    if (!is_float(e)) return false;
  for (std::size_t k = 0; k < 10; ++k)
    if (!(spec.edges[k] < spec.edges[k + 1])) return false;
  const double range = spec.edges[10] - spec.edges[0];
  const double magnitude = std::max(std::fabs(spec.edges[0]), std::fabs(spec.edges[10]));
  // Edges rounded to float32 move by at most 2^-24 of the magnitude; the guess's own float32
  // arithmetic errs by a few 2^-24 of a bin. Both stay far below half a bin:
  return range > 0 && magnitude / range < 4096.0 && spec.keep_first == spec.edges[0] &&
         spec.keep_last == spec.edges[10];
}

void count_bins(const float* v, int64_t n, const BinSpec& spec, std::array<int64_t, 10>& counts) {
  if (wide() && bins_by_edges(spec)) {
    avx512::count_bins_by_edges(v, n, spec, counts);
    return;
  }
  const bool vectorisable =
      spec.arithmetic == BinSpec::Arithmetic::kSingle || spec.arithmetic == BinSpec::Arithmetic::kDouble;
  if (wide() && vectorisable) avx512::count_bins(v, n, spec, counts);
  else portable::count_bins(v, n, spec, counts);
}

void windows(const float* v, int64_t n, int count, const float* lows, const float* highs, WindowCounts* counts,
             float* const* inside, int64_t* taken) {
  if (wide()) {
    avx512::windows_in_groups<true>(v, n, count, lows, highs, counts, inside, taken);
    return;
  }
  for (int w = 0; w < count; ++w) taken[w] = portable::window(v, n, lows[w], highs[w], counts[w], inside[w]);
}

int64_t half_open_windows(const float* v, int64_t n, int count, const float* lows, const float* highs,
                          WindowCounts* counts, float* inside) {
  // The vector kernel takes the windows in one pass, so it keeps each value once; more windows than
  // that go to the portable code, which keeps each value once however many there are.
  if (!wide() || count > kMaxHalfOpenWindows)
    return portable::half_open_windows(v, n, count, lows, highs, counts, inside);
  int64_t taken = 0;
  avx512::windows_in_groups<false>(v, n, count, lows, highs, counts, &inside, &taken);
  return taken;
}

void differences_and_squares(const float* x, const float* y, int64_t n, float epsilon, const float* means, float* d,
                             float* r, float* const* squares) {
  if (wide()) avx512::differences_and_squares(x, y, n, epsilon, means, d, r, squares);
  else portable::differences_and_squares(x, y, n, epsilon, means, d, r, squares);
}

int64_t select_nonzero_reference(const float* v, const float* y, int64_t n, float* out) {
  return wide() ? avx512::select_nonzero_reference(v, y, n, out) : portable::select_nonzero_reference(v, y, n, out);
}

}  // namespace parity::statistics::detail::kernels
