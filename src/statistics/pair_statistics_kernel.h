// The general pair-statistics kernel: every pair of work types (numpy's cast-up of each output's
// dtype), NaN and Inf, infinities compared equal or not. Included only by the files that
// instantiate it for their group of first work types (pair_statistics_kernel_*.cpp), so the
// 6 x 6 x 2 instantiations compile as separate units.
#pragma once

#include <array>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "pair_statistics_internal.h"
#include "streaming_statistics.h"

namespace parity::statistics::detail::kernel {

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


}  // namespace parity::statistics::detail::kernel

namespace parity::statistics::detail {

template <typename T0>
PairStatistics general_pair_statistics_first(const TensorView& a, const TensorView& b, const Shape& shape,
                                             const PairStatisticsRequest& request) {
  return visit_work(cast_up_work(b.dtype()), [&]<typename T1>() {
    if (request.infinities_compare_equal) return kernel::pair_statistics_typed<T0, T1, true>(a, b, shape, request);
    return kernel::pair_statistics_typed<T0, T1, false>(a, b, shape, request);
  });
}

template <typename T0>
std::vector<int64_t> mismatch_indices_first(const TensorView& a, const TensorView& b,
                                            const PairStatisticsRequest& request, int64_t limit) {
  return visit_work(cast_up_work(b.dtype()), [&]<typename T1>() {
    if (request.infinities_compare_equal) return kernel::mismatch_indices_typed<T0, T1, true>(a, b, request, limit);
    return kernel::mismatch_indices_typed<T0, T1, false>(a, b, request, limit);
  });
}

}  // namespace parity::statistics::detail
