// The float32 x float32 fast path of the pair statistics: the numbers of pair_statistics.cpp's
// general kernel, bit for bit, at a fraction of its cost.
//
// Pass 1 (vectorised chunk kernels): both errors, numpy's float32 sums, min/max with their first
// index, the verdict counts. Pass 2: the variance's squares, the display histograms' counts, and
// for each order statistic a window of values around it. The windows come from a sample of every
// stream: for each wanted rank, the sample's values some standard deviations (of the sample rank)
// either side bound the true value with overwhelming probability; pass 2 counts the values below
// each window and keeps those inside, and the rank is selected among them. A window that misses
// its rank (or NaN/Inf, or a float32 sum that overflows) hands the tensor to the general kernel,
// so the numbers never depend on the sample (window_selection.h holds the windows' part). Outputs
// with the same bits (two runs of one backend, the exact layers of two) have errors of +0 and
// equal statistics: only the first is measured.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>

#include "float_kernels.h"
#include "parity/core/thread_pool.h"
#include "../pair_statistics_internal.h"
#include "rank_selection.h"
#include "window_selection.h"

namespace parity::statistics::detail {
namespace {

constexpr int64_t kFastMinimum = 512;  // smaller pairs: the general kernel is as fast (measured)

// min/max with their first index, over one chunk of a stream whose extremes are `mm`.
inline void update_extremes(Moments& m, const float* v, int64_t count, int64_t base, kernels::MinMax mm) {
  if (mm.min < m.min) {
    int64_t j = kernels::first_equal(v, count, mm.min);
    m.min = static_cast<double>(v[j]);
    m.argmin = base + j;
  }
  if (mm.max > m.max) {
    int64_t j = kernels::first_equal(v, count, mm.max);
    m.max = static_cast<double>(v[j]);
    m.argmax = base + j;
  }
  m.n += count;
}

enum Stream { kX, kY, kAbs, kRel, kRelNonzero, kStreams };

// Moments::add(v, v, ...) for each of values[0, count), but for the min/max and their indices
// (pass 1 finds those): the shifted sums over the non-zero references' relative errors, from their
// compacted values, with no branch on which references are zero.
void add_shifted_sums(Moments& m, const float* values, int64_t count) {
  if (count == 0) return;
  if (m.n == 0) m.shift = static_cast<double>(values[0]);
  double sums[3] = {m.s1, m.s2, m.sabs};
  kernels::shifted_sums(values, count, m.shift, sums);
  m.s1 = sums[0];
  m.s2 = sums[1];
  m.sabs = sums[2];
  m.n += count;
}

struct Scratch {
  std::unique_ptr<float[]> d{new float[kChunk]}, r{new float[kChunk]}, mx{new float[kChunk]}, my{new float[kChunk]};
};

// Visits the nodes of numpy's pairwise tree over [begin, begin + length) that hold at most kChunk
// values (>= 128, so each is a whole subtree), left to right, and adds their sums up the tree as
// numpy does: visit(base, count, sums) fills the node's sums of `Streams` streams.
template <int Streams, typename Visit>
void tree_chunks(int64_t begin, int64_t length, Visit& visit, float* sums) {
  if (length <= kChunk) {
    visit(begin, length, sums);
    return;
  }
  int64_t half = length / 2;
  half -= half % 8;
  float left[Streams], right[Streams];
  tree_chunks<Streams>(begin, half, visit, left);
  tree_chunks<Streams>(begin + half, length - half, visit, right);
  for (int k = 0; k < Streams; ++k) sums[k] = left[k] + right[k];
}

// Whether the two outputs may hold the same bits: their ends do. Outputs of two backends differ
// almost everywhere, so this usually decides; pass 1 compares the rest chunk by chunk.
bool ends_match(const float* x, const float* y, int64_t n) {
  if (x == y) return true;
  const int64_t edge = std::min<int64_t>(n, 64);
  const std::size_t edge_bytes = static_cast<std::size_t>(edge) * sizeof(float);
  return std::memcmp(x, y, edge_bytes) == 0 && std::memcmp(x + n - edge, y + n - edge, edge_bytes) == 0;
}

// Whether two histogram specs bin every value alike.
bool same_binning(const BinSpec& a, const BinSpec& b) {
  return a.valid == b.valid && a.supplied == b.supplied && a.arithmetic == b.arithmetic &&
         a.keep_first == b.keep_first && a.keep_last == b.keep_last && a.first_bin == b.first_bin &&
         a.denominator == b.denominator && a.edges == b.edges && a.error == b.error;
}

// A stream of `count` zeros starting at `base`, as update_extremes records it (the first index).
inline void add_zeros(Moments& m, int64_t count, int64_t base) {
  if (0.0 < m.min) {
    m.min = 0.0;
    m.argmin = base;
  }
  if (0.0 > m.max) {
    m.max = 0.0;
    m.argmax = base;
  }
  m.n += count;
}

// Pass 1's sums, in pairwise_sums32's stream order.
enum SumStream { kSumX, kSumMagnitudeX, kSumY, kSumMagnitudeY, kSumAbs, kSumRel, kSumStreams };

// One worker's pass-1 state.
struct FirstPass {
  Moments m[kStreams];
  kernels::Verdict verdict;
  bool finite = true;
  std::vector<float> sample[kStreams];
};

// The sample positions a worker has yet to reach, ascending.
struct SampleCursor {
  std::vector<int64_t>::const_iterator next, end;
  // The next positions below `stop`, as offsets from `base`.
  template <typename Take>
  void take_below(int64_t base, int64_t stop, const Take& take) {
    for (; next != end && *next < stop; ++next) take(static_cast<std::size_t>(*next - base));
  }
};

// Pass 1 over a chunk of outputs with the same bits: out0's numbers, and both errors +0 (so a
// mismatch only where a tolerance is negative, and every zero of out0 a zero reference).
void first_pass_identical(FirstPass& f, const float* xs, int64_t count, int64_t base, float atol, float rtol,
                          float* magnitudes, SampleCursor& samples, float* node_sums) {
  kernels::MinMax x_extremes;
  int64_t zeros = 0;
  if (!kernels::magnitudes(xs, count, magnitudes, x_extremes, zeros)) {
    f.finite = false;
    return;
  }
  samples.take_below(base, base + count, [&](std::size_t j) { f.sample[kX].push_back(xs[j]); });
  const float* streams[2] = {xs, magnitudes};  // kSumX, kSumMagnitudeX
  pairwise_sums32(streams, 2, count, node_sums);
  update_extremes(f.m[kX], xs, count, base, x_extremes);
  add_zeros(f.m[kAbs], count, base);
  add_zeros(f.m[kRel], count, base);
  f.verdict.mismatches += (0.0f > atol && 0.0f > rtol) ? count : 0;
  f.verdict.zero_references += zeros;
  if (zeros < count && f.m[kRelNonzero].argmin < 0) {
    int64_t j = 0;
    while (xs[j] == 0) ++j;
    add_zeros(f.m[kRelNonzero], 0, base + j);
  }
  f.m[kRelNonzero].n += count - zeros;
}

// Pass 1 over a chunk of two outputs: both errors, the sums, extremes and verdict counts.
void first_pass_pair(FirstPass& f, const float* xs, const float* ys, int64_t count, int64_t base, float epsilon,
                     float atol, float rtol, Scratch& s, SampleCursor& samples, float* node_sums) {
  kernels::ChunkExtremes extremes;
  const int64_t zeros_before = f.verdict.zero_references;
  if (!kernels::errors(xs, ys, count, epsilon, atol, rtol, s.d.get(), s.r.get(), s.mx.get(), s.my.get(), extremes,
                       f.verdict)) {
    f.finite = false;
    return;
  }
  samples.take_below(base, base + count, [&](std::size_t j) {
    f.sample[kX].push_back(xs[j]);
    f.sample[kY].push_back(ys[j]);
    f.sample[kAbs].push_back(s.d[j]);
    f.sample[kRel].push_back(s.r[j]);
    if (ys[j] != 0) f.sample[kRelNonzero].push_back(s.r[j]);
  });
  // r >= +0: |r| is r, bit for bit (the errors' avg-magnitude is their mean).
  const float* streams[kSumStreams] = {xs, s.mx.get(), ys, s.my.get(), s.d.get(), s.r.get()};
  pairwise_sums32(streams, kSumStreams, count, node_sums);
  update_extremes(f.m[kX], xs, count, base, extremes.x);
  update_extremes(f.m[kY], ys, count, base, extremes.y);
  update_extremes(f.m[kAbs], s.d.get(), count, base, extremes.d);
  update_extremes(f.m[kRel], s.r.get(), count, base, extremes.r);
  const int64_t nonzero_in_chunk = count - (f.verdict.zero_references - zeros_before);
  const kernels::MinMax nz = extremes.r_nonzero;
  Moments& m = f.m[kRelNonzero];
  m.n += nonzero_in_chunk;
  if (!extremes.any_nonzero) return;
  auto first_at = [&](float value) {
    for (int64_t j = 0; j < count; ++j)
      if (ys[j] != 0 && s.r[static_cast<std::size_t>(j)] == value) return j;
    return count;
  };
  if (nz.min < m.min) {
    int64_t j = first_at(nz.min);
    m.min = static_cast<double>(s.r[static_cast<std::size_t>(j)]);
    m.argmin = base + j;
  }
  if (nz.max > m.max) {
    int64_t j = first_at(nz.max);
    m.max = static_cast<double>(s.r[static_cast<std::size_t>(j)]);
    m.argmax = base + j;
  }
}

// What pass 2 does to every chunk: the variance's means, which display histograms to count, and
// the streams' selections to offer values to.
struct SecondPlan {
  float epsilon;
  float means[4];
  const Selection* selections;
  const DisplayHistograms* display;
  bool count_bins_of[4];
  bool bins_nonzero_only, y_bins_from_x, has_zero;
};

// One worker's pass-2 state.
struct SecondPass {
  WindowState windows[kStreams];
  std::array<std::array<int64_t, 10>, 4> bins{};
  Moments nonzero;
};

// Pass 2 over a chunk of outputs with the same bits: the errors are constant, so neither binned
// nor windowed, and their squares are zero.
void second_pass_identical(const SecondPlan& plan, SecondPass& state, const float* xs, int64_t count, float* squares,
                           float* node_sums) {
  kernels::squared_deviations(xs, count, plan.means[kX], squares);
  pairwise_sums32(&squares, 1, count, node_sums);
  node_sums[kY] = node_sums[kX];
  node_sums[kAbs] = node_sums[kRel] = 0.0f;
  if (plan.count_bins_of[0]) kernels::count_bins(xs, count, plan.display->spec0, state.bins[0]);
  if (plan.count_bins_of[1] && !plan.y_bins_from_x) kernels::count_bins(xs, count, plan.display->spec1, state.bins[1]);
  state.windows[kX].offer(plan.selections[kX], xs, count);
}

// Pass 2 over a chunk of two outputs: the squares, the display histograms' counts, the non-zero
// references' moments, and every stream's values offered to its selection.
void second_pass_pair(const SecondPlan& plan, SecondPass& state, const float* xs, const float* ys, int64_t count,
                      Scratch& s, float* const* squares, float* nonzero, float* node_sums) {
  kernels::differences_and_squares(xs, ys, count, plan.epsilon, plan.means, s.d.get(), s.r.get(), squares);
  const float* stream[4] = {xs, ys, s.d.get(), s.r.get()};
  pairwise_sums32(squares, 4, count, node_sums);
  int64_t nonzero_in_chunk = 0;
  if (plan.has_zero) {
    nonzero_in_chunk = kernels::select_nonzero_reference(s.r.get(), ys, count, nonzero);
    add_shifted_sums(state.nonzero, nonzero, nonzero_in_chunk);
  }
  const DisplayHistograms& display = *plan.display;
  if (plan.count_bins_of[0]) kernels::count_bins(xs, count, display.spec0, state.bins[0]);
  if (plan.count_bins_of[1]) kernels::count_bins(ys, count, display.spec1, state.bins[1]);
  if (plan.count_bins_of[2]) kernels::count_bins(s.d.get(), count, display.spec_abs, state.bins[2]);
  if (plan.count_bins_of[3]) {
    if (plan.bins_nonzero_only) kernels::count_bins(nonzero, nonzero_in_chunk, display.spec_rel, state.bins[3]);
    else kernels::count_bins(s.r.get(), count, display.spec_rel, state.bins[3]);
  }
  for (int k = 0; k < kRelNonzero; ++k) state.windows[k].offer(plan.selections[k], stream[k], count);
  if (plan.has_zero) state.windows[kRelNonzero].offer(plan.selections[kRelNonzero], nonzero, nonzero_in_chunk);
}

}  // namespace

std::optional<PairStatistics> float_pair_statistics(const TensorView& a, const TensorView& b, const Shape& shape,
                                                    const PairStatisticsRequest& request) {
  const int64_t n = a.size();
  if (a.dtype() != DType::kFloat32 || b.dtype() != DType::kFloat32 || n < kFastMinimum || request.small_values)
    return std::nullopt;
  const float* x = static_cast<const float*>(a.raw());
  const float* y = static_cast<const float*>(b.raw());
  const WorkPlan plan = plan_work(n);
  const std::size_t workers = static_cast<std::size_t>(plan.workers());
  const float epsilon = static_cast<float>(kRelativeEpsilon);
  const float atol = static_cast<float>(request.atol), rtol = static_cast<float>(request.rtol);
  // Two runs of one backend, or the exact layers of two, give the same bits: then both errors are
  // +0 throughout and out1's statistics are out0's, so only out0 is measured. Pass 1 assumes so
  // while the ends agree, compares each chunk before measuring it, and on the first difference
  // stops and starts again measuring both.
  bool identical = ends_match(x, y, n);
  std::atomic<bool> differ{false};

  // numpy's float32 sums, per worker (the ranges are nodes of numpy's pairwise tree, and each
  // worker's chunks are nodes of its range's subtree).
  std::array<std::vector<float>, kSumStreams> sums;  // sums[stream][worker]
  std::array<std::vector<float>, 4> squares;         // squares[kX..kRel][worker]
  for (auto& v : sums) v.assign(workers, 0.0f);
  for (auto& v : squares) v.assign(workers, 0.0f);

  // Where each stream is sampled to place its windows (large streams only); pass 1 takes the
  // values while their chunk is at hand.
  std::optional<SampleStrata> strata;
  // Outputs with the same bits have one stream to place windows for, on one thread, while their
  // windows' selections share the pool: a smaller sample (as for n / 4) balances the two.
  if (n > kCopyLimit) strata.emplace(n, sample_size(identical ? n / 4 : n));

  // ---- Pass 1 ----
  std::vector<FirstPass> first(workers);
  auto pass1 = [&](int wi, int64_t begin, int64_t end) {
    const std::size_t w = static_cast<std::size_t>(wi);
    FirstPass& f = first[w];
    Scratch s;
    const std::vector<int64_t> positions = strata ? strata->positions_in(begin, end) : std::vector<int64_t>{};
    SampleCursor samples{positions.begin(), positions.end()};
    for (auto& v : f.sample) v.reserve(positions.size());
    auto visit = [&](int64_t base, int64_t count, float* node_sums) {
      for (int k = 0; k < kSumStreams; ++k) node_sums[k] = 0.0f;
      if (!f.finite) return;
      const float* xs = x + base;
      const float* ys = y + base;
      if (!identical) {
        first_pass_pair(f, xs, ys, count, base, epsilon, atol, rtol, s, samples, node_sums);
        return;
      }
      if (differ.load(std::memory_order_relaxed) ||
          (xs != ys && std::memcmp(xs, ys, static_cast<std::size_t>(count) * sizeof(float)) != 0)) {
        differ.store(true, std::memory_order_relaxed);
        return;
      }
      first_pass_identical(f, xs, count, base, atol, rtol, s.mx.get(), samples, node_sums);
    };
    float worker_sums[kSumStreams];
    tree_chunks<kSumStreams>(begin, end - begin, visit, worker_sums);
    for (int k = 0; k < kSumStreams; ++k) sums[static_cast<std::size_t>(k)][w] = worker_sums[k];
  };
  run_ranges(plan, pass1);
  if (identical && differ.load()) {
    identical = false;
    first.assign(workers, FirstPass{});
    run_ranges(plan, pass1);
  }
  // With the same bits, out1's numbers are out0's: its stream is not measured.
  auto measured = [identical](int k) { return !(identical && k == kY); };
  StreamAccumulator acc[kStreams];
  kernels::Verdict verdict;
  for (auto& f : first) {
    if (!f.finite) return std::nullopt;
    for (int k = 0; k < kStreams; ++k) acc[k].moments.merge(f.m[k]);
    verdict.mismatches += f.verdict.mismatches;
    verdict.zero_references += f.verdict.zero_references;
    verdict.max_abs_at_zero = std::max(verdict.max_abs_at_zero, f.verdict.max_abs_at_zero);
  }
  if (identical) {
    acc[kY] = acc[kX];
    sums[kSumY] = sums[kSumX];
    sums[kSumMagnitudeY] = sums[kSumMagnitudeX];
  }
  const bool has_zero = verdict.zero_references > 0;
  const int64_t nonzero_count = n - verdict.zero_references;
  // Pass 1 found only the count and min/max of the non-zero references; pass 2 adds their moments.
  if (!has_zero) acc[kRelNonzero] = acc[kRel];

  float total[kSumStreams];
  for (int k = 0; k < kSumStreams; ++k)
    total[k] = combine_worker_sums(sums[static_cast<std::size_t>(k)], n, plan.depth);
  const float means[4] = {variance_mean_of(total[kSumX], n), variance_mean_of(total[kSumY], n),
                          variance_mean_of(total[kSumAbs], n), variance_mean_of(total[kSumRel], n)};

  // ---- Order statistics: what each stream needs ----
  const std::vector<double> errors = error_levels(request);
  const std::vector<double> output_levels = stream_levels(false, {}), error_levels_all = stream_levels(false, errors);
  Selection selections[kStreams];
  const int streams_used = has_zero ? kStreams : kRelNonzero;
  for (int k = 0; k < streams_used; ++k) {
    Selection& sel = selections[k];
    sel.count = k == kRelNonzero ? nonzero_count : n;
    sel.ranks = wanted_ranks(sel.count, k < kAbs ? output_levels : error_levels_all);
  }
  {
    std::vector<float> sample[kStreams];
    for (int k = 0; k < kStreams; ++k) {
      std::size_t total = 0;
      for (auto& f : first) total += f.sample[k].size();
      sample[k].reserve(total);
      for (auto& f : first) sample[k].insert(sample[k].end(), f.sample[k].begin(), f.sample[k].end());
    }
    compute_thread_pool().parallel_for(streams_used, [&](int k) {
      if (!measured(k)) return;  // out0's selection answers
      Selection& sel = selections[k];
      // A constant stream (exact layers' errors are all zero) needs no pass at all.
      const Moments& m = acc[k].moments;
      sel.constant = sel.count > 0 && m.min == m.max;
      if (sel.constant) {
        sel.constant_value = positive_zero(static_cast<float>(m.min));
        return;
      }
      // A subset too thinly sampled to place windows is kept whole (it is then a small part of n).
      sel.copy_all = sel.count <= kCopyLimit || sample[k].size() < 1024;
      if (sel.ranks.empty() || sel.copy_all) return;
      plan_windows(sel, sample[k], static_cast<float>(acc[k].moments.min), static_cast<float>(acc[k].moments.max));
    });
  }

  // ---- Display histograms ----
  const DisplayHistograms display =
      plan_display_histograms(request, n, DType::kFloat32, DType::kFloat32, Work::kFloat32, Work::kFloat32, acc[kX],
                              acc[kY], acc[kAbs], acc[kRel], acc[kRelNonzero], verdict.mismatches);
  const bool bins_nonzero_only = display.parity_bins && has_zero;
  // The histograms of constant streams: every value falls in the bin of the first.
  const StreamAccumulator* binned[4] = {&acc[kX], &acc[kY], &acc[kAbs],
                                        bins_nonzero_only ? &acc[kRelNonzero] : &acc[kRel]};
  const BinSpec* specs[4] = {&display.spec0, &display.spec1, &display.spec_abs, &display.spec_rel};
  bool count_bins_of[4];
  for (std::size_t k = 0; k < 4; ++k) {
    const Moments& m = binned[k]->moments;
    count_bins_of[k] = display.count && specs[k]->valid && !(m.n > 0 && m.min == m.max);
  }
  // Outputs with the same bits binned alike (Polygraphy's shared range) have the same counts.
  const bool y_bins_from_x =
      identical && count_bins_of[0] && count_bins_of[1] && same_binning(display.spec0, display.spec1);

  // ---- Pass 2 ----
  SecondPlan second_plan{epsilon, {means[0], means[1], means[2], means[3]}, selections, &display,
                         {count_bins_of[0], count_bins_of[1], count_bins_of[2], count_bins_of[3]},
                         bins_nonzero_only, y_bins_from_x, has_zero};
  std::vector<SecondPass> second(workers);
  for (std::size_t w = 0; w < workers; ++w) {
    const auto [begin, end] = plan.ranges[w];
    for (int k = 0; k < streams_used; ++k) {
      if (!measured(k)) continue;
      const double part =
          static_cast<double>(end - begin) * static_cast<double>(selections[k].count) / static_cast<double>(n);
      second[w].windows[k].prepare(selections[k], part);
    }
  }
  run_ranges(plan, [&](int wi, int64_t begin, int64_t end) {
    const std::size_t w = static_cast<std::size_t>(wi);
    SecondPass& state = second[w];
    // Outputs with the same bits need one stream's squares and no error buffers.
    std::unique_ptr<float[]> squared(new float[(identical ? 1 : 4) * kChunk]);
    float* squares_of[4];
    for (std::size_t k = 0; k < 4; ++k) squares_of[k] = squared.get() + (identical ? 0 : k * kChunk);
    std::optional<Scratch> s;
    std::unique_ptr<float[]> nonzero;
    if (!identical) {
      s.emplace();
      if (has_zero) nonzero.reset(new float[kChunk + 16]);
    }
    auto visit = [&](int64_t base, int64_t count, float* node_sums) {
      if (identical) second_pass_identical(second_plan, state, x + base, count, squares_of[0], node_sums);
      else second_pass_pair(second_plan, state, x + base, y + base, count, *s, squares_of, nonzero.get(), node_sums);
    };
    float worker_squares[4];
    tree_chunks<4>(begin, end - begin, visit, worker_squares);
    for (std::size_t k = 0; k < 4; ++k) squares[k][w] = worker_squares[k];
  });

  // The selections are independent: one task per window (a stream's several windows, however many
  // streams are measured, share the pool), largest first.
  struct Task {
    int stream, window;  // window -1: the whole stream
    int64_t size;        // values kept (foretold), to order the tasks
  };
  std::vector<Task> tasks;
  std::vector<std::vector<const WindowState*>> parts(kStreams);
  for (int k = 0; k < streams_used; ++k) {
    if (!measured(k)) continue;
    for (auto& s : second) parts[static_cast<std::size_t>(k)].push_back(&s.windows[k]);
    const Selection& sel = selections[k];
    if (sel.constant || sel.copy_all) {
      tasks.push_back(Task{k, -1, sel.constant ? 0 : sel.count});
      continue;
    }
    // Every window's size as the sample foretold it (a half-open window's own values are only
    // known once it is resolved).
    for (std::size_t w = 0; w < sel.windows.size(); ++w)
      tasks.push_back(
          Task{k, static_cast<int>(w), static_cast<int64_t>(sel.windows[w].share * static_cast<double>(sel.count))});
  }
  std::stable_sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) { return a.size > b.size; });
  std::vector<RankValues> found(tasks.size());
  std::atomic<bool> resolved{true};
  compute_thread_pool().parallel_for(static_cast<int>(tasks.size()), [&](int t) {
    const Task& task = tasks[static_cast<std::size_t>(t)];
    const Selection& sel = selections[task.stream];
    const auto& stream_parts = parts[static_cast<std::size_t>(task.stream)];
    RankValues& values = found[static_cast<std::size_t>(t)];
    const bool ok = task.window < 0 ? resolve_whole(sel, stream_parts, values)
                                    : resolve_window(sel, static_cast<std::size_t>(task.window), stream_parts, values);
    if (!ok) resolved = false;
  });
  if (!resolved) return std::nullopt;
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    RankValues& values = selections[tasks[t].stream].values;
    values.insert(values.end(), found[t].begin(), found[t].end());
  }
  for (auto& sel : selections) std::sort(sel.values.begin(), sel.values.end());
  if (has_zero) {
    Moments nonzero;
    for (auto& s : second) nonzero.merge(s.nonzero);
    if (identical) nonzero.n = nonzero_count;  // relative errors of +0: their sums are zero
    const Moments& extremes = acc[kRelNonzero].moments;  // pass 1's, first indices included
    nonzero.min = extremes.min;
    nonzero.max = extremes.max;
    nonzero.argmin = extremes.argmin;
    nonzero.argmax = extremes.argmax;
    acc[kRelNonzero].moments = nonzero;
  }
  std::array<std::array<int64_t, 10>, 4> bins{};
  for (auto& s : second)
    for (std::size_t k = 0; k < 4; ++k)
      for (std::size_t i = 0; i < 10; ++i) bins[k][i] += s.bins[k][i];
  if (y_bins_from_x) bins[1] = bins[0];
  for (std::size_t k = 0; k < 4; ++k) {
    if (!display.count || !specs[k]->valid || count_bins_of[k]) continue;
    const int bin = specs[k]->bin(binned[k]->moments.min);
    if (bin >= 0) bins[k][static_cast<std::size_t>(bin)] += binned[k]->moments.n;
  }

  PairStreams streams;
  streams.point_at(acc[kX], acc[kY], acc[kAbs], acc[kRelNonzero], acc[kRel]);
  auto value_of = [&](int k) { return RankValue([&selections, k](uint64_t r) { return selections[k].value(r); }); };
  streams.value0 = value_of(kX);
  streams.value1 = value_of(identical ? kX : kY);
  streams.value_abs = value_of(kAbs);
  streams.value_rel_all = value_of(kRel);
  streams.value_rel_nonzero = has_zero ? value_of(kRelNonzero) : value_of(kRel);
  const float magnitude_x = total[kSumMagnitudeX], magnitude_y = total[kSumMagnitudeY];
  const float stream_sums[4] = {total[kSumX], total[kSumY], total[kSumAbs], total[kSumRel]};
  const float* magnitudes[4] = {&magnitude_x, &magnitude_y, nullptr, nullptr};
  for (std::size_t k = 0; k < 4; ++k) {
    const float squares_total = combine_worker_sums(squares[k], n, plan.depth);
    streams.numbers[k] = numpy_numbers_of(stream_sums[k], magnitudes[k], &squares_total, n);
    const NumpyNumbers& numbers = streams.numbers[k];
    // Overflowing float32 sums: the general kernel falls back to its float64 moments there.
    if (!std::isfinite(numbers.mean) || !std::isfinite(numbers.avg_magnitude) || !std::isfinite(numbers.variance))
      return std::nullopt;
  }
  streams.mismatches = verdict.mismatches;
  streams.zero_references = verdict.zero_references;
  streams.max_abs_at_zero = static_cast<double>(verdict.max_abs_at_zero);
  const PairTypes types{DType::kFloat32, DType::kFloat32, Work::kFloat32, Work::kFloat32, false, true};
  return assemble_pair_statistics(request, n, shape, types, streams, display, bins);
}

}  // namespace parity::statistics::detail
