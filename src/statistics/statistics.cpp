#include "parity/statistics/statistics.h"

#include <cmath>

#include <fmt/format.h>

#include "streaming_statistics.h"
#include "parity/core/python_format.h"
#include "parity/core/error.h"

namespace parity::statistics {

using namespace detail;

double Statistics::quantile(double q) const {
  for (std::size_t i = 0; i < quantile_levels.size(); ++i)
    if (quantile_levels[i] == q) return quantile_values[i];
  return NAN;
}

int64_t Histogram::total() const {
  int64_t t = 0;
  for (int64_t c : counts) t += c;
  return t;
}

namespace {

template <typename T>
TensorSummary summarize_typed(const TensorView& t, const SummaryOptions& options) {
  const int64_t n = t.size();
  const WorkPlan plan = plan_work(n);
  const int workers = plan.workers();
  const double wrap = abs_wrap_value(t.dtype());
  // numpy: np.mean(x, dtype=float32) casts unless x is float32; var/std are float32 on float32
  // work types, over the cast-up array (a separate sum for float16 data).
  const bool buffered = t.dtype() != DType::kFloat32;
  const bool variance = work_of<T>() == Work::kFloat32;
  const bool separate_variance = variance && buffered;

  const bool by_histogram = n > kSelectByCopyLimit;
  std::vector<StreamAccumulator> parts(static_cast<std::size_t>(workers));
  std::vector<StreamSums> sums(static_cast<std::size_t>(workers));
  for (int w = 0; w < workers; ++w) {
    if (by_histogram) parts[static_cast<std::size_t>(w)].enable_histogram();
    auto [begin, end] = plan.ranges[static_cast<std::size_t>(w)];
    sums[static_cast<std::size_t>(w)].init(buffered, false, variance, separate_variance, begin, end);
  }
  run_ranges(plan, [&](int w, int64_t begin, int64_t end) {
    StreamAccumulator& acc = parts[static_cast<std::size_t>(w)];
    StreamSums& sum = sums[static_cast<std::size_t>(w)];
    T scratch[kChunk];
    for (int64_t base = begin; base < end; base += kChunk) {
      int64_t count = std::min(kChunk, end - base);
      const T* values = load_chunk<T>(t, base, count, scratch);
      for (int64_t j = 0; j < count; ++j) {
        double magnitude = magnitude_of(values[j], wrap);
        acc.add(values[j], magnitude, base + j);
        sum.add(static_cast<float>(values[j]), static_cast<float>(magnitude), static_cast<float>(values[j]));
      }
    }
  });
  StreamAccumulator acc = std::move(parts[0]);
  for (std::size_t w = 1; w < parts.size(); ++w) acc.merge(parts[w]);
  const float var_mean = variance ? variance_mean(sums, n, plan.depth) : 0.0f;

  StreamTraits traits;
  traits.work = work_of<T>();
  traits.quantile = QuantileArithmetic::of(t.dtype());
  traits.is_bool = t.dtype() == DType::kBool;

  std::vector<double> levels;
  if (options.percentiles && !traits.is_bool) levels = {0.9, 0.95, 0.99};
  for (double q : options.extra_quantiles) levels.push_back(q);

  // Ranks wanted in the finite values' order: for the finite view and for Polygraphy's.
  std::vector<uint64_t> ranks;
  RankPlan finite_plan{acc.moments.n, 0, acc.moments.n};
  add_median_ranks(finite_plan, ranks);
  for (double q : levels) add_quantile_ranks(finite_plan, q, ranks);
  const NonFinite& nf = acc.nonfinite;
  RankPlan full_plan{n, nf.neginf, acc.moments.n};
  if (nf.nan == 0) {
    add_median_ranks(full_plan, ranks);
    for (double q : levels) add_quantile_ranks(full_plan, q, ranks);
  }

  OrderSelector<T> selector;
  if (by_histogram) selector.begin(acc.histogram, std::move(ranks));
  else selector.begin_by_copy(static_cast<uint64_t>(acc.moments.n), std::move(ranks));
  bool first_pass = true;
  while (selector.needs_pass() || (first_pass && variance && n > 0)) {
    const bool select = selector.needs_pass(), squares = first_pass && variance;
    std::vector<typename OrderSelector<T>::PassState> states;
    for (int w = 0; w < workers; ++w) states.push_back(selector.make_pass_state());
    run_ranges(plan, [&](int w, int64_t begin, int64_t end) {
      auto& state = states[static_cast<std::size_t>(w)];
      StreamSums& sum = sums[static_cast<std::size_t>(w)];
      T scratch[kChunk];
      for (int64_t base = begin; base < end; base += kChunk) {
        int64_t count = std::min(kChunk, end - base);
        const T* values = load_chunk<T>(t, base, count, scratch);
        for (int64_t j = 0; j < count; ++j) {
          if (select && is_finite_value(values[j])) selector.offer(state, values[j]);
          if (squares) sum.add_square(static_cast<float>(values[j]), var_mean);
        }
      }
    });
    for (std::size_t w = 1; w < states.size(); ++w) states[0].merge(states[w]);
    if (select) selector.finish_pass(states[0]);
    first_pass = false;
  }
  const NumpyNumbers numbers = numpy_numbers(sums, n, plan.depth);
  RankValue value = [&](uint64_t rank) { return static_cast<double>(selector.value(rank)); };

  // The standard levels are always in Statistics; extra ones follow.
  std::vector<double> extra = options.extra_quantiles;
  TensorSummary summary;
  summary.dtype = t.dtype();
  summary.shape = t.shape();
  summary.size = n;
  summary.is_bool = traits.is_bool;
  summary.nan_count = nf.nan;
  summary.posinf_count = nf.posinf;
  summary.neginf_count = nf.neginf;
  StreamTraits stats_traits = traits;
  if (!options.percentiles) stats_traits.is_bool = true;  // no standard levels
  summary.polygraphy = polygraphy_statistics(acc.moments, nf, n, stats_traits, value, extra, t.shape(), &numbers);
  summary.finite = finite_statistics(acc.moments, n, stats_traits, value, extra, t.shape(), &numbers);
  return summary;
}

std::string index_text(const Statistics& s, const std::vector<int64_t>& index) {
  if (s.state == Statistics::State::kEmpty) return "0";
  return python_tuple_repr(index);
}

}  // namespace

TensorSummary summarize(const TensorView& tensor, const SummaryOptions& options) {
  Work work = cast_up_work(tensor.dtype());
  return visit_work(work, [&]<typename T>() { return summarize_typed<T>(tensor, options); });
}

NonFiniteCounts count_nonfinite(const TensorView& tensor) {
  return visit_work(cast_up_work(tensor.dtype()), [&]<typename T>() {
    NonFiniteCounts counts;
    if constexpr (std::is_floating_point_v<T>) {
      T scratch[kChunk];
      const int64_t n = tensor.size();
      for (int64_t base = 0; base < n; base += kChunk) {
        int64_t count = std::min(kChunk, n - base);
        const T* values = load_chunk<T>(tensor, base, count, scratch);
        for (int64_t j = 0; j < count; ++j) {
          T v = values[j];
          if (std::isfinite(v)) [[likely]] continue;
          if (std::isnan(v)) ++counts.nan;
          else if (v > 0) ++counts.posinf;
          else ++counts.neginf;
        }
      }
    }
    return counts;
  });
}

std::string format_statistics(const Statistics& s, bool is_bool) {
  std::string out = fmt::format(
      "mean={}, std-dev={}, var={}, median={}, min={} at {}, max={} at {}, avg-magnitude={}",
      format_g(s.mean, 5), format_g(s.std_dev, 5), format_g(s.variance, 5), format_g(s.median, 5),
      format_g(s.min, 5), index_text(s, s.argmin), format_g(s.max, 5), index_text(s, s.argmax),
      format_g(s.avg_magnitude, 5));
  if (!is_bool)
    out += fmt::format(", p90={}, p95={}, p99={}", format_g(s.quantile(0.9), 5), format_g(s.quantile(0.95), 5),
                       format_g(s.quantile(0.99), 5));
  return out;
}

std::string format_stats_line(const TensorSummary& summary, StatisticsStyle style, std::string_view label) {
  std::string out = label.empty() ? std::string() : std::string(label) + " | Stats: ";
  if (style == StatisticsStyle::kPolygraphy) return out + format_statistics(summary.polygraphy, summary.is_bool);
  const Statistics& s = summary.finite;
  if (s.state == Statistics::State::kEmpty) out += "empty tensor";
  else if (s.state == Statistics::State::kNoFiniteValues)
    out += (summary.nan_count || summary.inf_count()) ? "no finite values" : "no elements with a non-zero reference";
  else out += format_statistics(s, summary.is_bool);
  if (summary.nan_count || summary.inf_count())
    out += fmt::format(" | NaN: {}, Inf: {}", summary.nan_count, summary.inf_count());
  if (summary.excluded_count)
    out += fmt::format(" | {} element(s) with zero reference (excluded)", summary.excluded_count);
  return out;
}

// ------------------------------------------------------------------------------------------------
// Histograms
// ------------------------------------------------------------------------------------------------
namespace {

template <typename T>
Histogram histogram_typed(const TensorView& t, const std::optional<HistogramRange>& given, StatisticsStyle style) {
  Histogram h;
  const int64_t n = t.size();
  BinSpec spec;
  double first = 0, last = 0;
  if (given) {
    first = given->first;
    last = given->last;
    spec = BinSpec::supplied_range(first, last, t.dtype());
  } else {
    // np.histogram's own range: a.min(), a.max() (NaN-propagating), or the finite ones for Parity.
    if (n == 0) {
      first = 0;
      last = 1;
    } else {
      double lo = INFINITY, hi = -INFINITY;
      bool nan = false;
      T scratch[kChunk];
      for (int64_t base = 0; base < n; base += kChunk) {
        int64_t count = std::min(kChunk, n - base);
        const T* values = load_chunk<T>(t, base, count, scratch);
        for (int64_t j = 0; j < count; ++j) {
          double v = static_cast<double>(values[j]);
          if (std::isnan(v)) { nan = true; continue; }
          if (style == StatisticsStyle::kParity && !std::isfinite(v)) continue;
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
      }
      if (style == StatisticsStyle::kPolygraphy && nan) lo = hi = NAN;
      if (style == StatisticsStyle::kParity && lo > hi) return h;  // no finite values: no histogram
      first = lo;
      last = hi;
    }
    spec = t.dtype() == DType::kFloat16 ? BinSpec::data_range_half(first, last)
                                         : BinSpec::data_range(first, last, work_of<T>());
  }
  if (!spec.valid) {
    if (!spec.error.empty()) {
      h.error = spec.error;
      return h;
    }
    h.error = fmt::format("{} range of [{}, {}] is not finite", given ? "supplied" : "autodetected",
                          python_float_repr(first), python_float_repr(last));
    return h;
  }
  h.valid = true;
  h.edges = spec.edges;
  BinCounter counter;
  counter.spec = &spec;
  T scratch[kChunk];
  for (int64_t base = 0; base < n; base += kChunk) {
    int64_t count = std::min(kChunk, n - base);
    const T* values = load_chunk<T>(t, base, count, scratch);
    for (int64_t j = 0; j < count; ++j) counter.add(static_cast<double>(values[j]));
  }
  h.counts = counter.counts;
  return h;
}

}  // namespace

Histogram histogram(const TensorView& tensor, const std::optional<HistogramRange>& range, StatisticsStyle style) {
  Work work = cast_up_work(tensor.dtype());
  return visit_work(work, [&]<typename T>() { return histogram_typed<T>(tensor, range, style); });
}

std::string format_histogram(const Histogram& h) {
  if (!h.valid) return "";
  int64_t max_count = 0;
  for (int64_t c : h.counts) max_count = std::max(max_count, c);
  if (max_count == 0) return "None";
  std::array<std::string, 11> edges;
  std::size_t start_width = 0, end_width = 0;
  for (std::size_t i = 0; i < 11; ++i) {
    edges[i] = format_g(h.edges[i], 3);
    start_width = std::max(start_width, edges[i].size());
    if (i > 0) end_width = std::max(end_width, edges[i].size());
  }
  std::string out = "---- Histogram ----\n";
  out += pad_right("Bin Range", start_width + end_width + 5) + "|  Num Elems | Visualization";
  for (std::size_t i = 0; i < 10; ++i) {
    auto bar = static_cast<std::size_t>(40.0 * static_cast<double>(h.counts[i]) / static_cast<double>(max_count));
    out += fmt::format("\n({}, {}) | {:>10} | {}", pad_right(edges[i], start_width), pad_right(edges[i + 1], end_width),
                       h.counts[i], std::string(bar, '#'));
  }
  return out;
}

std::optional<HistogramRange> common_histogram_range(const TensorSummary& out0, const TensorSummary& out1,
                                                     StatisticsStyle style) {
  HistogramRange range;
  if (style == StatisticsStyle::kPolygraphy) {
    // Python's min(a, b) keeps a unless b < a; max(a, b) keeps a unless b > a.
    double min0 = out0.polygraphy.min, min1 = out1.polygraphy.min;
    double max0 = out0.polygraphy.max, max1 = out1.polygraphy.max;
    range.first = min1 < min0 ? min1 : min0;
    range.last = max1 > max0 ? max1 : max0;
    return range;
  }
  bool has0 = out0.finite.state == Statistics::State::kValues;
  bool has1 = out1.finite.state == Statistics::State::kValues;
  if (!has0 && !has1) return std::nullopt;
  range.first = !has1 ? out0.finite.min : !has0 ? out1.finite.min : std::min(out0.finite.min, out1.finite.min);
  range.last = !has1 ? out0.finite.max : !has0 ? out1.finite.max : std::max(out0.finite.max, out1.finite.max);
  return range;
}

}  // namespace parity::statistics
