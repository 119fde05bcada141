#include "parity/statistics/pair_statistics.h"

#include "pair_statistics_internal.h"

#include <array>
#include <cmath>

#include "streaming_statistics.h"
#include "parity/core/error.h"

namespace parity::statistics::detail {
namespace {

// numpy's result type of a - b for two cast-up work types (bool - bool is handled apart).
constexpr Work promote(Work a, Work b) {
  if (a == b) return a;
  if (a == Work::kBool) return b;
  if (b == Work::kBool) return a;
  auto is_float = [](Work w) { return w == Work::kFloat32 || w == Work::kFloat64; };
  if (is_float(a) && is_float(b)) return Work::kFloat64;
  if (is_float(a) || is_float(b)) return Work::kFloat64;  // any int with a float: float64
  if ((a == Work::kInt32 && b == Work::kInt64) || (a == Work::kInt64 && b == Work::kInt32)) return Work::kInt64;
  return Work::kFloat64;  // signed int with uint64
}

template <Work W> using TypeOf = typename WorkType<W>::type;

// kInfEqual: with infinities_compare_equal, Polygraphy's util.array.where(cond, 0, absdiff) turns
// the 0 into an int64 array, so numpy promotes the error to float64 (int64 for int32/int64 errors).
template <typename T0, typename T1, bool kInfEqual>
struct PairArithmetic {
  static constexpr bool kXor = std::is_same_v<T0, uint8_t> && std::is_same_v<T1, uint8_t>;
  static constexpr Work kSubtractWork = kXor ? Work::kBool : promote(work_of<T0>(), work_of<T1>());
  static constexpr Work kAbsWork =
      (!kInfEqual || kXor) ? kSubtractWork
      : (kSubtractWork == Work::kInt32 || kSubtractWork == Work::kInt64) ? Work::kInt64 : Work::kFloat64;
  using D = TypeOf<kSubtractWork>;  // type of |a - b|
  using C = TypeOf<kAbsWork>;       // type of the absolute error after the inf fix-up
  using R = std::conditional_t<std::is_same_v<C, float>, float, double>;

  static inline C absdiff(T0 x, T1 y) {
    if constexpr (kXor) {
      return static_cast<C>(x != y);
    } else if constexpr (std::is_floating_point_v<D>) {
      D d = std::fabs(static_cast<D>(x) - static_cast<D>(y));
      if constexpr (kInfEqual && std::is_floating_point_v<T0>) {
        if (std::isinf(x) && static_cast<double>(x) == static_cast<double>(y)) return C{0};
      }
      return static_cast<C>(d);
    } else if constexpr (std::is_signed_v<D>) {
      using U = std::make_unsigned_t<D>;
      D diff = static_cast<D>(static_cast<U>(static_cast<D>(x)) - static_cast<U>(static_cast<D>(y)));
      return static_cast<C>(diff < 0 ? static_cast<D>(U{0} - static_cast<U>(diff)) : diff);  // abs(INT_MIN) wraps
    } else {
      return static_cast<C>(static_cast<D>(static_cast<D>(x) - static_cast<D>(y)));
    }
  }

  // |reference| after Polygraphy's epsilon, in the reference's own type.
  static inline T1 reference_magnitude(T1 y) {
    if constexpr (std::is_floating_point_v<T1>) {
      if (y == 0) return static_cast<T1>(kRelativeEpsilon);
      return std::fabs(y);
    } else if constexpr (std::is_signed_v<T1>) {
      using U = std::make_unsigned_t<T1>;
      return y < 0 ? static_cast<T1>(U{0} - static_cast<U>(y)) : y;
    } else {
      return y;
    }
  }
};

template <typename T>
double type_min_wrap() {
  if constexpr (std::is_signed_v<T> && std::is_integral_v<T>) return static_cast<double>(std::numeric_limits<T>::min());
  else return NAN;
}

struct FirstPassState {
  StreamAccumulator a, b, abs, rel_nonzero, rel_zero;
  int64_t mismatches = 0;
  int64_t zero_references = 0;
  double max_abs_at_zero = 0;
  void enable_histograms() {
    a.enable_histogram();
    b.enable_histogram();
    abs.enable_histogram();
    rel_nonzero.enable_histogram();
    rel_zero.enable_histogram();
  }
  void merge(const FirstPassState& o) {
    a.merge(o.a);
    b.merge(o.b);
    abs.merge(o.abs);
    rel_nonzero.merge(o.rel_nonzero);
    rel_zero.merge(o.rel_zero);
    mismatches += o.mismatches;
    zero_references += o.zero_references;
    max_abs_at_zero = std::max(max_abs_at_zero, o.max_abs_at_zero);
  }
};

template <typename T0, typename T1, bool kInfEqual>
PairStatistics pair_statistics_typed(const TensorView& a, const TensorView& b, const Shape& shape,
                                     const PairStatisticsRequest& request) {
  using Arith = PairArithmetic<T0, T1, kInfEqual>;
  using C = typename Arith::C;
  using R = typename Arith::R;
  const int64_t n = a.size();
  const WorkPlan plan = plan_work(n);
  const int workers = plan.workers();
  const double wrap0 = abs_wrap_value(a.dtype()), wrap1 = abs_wrap_value(b.dtype());
  const double wrap_abs = type_min_wrap<C>();
  const double atol = request.atol;
  const C atol_c = static_cast<C>(std::is_floating_point_v<C> ? atol : 0);
  const R rtol_r = static_cast<R>(request.rtol);

  // Applies fn(i, x, y, d, r, zero_reference) to every element of [begin, end).
  auto for_each = [&](int64_t begin, int64_t end, auto&& fn) {
    T0 scratch0[kChunk];
    T1 scratch1[kChunk];
    for (int64_t base = begin; base < end; base += kChunk) {
      int64_t count = std::min(kChunk, end - base);
      const T0* xs = load_chunk<T0>(a, base, count, scratch0);
      const T1* ys = load_chunk<T1>(b, base, count, scratch1);
      for (int64_t j = 0; j < count; ++j) {
        T0 x = xs[j];
        T1 y = ys[j];
        C d = Arith::absdiff(x, y);
        R r = static_cast<R>(d) / static_cast<R>(Arith::reference_magnitude(y));
        fn(base + j, x, y, d, r, y == 0);
      }
    }
  };

  // ---- Pass 1: moments, NaN/Inf, radix buckets, numpy's float32 sums, verdict ----
  // numpy's mean casts (8192-value buffers) unless the array is float32; var/std are float32
  // two-pass sums on float32 work types (float16 outputs: over their float32 copy).
  enum { kA, kB, kAbs, kRel };
  std::array<std::vector<StreamSums>, 4> sums;
  for (auto& v : sums) v.resize(static_cast<std::size_t>(workers));
  const bool variance0 = work_of<T0>() == Work::kFloat32, variance1 = work_of<T1>() == Work::kFloat32;
  const bool buffered0 = a.dtype() != DType::kFloat32, buffered1 = b.dtype() != DType::kFloat32;
  constexpr bool kAbsSingle = std::is_same_v<C, float>, kRelSingle = std::is_same_v<R, float>;
  for (int w = 0; w < workers; ++w) {
    auto [begin, end] = plan.ranges[static_cast<std::size_t>(w)];
    std::size_t k = static_cast<std::size_t>(w);
    sums[kA][k].init(buffered0, false, variance0, variance0 && buffered0, begin, end);
    sums[kB][k].init(buffered1, false, variance1, variance1 && buffered1, begin, end);
    sums[kAbs][k].init(!kAbsSingle, true, kAbsSingle, false, begin, end);
    sums[kRel][k].init(!kRelSingle, false, kRelSingle, false, begin, end);
  }
  const bool by_histogram = n > kSelectByCopyLimit;
  std::vector<FirstPassState> parts(static_cast<std::size_t>(workers));
  if (by_histogram)
    for (auto& p : parts) p.enable_histograms();
  run_ranges(plan, [&](int w, int64_t begin, int64_t end) {
    FirstPassState& s = parts[static_cast<std::size_t>(w)];
    StreamSums& sum0 = sums[kA][static_cast<std::size_t>(w)];
    StreamSums& sum1 = sums[kB][static_cast<std::size_t>(w)];
    StreamSums& sum_abs = sums[kAbs][static_cast<std::size_t>(w)];
    StreamSums& sum_rel = sums[kRel][static_cast<std::size_t>(w)];
    for_each(begin, end, [&](int64_t i, T0 x, T1 y, C d, R r, bool zero_reference) {
      const double m0 = magnitude_of(x, wrap0), m1 = magnitude_of(y, wrap1);
      s.a.add(x, m0, i);
      s.b.add(y, m1, i);
      s.abs.add(d, magnitude_of(d, wrap_abs), i);
      sum0.add(static_cast<float>(x), static_cast<float>(m0), static_cast<float>(x));
      sum1.add(static_cast<float>(y), static_cast<float>(m1), static_cast<float>(y));
      sum_abs.add(static_cast<float>(d), 0.0f, 0.0f);
      sum_rel.add(static_cast<float>(r), static_cast<float>(std::fabs(r)), 0.0f);
      if (zero_reference) [[unlikely]] {
        s.rel_zero.add(r, std::fabs(static_cast<double>(r)), i);
        ++s.zero_references;
        if (is_finite_value(d)) s.max_abs_at_zero = std::max(s.max_abs_at_zero, static_cast<double>(d));
      } else {
        s.rel_nonzero.add(r, std::fabs(static_cast<double>(r)), i);
      }
      bool abs_fail;
      if constexpr (std::is_floating_point_v<C>) abs_fail = d > atol_c || std::isnan(d);
      else abs_fail = static_cast<double>(d) > atol;
      bool rel_fail = r > rtol_r || std::isnan(r);
      s.mismatches += (abs_fail && rel_fail) ? 1 : 0;
    });
  });
  FirstPassState acc = std::move(parts[0]);
  for (std::size_t w = 1; w < parts.size(); ++w) acc.merge(parts[w]);
  parts.clear();
  const float var_mean0 = variance0 ? variance_mean(sums[kA], n, plan.depth) : 0.0f;
  const float var_mean1 = variance1 ? variance_mean(sums[kB], n, plan.depth) : 0.0f;
  const float var_mean_abs = kAbsSingle ? variance_mean(sums[kAbs], n, plan.depth) : 0.0f;
  const float var_mean_rel = kRelSingle ? variance_mean(sums[kRel], n, plan.depth) : 0.0f;
  const bool any_variance = variance0 || variance1 || kAbsSingle || kRelSingle;

  const bool has_zero = acc.zero_references > 0;
  StreamAccumulator rel_all = acc.rel_nonzero;
  if (has_zero) rel_all.merge(acc.rel_zero);

  // ---- Which ranks each stream needs ----
  const std::vector<double> errors = error_levels(request);

  auto ranks_for = [&](const StreamAccumulator& s, int64_t size, const std::vector<double>& levels, bool finite_view,
                       bool polygraphy_view) {
    std::vector<uint64_t> ranks;
    if (finite_view) {
      RankPlan plan{s.moments.n, 0, s.moments.n};
      add_median_ranks(plan, ranks);
      for (double q : levels) add_quantile_ranks(plan, q, ranks);
    }
    if (polygraphy_view && s.nonfinite.nan == 0) {
      RankPlan plan{size, s.nonfinite.neginf, s.moments.n};
      add_median_ranks(plan, ranks);
      for (double q : levels) add_quantile_ranks(plan, q, ranks);
    }
    return ranks;
  };

  const auto levels0 = stream_levels(a.dtype() == DType::kBool, {}),
             levels1 = stream_levels(b.dtype() == DType::kBool, {});
  const auto levels_abs = stream_levels(Arith::kXor, errors), levels_rel = stream_levels(false, errors);

  OrderSelector<T0> select0;
  OrderSelector<T1> select1;
  OrderSelector<C> select_abs;
  OrderSelector<R> select_rel_nonzero;
  OrderSelector<R> select_rel_all;
  auto begin_selection = [&](auto& selector, const StreamAccumulator& stream, std::vector<uint64_t> ranks) {
    if (by_histogram) selector.begin(stream.histogram, std::move(ranks));
    else selector.begin_by_copy(static_cast<uint64_t>(stream.moments.n), std::move(ranks));
  };
  begin_selection(select0, acc.a, ranks_for(acc.a, n, levels0, true, true));
  begin_selection(select1, acc.b, ranks_for(acc.b, n, levels1, true, true));
  begin_selection(select_abs, acc.abs, ranks_for(acc.abs, n, levels_abs, true, true));
  begin_selection(select_rel_nonzero, acc.rel_nonzero, ranks_for(acc.rel_nonzero, n, levels_rel, true, !has_zero));
  if (has_zero) begin_selection(select_rel_all, rel_all, ranks_for(rel_all, n, levels_rel, false, true));

  // ---- Display histograms (numpy.histogram over the ranges Polygraphy uses) ----
  const DisplayHistograms display =
      plan_display_histograms(request, n, a.dtype(), b.dtype(), work_of<C>(), work_of<R>(), acc.a, acc.b, acc.abs,
                              rel_all, acc.rel_nonzero, acc.mismatches);
  const BinSpec &spec0 = display.spec0, &spec1 = display.spec1, &spec_abs = display.spec_abs,
                &spec_rel = display.spec_rel;
  const bool count_bins = display.count;
  const bool parity_bins = display.parity_bins;

  // ---- Refining passes (and the histogram counts, in the first one) ----
  bool first_pass = true;
  BinCounter bins0, bins1, bins_abs, bins_rel;
  bins0.spec = &spec0;
  bins1.spec = &spec1;
  bins_abs.spec = &spec_abs;
  bins_rel.spec = &spec_rel;
  while (select0.needs_pass() || select1.needs_pass() || select_abs.needs_pass() ||
         select_rel_nonzero.needs_pass() || select_rel_all.needs_pass() ||
         (first_pass && (count_bins || (any_variance && n > 0)))) {
    const bool need0 = select0.needs_pass(), need1 = select1.needs_pass(), need_abs = select_abs.needs_pass();
    const bool need_nz = select_rel_nonzero.needs_pass(), need_all = select_rel_all.needs_pass();
    const bool bins = first_pass && count_bins;
    const bool squares = first_pass && any_variance;
    struct Worker {
      typename OrderSelector<T0>::PassState s0;
      typename OrderSelector<T1>::PassState s1;
      typename OrderSelector<C>::PassState sabs;
      typename OrderSelector<R>::PassState snz, sall;
      BinCounter b0, b1, babs, brel;
    };
    std::vector<Worker> states(static_cast<std::size_t>(workers));
    for (auto& w : states) {
      w.s0 = select0.make_pass_state();
      w.s1 = select1.make_pass_state();
      w.sabs = select_abs.make_pass_state();
      w.snz = select_rel_nonzero.make_pass_state();
      w.sall = select_rel_all.make_pass_state();
      w.b0.spec = &spec0;
      w.b1.spec = &spec1;
      w.babs.spec = &spec_abs;
      w.brel.spec = &spec_rel;
    }
    run_ranges(plan, [&](int wi, int64_t begin, int64_t end) {
      Worker& w = states[static_cast<std::size_t>(wi)];
      StreamSums& sum0 = sums[kA][static_cast<std::size_t>(wi)];
      StreamSums& sum1 = sums[kB][static_cast<std::size_t>(wi)];
      StreamSums& sum_abs = sums[kAbs][static_cast<std::size_t>(wi)];
      StreamSums& sum_rel = sums[kRel][static_cast<std::size_t>(wi)];
      for_each(begin, end, [&](int64_t, T0 x, T1 y, C d, R r, bool zero_reference) {
        if (squares) {
          if (variance0) sum0.add_square(static_cast<float>(x), var_mean0);
          if (variance1) sum1.add_square(static_cast<float>(y), var_mean1);
          if constexpr (kAbsSingle) sum_abs.add_square(static_cast<float>(d), var_mean_abs);
          if constexpr (kRelSingle) sum_rel.add_square(static_cast<float>(r), var_mean_rel);
        }
        if (need0 && is_finite_value(x)) select0.offer(w.s0, x);
        if (need1 && is_finite_value(y)) select1.offer(w.s1, y);
        if (need_abs && is_finite_value(d)) select_abs.offer(w.sabs, d);
        if (is_finite_value(r)) {
          if (need_nz && !zero_reference) select_rel_nonzero.offer(w.snz, r);
          if (need_all) select_rel_all.offer(w.sall, r);
        }
        if (bins) {
          if (spec0.valid) w.b0.add(static_cast<double>(x));
          if (spec1.valid) w.b1.add(static_cast<double>(y));
          if (spec_abs.valid) w.babs.add(static_cast<double>(d));
          if (spec_rel.valid && !(parity_bins && zero_reference)) w.brel.add(static_cast<double>(r));
        }
      });
    });
    for (std::size_t i = 1; i < states.size(); ++i) {
      states[0].s0.merge(states[i].s0);
      states[0].s1.merge(states[i].s1);
      states[0].sabs.merge(states[i].sabs);
      states[0].snz.merge(states[i].snz);
      states[0].sall.merge(states[i].sall);
      states[0].b0.merge(states[i].b0);
      states[0].b1.merge(states[i].b1);
      states[0].babs.merge(states[i].babs);
      states[0].brel.merge(states[i].brel);
    }
    if (need0) select0.finish_pass(states[0].s0);
    if (need1) select1.finish_pass(states[0].s1);
    if (need_abs) select_abs.finish_pass(states[0].sabs);
    if (need_nz) select_rel_nonzero.finish_pass(states[0].snz);
    if (need_all) select_rel_all.finish_pass(states[0].sall);
    if (bins) {
      bins0.counts = states[0].b0.counts;
      bins1.counts = states[0].b1.counts;
      bins_abs.counts = states[0].babs.counts;
      bins_rel.counts = states[0].brel.counts;
    }
    first_pass = false;
  }

  // ---- Summaries ----
  PairStreams streams;
  streams.point_at(acc.a, acc.b, acc.abs, acc.rel_nonzero, rel_all);
  streams.value0 = [&](uint64_t r) { return static_cast<double>(select0.value(r)); };
  streams.value1 = [&](uint64_t r) { return static_cast<double>(select1.value(r)); };
  streams.value_abs = [&](uint64_t r) { return static_cast<double>(select_abs.value(r)); };
  streams.value_rel_nonzero = [&](uint64_t r) { return static_cast<double>(select_rel_nonzero.value(r)); };
  streams.value_rel_all = has_zero ? RankValue([&](uint64_t r) { return static_cast<double>(select_rel_all.value(r)); })
                                   : streams.value_rel_nonzero;
  streams.numbers = {numpy_numbers(sums[kA], n, plan.depth), numpy_numbers(sums[kB], n, plan.depth),
                     numpy_numbers(sums[kAbs], n, plan.depth), numpy_numbers(sums[kRel], n, plan.depth)};
  streams.mismatches = acc.mismatches;
  streams.zero_references = acc.zero_references;
  streams.max_abs_at_zero = acc.max_abs_at_zero;
  const PairTypes types{a.dtype(), b.dtype(), work_of<C>(), work_of<R>(), Arith::kXor, std::is_floating_point_v<T1>};
  PairStatistics out = assemble_pair_statistics(request, n, shape, types, streams, display,
                                                {bins0.counts, bins1.counts, bins_abs.counts, bins_rel.counts});

  if (request.small_values) {
    out.absdiff_values = Tensor::zeros(work_dtype(work_of<C>()), shape);
    out.reldiff_values = Tensor::zeros(work_dtype(work_of<R>()), shape);
    C* abs_data = static_cast<C*>(out.absdiff_values.mutable_raw());
    R* rel_data = static_cast<R*>(out.reldiff_values.mutable_raw());
    for_each(0, n, [&](int64_t i, T0, T1, C d, R r, bool) {
      abs_data[i] = d;
      rel_data[i] = r;
    });
  }
  return out;
}

template <typename T0, typename T1, bool kInfEqual>
std::vector<int64_t> mismatch_indices_typed(const TensorView& a, const TensorView& b,
                                            const PairStatisticsRequest& request, int64_t limit) {
  using Arith = PairArithmetic<T0, T1, kInfEqual>;
  using C = typename Arith::C;
  using R = typename Arith::R;
  std::vector<int64_t> out;
  const int64_t n = a.size();
  const C atol_c = static_cast<C>(std::is_floating_point_v<C> ? request.atol : 0);
  const R rtol_r = static_cast<R>(request.rtol);
  T0 scratch0[kChunk];
  T1 scratch1[kChunk];
  for (int64_t base = 0; base < n && static_cast<int64_t>(out.size()) < limit; base += kChunk) {
    int64_t count = std::min(kChunk, n - base);
    const T0* xs = load_chunk<T0>(a, base, count, scratch0);
    const T1* ys = load_chunk<T1>(b, base, count, scratch1);
    for (int64_t j = 0; j < count && static_cast<int64_t>(out.size()) < limit; ++j) {
      C d = Arith::absdiff(xs[j], ys[j]);
      R r = static_cast<R>(d) / static_cast<R>(Arith::reference_magnitude(ys[j]));
      bool abs_fail;
      if constexpr (std::is_floating_point_v<C>) abs_fail = d > atol_c || std::isnan(d);
      else abs_fail = static_cast<double>(d) > request.atol;
      if (abs_fail && (r > rtol_r || std::isnan(r))) out.push_back(base + j);
    }
  }
  return out;
}

}  // namespace

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
  Work w0 = cast_up_work(out0.dtype()), w1 = cast_up_work(out1.dtype());
  return visit_work(w0, [&]<typename T0>() {
    return visit_work(w1, [&]<typename T1>() {
      if (request.infinities_compare_equal) return pair_statistics_typed<T0, T1, true>(out0, out1, shape, request);
      return pair_statistics_typed<T0, T1, false>(out0, out1, shape, request);
    });
  });
}

}  // namespace parity::statistics::detail

namespace parity::statistics {

std::vector<int64_t> mismatch_indices(const TensorView& out0, const TensorView& out1,
                                      const PairStatisticsRequest& request, int64_t limit) {
  detail::Work w0 = detail::cast_up_work(out0.dtype()), w1 = detail::cast_up_work(out1.dtype());
  return detail::visit_work(w0, [&]<typename T0>() {
    return detail::visit_work(w1, [&]<typename T1>() {
      if (request.infinities_compare_equal)
        return detail::mismatch_indices_typed<T0, T1, true>(out0, out1, request, limit);
      return detail::mismatch_indices_typed<T0, T1, false>(out0, out1, request, limit);
    });
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
