// The bool x bool fast path of the pair statistics: the numbers of pair_statistics.cpp's general
// kernel, bit for bit, from counts instead of a pass over every element per statistic.
//
// Two bool outputs make four kinds of element pair (x, y). Each stream takes one value per kind:
// out0 x, out1 y, the absolute error x != y, the relative error d / y (NaN for (0, 0), +inf for
// (1, 0), and the error itself where y is 1). So a worker range's moments follow from how many
// pairs of each kind it holds and where each kind first occurs: the values are 0 and 1, whose
// shifted sums are exact integers in any order; numpy's float32 sums of them are exact integers
// below 2^24 values; NaN and +inf propagate through a sum whatever its order; the order
// statistics of a stream of zeros and ones are 0 below the count of zeros and 1 from there. The
// worker ranges and their merge are the general kernel's, so every double comes out the same.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "../pair_statistics_internal.h"

namespace parity::statistics::detail {
namespace {

// Larger: numpy's float32 sums of zeros and ones may round, and their order would matter.
constexpr int64_t kBoolMaximum = int64_t{1} << 24;

// The pair kinds, indexed x + 2 y.
enum Kind { k00, k10, k01, k11, kKinds };

struct KindCounts {
  std::array<int64_t, kKinds> count{};
  std::array<int64_t, kKinds> first{-1, -1, -1, -1};  // the first index of each kind
};

// The kinds over [begin, end); false when a byte is neither 0 nor 1 (the general kernel then
// takes the values as they are).
bool count_kinds(const uint8_t* x, const uint8_t* y, int64_t begin, int64_t end, KindCounts& out) {
  int64_t ones_x = 0, ones_y = 0, both = 0;
  unsigned bits = 0;
  for (int64_t i = begin; i < end; ++i) {  // vectorised by the compiler
    ones_x += x[i];
    ones_y += y[i];
    both += x[i] & y[i];
    bits |= static_cast<unsigned>(x[i] | y[i]);
  }
  if (bits > 1) return false;
  out.count[k11] = both;
  out.count[k10] = ones_x - both;
  out.count[k01] = ones_y - both;
  out.count[k00] = (end - begin) - ones_x - ones_y + both;
  int missing = 0;
  for (int64_t c : out.count) missing += c > 0 ? 1 : 0;
  for (int64_t i = begin; i < end && missing > 0; ++i) {
    int64_t& first = out.first[static_cast<std::size_t>(x[i] + 2 * y[i])];
    if (first < 0) {
      first = i;
      --missing;
    }
  }
  return true;
}

// The earlier of two first indices (-1: none).
int64_t earlier(int64_t a, int64_t b) { return a < 0 ? b : b < 0 ? a : std::min(a, b); }

// Moments::add over a range's values of a stream of zeros and ones (their own magnitudes), in
// index order: `zeros` of them first at `first_zero`, `ones` first at `first_one`.
Moments zero_one_moments(int64_t zeros, int64_t first_zero, int64_t ones, int64_t first_one) {
  Moments m;
  m.n = zeros + ones;
  if (m.n == 0) return m;
  const bool starts_with_zero = ones == 0 || (zeros > 0 && first_zero < first_one);
  m.shift = starts_with_zero ? 0.0 : 1.0;
  // Every value less the first is 0, 1 or -1: the sums are the counts of the others.
  const int64_t others = starts_with_zero ? ones : zeros;
  m.s1 = static_cast<double>(starts_with_zero ? others : -others);
  m.s2 = static_cast<double>(others);
  m.sabs = static_cast<double>(ones);
  m.min = zeros > 0 ? 0.0 : 1.0;
  m.argmin = zeros > 0 ? first_zero : first_one;
  m.max = ones > 0 ? 1.0 : 0.0;
  m.argmax = ones > 0 ? first_one : first_zero;
  return m;
}

// A stream's zeros and ones as two sets of kinds.
Moments moments_of(const KindCounts& k, Kind zero_a, Kind zero_b, Kind one_a, Kind one_b) {
  return zero_one_moments(k.count[zero_a] + k.count[zero_b], earlier(k.first[zero_a], k.first[zero_b]),
                          k.count[one_a] + k.count[one_b], earlier(k.first[one_a], k.first[one_b]));
}

// One worker range's state, as the general kernel's first pass leaves it.
struct RangeState {
  StreamAccumulator a, b, abs, rel_nonzero, rel_zero;
};

}  // namespace

std::optional<PairStatistics> bool_pair_statistics(const TensorView& a, const TensorView& b, const Shape& shape,
                                                   const PairStatisticsRequest& request) {
  const int64_t n = a.size();
  if (a.dtype() != DType::kBool || b.dtype() != DType::kBool || n < 1 || n > kBoolMaximum || request.small_values)
    return std::nullopt;
  const uint8_t* x = static_cast<const uint8_t*>(a.raw());
  const uint8_t* y = static_cast<const uint8_t*>(b.raw());

  // Each kind's values, computed as the general kernel computes them (the division at run time:
  // 0 / 0 is the processor's NaN, as there).
  volatile double zero = 0.0;
  std::array<double, kKinds> d{}, r{};
  for (int k = 0; k < kKinds; ++k) {
    const int xk = k & 1, yk = k >> 1;
    d[static_cast<std::size_t>(k)] = static_cast<double>(xk != yk);
    r[static_cast<std::size_t>(k)] = d[static_cast<std::size_t>(k)] / (yk ? 1.0 : zero);
  }

  const WorkPlan plan = plan_work(n);
  std::array<int64_t, kKinds> c{};  // each kind's count over all ranges
  std::vector<RangeState> ranges(static_cast<std::size_t>(plan.workers()));
  for (std::size_t w = 0; w < ranges.size(); ++w) {
    KindCounts k;
    if (!count_kinds(x, y, plan.ranges[w].first, plan.ranges[w].second, k)) return std::nullopt;
    RangeState& s = ranges[w];
    s.a.moments = moments_of(k, k00, k01, k10, k11);
    s.b.moments = moments_of(k, k00, k10, k01, k11);
    s.abs.moments = moments_of(k, k00, k11, k10, k01);
    // At y = 1 the relative error is the error: 0 for (1, 1), 1 for (0, 1).
    s.rel_nonzero.moments = zero_one_moments(k.count[k11], k.first[k11], k.count[k01], k.first[k01]);
    s.rel_zero.nonfinite.nan = k.count[k00];
    s.rel_zero.nonfinite.first_nan = k.first[k00];
    s.rel_zero.nonfinite.posinf = k.count[k10];
    s.rel_zero.nonfinite.first_posinf = k.first[k10];
    for (std::size_t kind = 0; kind < kKinds; ++kind) c[kind] += k.count[kind];
  }
  RangeState acc = std::move(ranges[0]);
  for (std::size_t w = 1; w < ranges.size(); ++w) {
    acc.a.merge(ranges[w].a);
    acc.b.merge(ranges[w].b);
    acc.abs.merge(ranges[w].abs);
    acc.rel_nonzero.merge(ranges[w].rel_nonzero);
    acc.rel_zero.merge(ranges[w].rel_zero);
  }
  const int64_t zero_references = c[k00] + c[k10];
  StreamAccumulator rel_all = acc.rel_nonzero;
  if (zero_references > 0) rel_all.merge(acc.rel_zero);

  int64_t mismatches = 0;
  for (std::size_t k = 0; k < kKinds; ++k) {
    const bool abs_fail = d[k] > request.atol, rel_fail = r[k] > request.rtol || std::isnan(r[k]);
    if (abs_fail && rel_fail) mismatches += c[k];
  }

  // numpy's float32 sums: integers, or the NaN / +inf among the relative errors.
  const float ones_x = static_cast<float>(c[k10] + c[k11]), ones_y = static_cast<float>(c[k01] + c[k11]);
  const float ones_abs = static_cast<float>(c[k10] + c[k01]);
  float rel_sum = static_cast<float>(c[k01]), rel_magnitude = rel_sum;
  if (c[k10] > 0) rel_sum = rel_magnitude = static_cast<float>(r[k10]);
  if (c[k00] > 0) {
    rel_sum = static_cast<float>(r[k00]);
    rel_magnitude = static_cast<float>(std::fabs(r[k00]));
  }

  PairStreams streams;
  streams.point_at(acc.a, acc.b, acc.abs, acc.rel_nonzero, rel_all);
  // A sorted stream of zeros and ones: 0 below the count of zeros.
  auto zero_one = [](int64_t zeros) {
    return RankValue([zeros](uint64_t rank) { return rank < static_cast<uint64_t>(zeros) ? 0.0 : 1.0; });
  };
  streams.value0 = zero_one(c[k00] + c[k01]);
  streams.value1 = zero_one(c[k00] + c[k10]);
  streams.value_abs = zero_one(c[k00] + c[k11]);
  streams.value_rel_nonzero = zero_one(c[k11]);  // the finite relative errors are those at y = 1
  streams.value_rel_all = streams.value_rel_nonzero;
  streams.numbers = {numpy_numbers_of(ones_x, &ones_x, nullptr, n), numpy_numbers_of(ones_y, &ones_y, nullptr, n),
                     numpy_numbers_of(ones_abs, nullptr, nullptr, n),
                     numpy_numbers_of(rel_sum, &rel_magnitude, nullptr, n)};
  streams.mismatches = mismatches;
  streams.zero_references = zero_references;
  streams.max_abs_at_zero = c[k10] > 0 ? 1.0 : 0.0;

  const DisplayHistograms display = plan_display_histograms(request, n, DType::kBool, DType::kBool, Work::kBool,
                                                            Work::kFloat64, acc.a, acc.b, acc.abs, rel_all,
                                                            acc.rel_nonzero, mismatches);
  std::array<std::array<int64_t, 10>, 4> bins{};
  if (display.count) {
    const BinSpec* specs[4] = {&display.spec0, &display.spec1, &display.spec_abs, &display.spec_rel};
    for (std::size_t k = 0; k < kKinds; ++k) {
      if (c[k] == 0) continue;
      const bool zero_reference = (k >> 1) == 0;
      const double values[4] = {static_cast<double>(k & 1), static_cast<double>(k >> 1), d[k], r[k]};
      for (std::size_t s = 0; s < 4; ++s) {
        if (!specs[s]->valid || (s == 3 && display.parity_bins && zero_reference)) continue;
        const int bin = specs[s]->bin(values[s]);
        if (bin >= 0) bins[s][static_cast<std::size_t>(bin)] += c[k];
      }
    }
  }
  const PairTypes types{DType::kBool, DType::kBool, Work::kBool, Work::kFloat64, true, false};
  return assemble_pair_statistics(request, n, shape, types, streams, display, bins);
}

}  // namespace parity::statistics::detail
