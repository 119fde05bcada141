#include "parity/statistics/pair_statistics.h"

#include "pair_statistics_internal.h"

#include <array>
#include <cmath>

#include "streaming_statistics.h"
#include "parity/core/error.h"

namespace parity::statistics::detail {
namespace {

// Polygraphy's compute_min/compute_max of a stream (NaN wins; infinities count; 0 when empty).
double polygraphy_min(const StreamAccumulator& s, int64_t size) {
  if (size == 0) return 0;
  if (s.nonfinite.nan) return NAN;
  if (s.nonfinite.neginf) return -INFINITY;
  if (s.moments.n) return s.moments.min;
  return INFINITY;
}
double polygraphy_max(const StreamAccumulator& s, int64_t size) {
  if (size == 0) return 0;
  if (s.nonfinite.nan) return NAN;
  if (s.nonfinite.posinf) return INFINITY;
  if (s.moments.n) return s.moments.max;
  return -INFINITY;
}

Histogram histogram_from(const BinSpec& spec, const BinCounter& counter, double first, double last, bool supplied) {
  Histogram h;
  if (!spec.valid) {
    if (!spec.error.empty()) h.error = spec.error;
    else if (!std::isfinite(first) || !std::isfinite(last))
      h.error = std::string(supplied ? "supplied" : "autodetected") + " range is not finite";
    return h;
  }
  h.valid = true;
  h.edges = spec.edges;
  h.counts = counter.counts;
  return h;
}

}  // namespace


std::vector<double> error_levels(const PairStatisticsRequest& request) {
  std::vector<double> levels;
  if (request.error_quantile) levels.push_back(*request.error_quantile);
  return levels;
}

std::vector<double> stream_levels(bool is_bool, const std::vector<double>& extra) {
  std::vector<double> levels;
  if (!is_bool) levels = {0.9, 0.95, 0.99};
  levels.insert(levels.end(), extra.begin(), extra.end());
  return levels;
}

DisplayHistograms plan_display_histograms(const PairStatisticsRequest& request, int64_t n, DType dtype0, DType dtype1,
                                          Work abs_work, Work rel_work, const StreamAccumulator& a,
                                          const StreamAccumulator& b, const StreamAccumulator& abs,
                                          const StreamAccumulator& rel_all, const StreamAccumulator& rel_nonzero,
                                          int64_t mismatches) {
  DisplayHistograms d;
  const StatisticsStyle style = request.histogram_style;
  d.parity_bins = style == StatisticsStyle::kParity;
  d.count = request.histograms && !(request.histograms_only_if_mismatched && mismatches == 0);
  if (!request.histograms) return d;
  bool have_range = false;
  if (style == StatisticsStyle::kPolygraphy) {
    // Python's min(min0, min1) / max(max0, max1): the first argument wins unless the second
    // compares smaller/larger (so a NaN in the first wins, one in the second is ignored).
    double min0 = polygraphy_min(a, n), min1 = polygraphy_min(b, n);
    double max0 = polygraphy_max(a, n), max1 = polygraphy_max(b, n);
    d.range_first = min1 < min0 ? min1 : min0;
    d.range_last = max1 > max0 ? max1 : max0;
    have_range = true;
    d.abs_first = polygraphy_min(abs, n);
    d.abs_last = polygraphy_max(abs, n);
    d.rel_first = polygraphy_min(rel_all, n);
    d.rel_last = polygraphy_max(rel_all, n);
  } else {
    const Moments& m0 = a.moments;
    const Moments& m1 = b.moments;
    if (m0.n || m1.n) {
      const bool take_min1 = !m0.n || (m1.n && m1.min < m0.min);
      const bool take_max1 = !m0.n || (m1.n && m1.max > m0.max);
      d.range_first = take_min1 ? m1.min : m0.min;
      d.range_last = take_max1 ? m1.max : m0.max;
      have_range = true;
    }
    d.abs_first = abs.moments.n ? abs.moments.min : NAN;
    d.abs_last = abs.moments.n ? abs.moments.max : NAN;
    d.rel_first = rel_nonzero.moments.n ? rel_nonzero.moments.min : NAN;
    d.rel_last = rel_nonzero.moments.n ? rel_nonzero.moments.max : NAN;
  }
  if (n == 0) {  // np.histogram of nothing: range (0, 1)
    d.abs_first = d.rel_first = 0;
    d.abs_last = d.rel_last = 1;
  }
  if (have_range) {
    d.spec0 = BinSpec::supplied_range(d.range_first, d.range_last, dtype0);
    d.spec1 = BinSpec::supplied_range(d.range_first, d.range_last, dtype1);
  }
  d.spec_abs = BinSpec::data_range(d.abs_first, d.abs_last, abs_work);
  d.spec_rel = BinSpec::data_range(d.rel_first, d.rel_last, rel_work);
  return d;
}

PairStatistics assemble_pair_statistics(const PairStatisticsRequest& request, int64_t n, const Shape& shape,
                                        const PairTypes& types, const PairStreams& streams,
                                        const DisplayHistograms& display,
                                        const std::array<std::array<int64_t, 10>, 4>& bin_counts) {
  const std::vector<double> errors = error_levels(request);
  const StreamTraits t0{cast_up_work(types.dtype0), QuantileArithmetic::of(types.dtype0), types.dtype0 == DType::kBool};
  const StreamTraits t1{cast_up_work(types.dtype1), QuantileArithmetic::of(types.dtype1), types.dtype1 == DType::kBool};
  const StreamTraits tabs{types.abs_work, QuantileArithmetic::of_work(types.abs_work), types.xor_error};
  const StreamTraits trel{types.rel_work, QuantileArithmetic::of_work(types.rel_work), false};
  PairStatistics out;
  auto fill = [&](TensorSummary& s, DType dtype, const StreamAccumulator& acc_view, const StreamTraits& traits,
                  const RankValue& value, std::span<const double> extra, const NumpyNumbers& numbers) {
    s.dtype = dtype;
    s.shape = shape;
    s.size = n;
    s.is_bool = traits.is_bool;
    s.nan_count = acc_view.nonfinite.nan;
    s.posinf_count = acc_view.nonfinite.posinf;
    s.neginf_count = acc_view.nonfinite.neginf;
    s.polygraphy =
        polygraphy_statistics(acc_view.moments, acc_view.nonfinite, n, traits, value, extra, shape, &numbers);
    s.finite = finite_statistics(acc_view.moments, n, traits, value, extra, shape, &numbers);
  };
  fill(out.out0, types.dtype0, *streams.a, t0, streams.value0, {}, streams.numbers[0]);
  fill(out.out1, types.dtype1, *streams.b, t1, streams.value1, {}, streams.numbers[1]);
  fill(out.absdiff, work_dtype(types.abs_work), *streams.abs, tabs, streams.value_abs, errors, streams.numbers[2]);
  // Relative error: Polygraphy's numbers over every element, Parity's over non-zero references.
  const StreamAccumulator& nonzero = *streams.rel_nonzero;
  out.reldiff.dtype = work_dtype(types.rel_work);
  out.reldiff.shape = shape;
  out.reldiff.size = n;
  out.reldiff.nan_count = nonzero.nonfinite.nan;
  out.reldiff.posinf_count = nonzero.nonfinite.posinf;
  out.reldiff.neginf_count = nonzero.nonfinite.neginf;
  out.reldiff.excluded_count = streams.zero_references;
  out.reldiff.polygraphy = polygraphy_statistics(streams.rel_all->moments, streams.rel_all->nonfinite, n, trel,
                                                 streams.value_rel_all, errors, shape, &streams.numbers[3]);
  out.reldiff.finite =
      finite_statistics(nonzero.moments, n, trel, streams.value_rel_nonzero, errors, shape, &streams.numbers[3]);

  out.absdiff_single = types.abs_work == Work::kFloat32;
  out.reldiff_single = types.rel_work == Work::kFloat32;
  out.mismatch_count = streams.mismatches;
  out.zero_reference_count = streams.zero_references;
  out.max_absdiff_at_zero_reference = streams.max_abs_at_zero;
  out.reference_floating = types.reference_floating;

  if (display.count) {
    BinCounter counters[4];
    for (std::size_t i = 0; i < 4; ++i) counters[i].counts = bin_counts[i];
    out.histogram0 = histogram_from(display.spec0, counters[0], display.range_first, display.range_last, true);
    out.histogram1 = histogram_from(display.spec1, counters[1], display.range_first, display.range_last, true);
    out.histogram_abs = histogram_from(display.spec_abs, counters[2], display.abs_first, display.abs_last, false);
    out.histogram_rel = histogram_from(display.spec_rel, counters[3], display.rel_first, display.rel_last, false);
    if (display.parity_bins && !std::isfinite(display.abs_first)) out.histogram_abs.error = "no finite values";
    if (display.parity_bins && !std::isfinite(display.rel_first)) out.histogram_rel.error = "no finite values";
  }
  return out;
}

PairStatistics general_pair_statistics(const TensorView& out0, const TensorView& out1, const Shape& shape,
                                       const PairStatisticsRequest& request) {
  return visit_work(cast_up_work(out0.dtype()), [&]<typename T0>() {
    return general_pair_statistics_first<T0>(out0, out1, shape, request);
  });
}

}  // namespace parity::statistics::detail

namespace parity::statistics {

std::vector<int64_t> mismatch_indices(const TensorView& out0, const TensorView& out1,
                                      const PairStatisticsRequest& request, int64_t limit) {
  return detail::visit_work(detail::cast_up_work(out0.dtype()), [&]<typename T0>() {
    return detail::mismatch_indices_first<T0>(out0, out1, request, limit);
  });
}

PairStatistics compute_pair_statistics(const TensorView& out0, const TensorView& out1, const Shape& shape,
                                       const PairStatisticsRequest& request) {
  if (out0.size() != out1.size())
    raise<InternalError>("compute_pair_statistics: {} vs {} elements", out0.size(), out1.size());
  if (auto fast = detail::float_pair_statistics(out0, out1, shape, request)) return std::move(*fast);
  if (auto fast = detail::bool_pair_statistics(out0, out1, shape, request)) return std::move(*fast);
  return detail::general_pair_statistics(out0, out1, shape, request);
}

PairSums pair_sums(const TensorView& a, const TensorView& b) {
  PairSums s;
  const int64_t n = a.size();
  double scratch0[detail::kChunk], scratch1[detail::kChunk];
  for (int64_t base = 0; base < n; base += detail::kChunk) {
    int64_t count = std::min(detail::kChunk, n - base);
    const double* xs = detail::load_chunk<double>(a, base, count, scratch0);
    const double* ys = detail::load_chunk<double>(b, base, count, scratch1);
    for (int64_t j = 0; j < count; ++j) {
      double d = xs[j] - ys[j];
      s.squared_error += d * d;
      s.dot += xs[j] * ys[j];
      s.square0 += xs[j] * xs[j];
      s.square1 += ys[j] * ys[j];
    }
  }
  s.count = n;
  return s;
}

ErrorSummary summarize_error(const TensorView& output, const TensorView& reference) {
  if (output.size() != reference.size())
    raise<InvalidInputError>("summarize_error: the output has {} elements, the reference {}", output.size(),
                             reference.size());
  PairStatistics statistics = compute_pair_statistics(output, reference, reference.shape(), {});
  return ErrorSummary{std::move(statistics.absdiff), std::move(statistics.reldiff)};
}

}  // namespace parity::statistics
