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
// so the numbers never depend on the sample. Outputs with the same bits (two runs of one backend,
// the exact layers of two) have errors of +0 and equal statistics: only the first is measured.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>

#include "float_kernels.h"
#include "parity/core/thread_pool.h"
#include "pair_statistics_internal.h"
#include "rank_selection.h"

namespace parity::compare::detail {
namespace {

constexpr int64_t kFastMinimum = 4096;       // smaller pairs: the general kernel's fixed costs are small
constexpr int64_t kCopyLimit = int64_t{1} << 16;  // streams up to this size select within a copy
constexpr double kWindowSigmas = 5.0;

// A float buffer that grows without initialising.
class Floats {
 public:
  float* tail(int64_t room) {
    if (size_ + room > capacity_) grow(size_ + room);
    return data_.get() + size_;
  }
  void commit(int64_t added) { size_ += added; }
  void reserve(int64_t capacity) {
    if (capacity > capacity_) grow(capacity);
  }
  void append(const float* v, int64_t count) {
    if (count == 0) return;  // `v` may be an empty buffer's null
    std::memcpy(tail(count), v, static_cast<std::size_t>(count) * sizeof(float));
    size_ += count;
  }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  int64_t size() const { return size_; }

 private:
  void grow(int64_t needed) {
    int64_t capacity = std::max({needed, capacity_ * 2, int64_t{4096}});
    std::unique_ptr<float[]> bigger(new float[static_cast<std::size_t>(capacity)]);
    if (size_) std::memcpy(bigger.get(), data_.get(), static_cast<std::size_t>(size_) * sizeof(float));
    data_ = std::move(bigger);
    capacity_ = capacity;
  }
  std::unique_ptr<float[]> data_;
  int64_t size_ = 0, capacity_ = 0;
};

inline float positive_zero(float v) { return v + 0.0f; }  // -0 -> +0, as the radix keys read them

// ---- Order statistics from windows ----
struct Window {
  float low = 0, high = 0;
  // Whether the data may hold many copies of an end: then values equal to either end are counted,
  // not kept. Otherwise the window is half-open, [low, high): values equal to low are kept, those
  // equal to high are above it, and two comparisons a value place it.
  bool ties = true;
  std::vector<uint64_t> ranks;  // ascending
  double share = 1;             // the sample's fraction within the window: what pass 2 will keep
};

// One stream's selection: every value kept (small streams) or windows around the wanted ranks.
struct Selection {
  int64_t count = 0;
  std::vector<uint64_t> ranks;  // ascending, unique
  bool copy_all = false;
  bool constant = false;  // every value compares equal (min == max): each rank's value is that one
  float constant_value = 0;
  std::vector<Window> windows;     // those with ties first
  int tied = 0;                    // how many windows have ties
  std::vector<float> lows, highs;  // the windows' bounds, for the window kernels
  std::vector<std::pair<uint64_t, float>> values;  // rank -> value, once resolved

  double value(uint64_t rank) const {
    auto it = std::lower_bound(values.begin(), values.end(), rank,
                               [](const std::pair<uint64_t, float>& p, uint64_t r) { return p.first < r; });
    return static_cast<double>(it->second);
  }
};

std::vector<uint64_t> wanted_ranks(int64_t count, const std::vector<double>& levels) {
  std::vector<uint64_t> ranks;
  RankPlan plan{count, 0, count};
  add_median_ranks(plan, ranks);
  for (double q : levels) add_quantile_ranks(plan, q, ranks);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

// Windows around `selection.ranks` from a sample of the stream (left unchanged).
void plan_windows(Selection& selection, std::vector<float>& sample, float stream_min, float stream_max) {
  const double s = static_cast<double>(sample.size());
  const double n = static_cast<double>(selection.count);
  struct Interval {
    int64_t low, high;
    std::vector<uint64_t> ranks;
  };
  std::vector<Interval> intervals;
  for (uint64_t rank : selection.ranks) {
    double q = (static_cast<double>(rank) + 0.5) / n;
    double expected = q * s;
    double sigma = std::sqrt(s * q * (1 - q)) + 1;
    intervals.push_back(Interval{static_cast<int64_t>(std::floor(expected - kWindowSigmas * sigma - 1)),
                                 static_cast<int64_t>(std::ceil(expected + kWindowSigmas * sigma + 1)),
                                 {rank}});
  }
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) { return a.low < b.low; });
  std::vector<Interval> merged;
  for (auto& interval : intervals) {
    if (!merged.empty() && interval.low <= merged.back().high) {
      merged.back().high = std::max(merged.back().high, interval.high);
      merged.back().ranks.insert(merged.back().ranks.end(), interval.ranks.begin(), interval.ranks.end());
    } else {
      merged.push_back(std::move(interval));
    }
  }
  const int64_t size = static_cast<int64_t>(sample.size());
  // Each end and its neighbours in the sorted sample: an end equal to a neighbour is a value the
  // data may repeat many times.
  std::vector<int64_t> positions;
  auto add_around = [&](int64_t position) {
    for (int64_t p = position - 1; p <= position + 1; ++p)
      if (p >= 0 && p < size) positions.push_back(p);
  };
  for (auto& m : merged) {
    if (m.low >= 0) add_around(m.low);
    if (m.high < size) add_around(m.high);
  }
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  std::vector<float> at = select_float_ranks(sample.data(), size, positions);
  auto sample_value = [&](int64_t position) {
    return at[static_cast<std::size_t>(std::lower_bound(positions.begin(), positions.end(), position) - positions.begin())];
  };
  auto repeated = [&](int64_t position) {
    const float value = sample_value(position);
    return (position > 0 && sample_value(position - 1) == value) ||
           (position + 1 < size && sample_value(position + 1) == value);
  };
  std::vector<Window> windows;
  for (auto& m : merged) {
    Window w;
    w.low = m.low >= 0 ? sample_value(m.low) : positive_zero(stream_min);
    w.high = m.high < size ? sample_value(m.high) : positive_zero(stream_max);
    // An end taken from the stream's min or max is a value of the data: counted, as are repeated ones.
    w.ties = m.low < 0 || m.high >= size || !(w.low < w.high) || repeated(m.low) || repeated(m.high);
    w.ranks = std::move(m.ranks);
    w.share = static_cast<double>(std::min(m.high, size - 1) - std::max<int64_t>(m.low, 0) + 1) / s;
    std::sort(w.ranks.begin(), w.ranks.end());
    windows.push_back(std::move(w));
  }
  // The half-open windows share one buffer and one kernel call of at most four windows, in which a
  // value is kept once however many windows hold it; any further window counts its ties instead.
  int open = 0;
  for (auto& w : windows)
    if (!w.ties && ++open > kernels::kMaxHalfOpenWindows) w.ties = true;
  std::stable_partition(windows.begin(), windows.end(), [](const Window& w) { return w.ties; });
  for (auto& w : windows) {
    selection.tied += w.ties ? 1 : 0;
    selection.lows.push_back(w.low);
    selection.highs.push_back(w.high);
    selection.windows.push_back(std::move(w));
  }
}

// One worker's pass-2 state of a stream's selection.
struct WindowState {
  std::vector<kernels::WindowCounts> counts;
  std::vector<Floats> inside;  // a tied window's values
  Floats open;                 // the values of every half-open window, together
  Floats all;
  std::vector<float*> tails;
  std::vector<int64_t> taken;
  // For a worker offered `part` values of the stream: room for what the sample says it will keep
  // (with a margin), so the buffers do not grow and copy as they fill.
  void prepare(const Selection& selection, double part) {
    const std::size_t tied = static_cast<std::size_t>(selection.tied);
    counts.assign(selection.windows.size(), {});
    inside.resize(tied);
    const int64_t room = kChunk + 16;
    double open_share = 0;
    for (std::size_t w = 0; w < selection.windows.size(); ++w) {
      if (w < tied) inside[w].reserve(static_cast<int64_t>(selection.windows[w].share * part * 1.25) + room);
      else open_share += selection.windows[w].share;
    }
    if (open_share > 0) open.reserve(static_cast<int64_t>(open_share * part * 1.25) + room);
    if (selection.copy_all) all.reserve(static_cast<int64_t>(part) + room);
    tails.resize(tied);
    taken.resize(tied);
  }
  void offer(const Selection& selection, const float* v, int64_t n) {
    if (selection.copy_all) {
      all.append(v, n);
      return;
    }
    if (selection.windows.empty()) return;
    const int tied = selection.tied, open_count = static_cast<int>(selection.windows.size()) - tied;
    if (tied) {
      for (int w = 0; w < tied; ++w) tails[static_cast<std::size_t>(w)] = inside[static_cast<std::size_t>(w)].tail(n + 16);
      kernels::windows(v, n, tied, selection.lows.data(), selection.highs.data(), counts.data(), tails.data(),
                       taken.data());
      for (int w = 0; w < tied; ++w) inside[static_cast<std::size_t>(w)].commit(taken[static_cast<std::size_t>(w)]);
    }
    if (open_count)
      open.commit(kernels::half_open_windows(v, n, open_count, selection.lows.data() + tied,
                                             selection.highs.data() + tied, counts.data() + tied, open.tail(n + 16)));
  }
};

using RankValues = std::vector<std::pair<uint64_t, float>>;

// Every rank's value of a constant stream, or of one whose values were all kept; false when the
// kept values are not the whole stream.
bool resolve_whole(const Selection& selection, const std::vector<const WindowState*>& workers, RankValues& values) {
  if (selection.constant) {
    for (uint64_t rank : selection.ranks) values.emplace_back(rank, selection.constant_value);
    return true;
  }
  Floats all;
  for (const WindowState* w : workers) all.append(w->all.data(), w->all.size());
  if (all.size() != selection.count) return false;
  std::vector<int64_t> positions(selection.ranks.begin(), selection.ranks.end());
  std::vector<float> found = select_float_ranks(all.data(), all.size(), positions);
  for (std::size_t i = 0; i < positions.size(); ++i) values.emplace_back(selection.ranks[i], found[i]);
  return true;
}

// The values of window `index`'s ranks from the workers' counts and kept values; false when the
// window missed one of them.
bool resolve_window(const Selection& selection, std::size_t index, const std::vector<const WindowState*>& workers,
                    RankValues& values) {
  const Window& window = selection.windows[index];
  kernels::WindowCounts total;
  Floats inside;
  for (const WindowState* w : workers) {
    total.below += w->counts[index].below;
    total.at_low += w->counts[index].at_low;
    total.at_high += w->counts[index].at_high;
    if (index < static_cast<std::size_t>(selection.tied)) {
      inside.append(w->inside[index].data(), w->inside[index].size());
    } else {  // this window's share of the half-open windows' values
      kernels::WindowCounts ignored;
      inside.commit(kernels::half_open_windows(w->open.data(), w->open.size(), 1, &window.low, &window.high, &ignored,
                                               inside.tail(w->open.size() + 16)));
    }
  }
  std::vector<int64_t> inner;  // positions within `inside`
  std::vector<uint64_t> pending;
  for (uint64_t rank : window.ranks) {
    int64_t offset = static_cast<int64_t>(rank) - total.below;
    if (offset < 0) return false;
    if (offset < total.at_low) {
      values.emplace_back(rank, window.low);
      continue;
    }
    offset -= total.at_low;
    if (offset < inside.size()) {
      inner.push_back(offset);
      pending.push_back(rank);
      continue;
    }
    offset -= inside.size();
    if (offset < total.at_high) {
      values.emplace_back(rank, window.high);
      continue;
    }
    return false;
  }
  std::vector<float> found = select_float_ranks_within(inside.data(), inside.size(), inner, window.low, window.high);
  for (std::size_t i = 0; i < pending.size(); ++i) values.emplace_back(pending[i], found[i]);
  return true;
}

// Strata of equal width, one pseudo-random position in each (fixed seed: runs are reproducible).
// Stratum i is [floor(i n / count), floor((i + 1) n / count)); each worker generates the
// positions within its own range.
class SampleStrata {
 public:
  SampleStrata(int64_t n, int64_t count) : n_(n), count_(count), step_(n / count), extra_(n % count) {}

  // The positions within [begin, end), ascending.
  std::vector<int64_t> positions_in(int64_t begin, int64_t end) const {
    std::vector<int64_t> positions;
    if (begin >= end) return positions;
    // From the stratum holding `begin`, each stratum's end advances by n / count, plus one
    // whenever the remainders n % count add up past count.
    int64_t i = static_cast<int64_t>(static_cast<unsigned __int128>(begin) * static_cast<uint64_t>(count_) /
                                     static_cast<uint64_t>(n_));
    while (i > 0 && start_of(i) > begin) --i;
    while (i + 1 < count_ && start_of(i + 1) <= begin) ++i;
    int64_t start = start_of(i);
    int64_t remainder = static_cast<int64_t>(static_cast<unsigned __int128>(i) * static_cast<uint64_t>(extra_) %
                                             static_cast<uint64_t>(count_));
    positions.reserve(static_cast<std::size_t>((end - begin) / std::max<int64_t>(step_, 1) + 2));
    uint64_t state = (kGolden ^ static_cast<uint64_t>(n_)) + static_cast<uint64_t>(i) * kGolden;
    for (; i < count_ && start < end; ++i) {
      state += kGolden;
      uint64_t z = state;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      remainder += extra_;
      const int64_t carry = remainder >= count_ ? 1 : 0;
      remainder -= carry * count_;
      const int64_t stop = start + step_ + carry;
      const auto offset = (static_cast<unsigned __int128>(z) * static_cast<uint64_t>(stop - start)) >> 64;
      const int64_t position = start + static_cast<int64_t>(offset);
      if (position >= begin) positions.push_back(position);
      start = stop;
    }
    // The last stratum may end past `end`, and its position with it.
    while (!positions.empty() && positions.back() >= end) positions.pop_back();
    return positions;
  }

 private:
  static constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;
  int64_t start_of(int64_t i) const {
    return i * step_ + static_cast<int64_t>(static_cast<unsigned __int128>(i) * static_cast<uint64_t>(extra_) /
                                            static_cast<uint64_t>(count_));
  }
  int64_t n_, count_, step_, extra_;
};

// The windows hold about 11 / sqrt(s) of a stream for a sample of s (median, p90, p95 and p99 at
// 5 sigmas), and selecting within the sample costs about s: (5.5 n)^(2/3) balances the two.
int64_t sample_size(int64_t n) {
  double wanted = std::cbrt(5.5 * static_cast<double>(n));
  wanted *= wanted;
  return std::min<int64_t>(n, std::clamp<int64_t>(static_cast<int64_t>(wanted), 8192, int64_t{1} << 20));
}

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
  struct First {
    Moments m[kStreams];
    kernels::Verdict verdict;
    bool finite = true;
    std::vector<float> sample[kStreams];
  };
  std::vector<First> first(workers);
  auto pass1 = [&](int wi, int64_t begin, int64_t end) {
    const std::size_t w = static_cast<std::size_t>(wi);
    First& f = first[w];
    Scratch s;
    const std::vector<int64_t> positions = strata ? strata->positions_in(begin, end) : std::vector<int64_t>{};
    auto next_sample = positions.begin();
    const auto samples_end = positions.end();
    for (auto& v : f.sample) v.reserve(static_cast<std::size_t>(samples_end - next_sample));
    auto visit = [&](int64_t base, int64_t count, float* node_sums) {
      for (int k = 0; k < kSumStreams; ++k) node_sums[k] = 0.0f;
      if (!f.finite) return;
      const float* xs = x + base;
      const float* ys = y + base;
      if (identical) {
        if (differ.load(std::memory_order_relaxed) ||
            (xs != ys && std::memcmp(xs, ys, static_cast<std::size_t>(count) * sizeof(float)) != 0)) {
          differ.store(true, std::memory_order_relaxed);
          return;
        }
        kernels::MinMax x_extremes;
        int64_t zeros = 0;
        if (!kernels::magnitudes(xs, count, s.mx.get(), x_extremes, zeros)) {
          f.finite = false;
          return;
        }
        for (; next_sample != samples_end && *next_sample < base + count; ++next_sample)
          f.sample[kX].push_back(xs[static_cast<std::size_t>(*next_sample - base)]);
        const float* streams[2] = {xs, s.mx.get()};  // kSumX, kSumMagnitudeX
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
        return;
      }
      kernels::ChunkExtremes extremes;
      const int64_t zeros_before = f.verdict.zero_references;
      if (!kernels::errors(xs, ys, count, epsilon, atol, rtol, s.d.get(), s.r.get(), s.mx.get(), s.my.get(), extremes,
                           f.verdict)) {
        f.finite = false;
        return;
      }
      for (; next_sample != samples_end && *next_sample < base + count; ++next_sample) {
        const std::size_t j = static_cast<std::size_t>(*next_sample - base);
        f.sample[kX].push_back(xs[j]);
        f.sample[kY].push_back(ys[j]);
        f.sample[kAbs].push_back(s.d[j]);
        f.sample[kRel].push_back(s.r[j]);
        if (ys[j] != 0) f.sample[kRelNonzero].push_back(s.r[j]);
      }
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
      if (extremes.any_nonzero) {
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
    };
    float worker_sums[kSumStreams];
    tree_chunks<kSumStreams>(begin, end - begin, visit, worker_sums);
    for (int k = 0; k < kSumStreams; ++k) sums[static_cast<std::size_t>(k)][w] = worker_sums[k];
  };
  run_ranges(plan, pass1);
  if (identical && differ.load()) {
    identical = false;
    first.assign(workers, First{});
    run_ranges(plan, pass1);
  }
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
  for (int k = 0; k < kSumStreams; ++k) total[k] = combine_worker_sums(sums[static_cast<std::size_t>(k)], n, plan.depth);
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
      if (identical && k == kY) return;  // out0's selection answers
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
  const StreamAccumulator* binned[4] = {&acc[kX], &acc[kY], &acc[kAbs], bins_nonzero_only ? &acc[kRelNonzero] : &acc[kRel]};
  const BinSpec* specs[4] = {&display.spec0, &display.spec1, &display.spec_abs, &display.spec_rel};
  bool count_bins_of[4];
  for (std::size_t k = 0; k < 4; ++k) {
    const Moments& m = binned[k]->moments;
    count_bins_of[k] = display.count && specs[k]->valid && !(m.n > 0 && m.min == m.max);
  }
  // Outputs with the same bits binned alike (Polygraphy's shared range) have the same counts.
  const bool y_bins_from_x = identical && count_bins_of[0] && count_bins_of[1] && same_binning(display.spec0, display.spec1);

  // ---- Pass 2 ----
  struct Second {
    WindowState windows[kStreams];
    std::array<std::array<int64_t, 10>, 4> bins{};
    Moments nonzero;
  };
  std::vector<Second> second(workers);
  for (std::size_t w = 0; w < workers; ++w) {
    const auto [begin, end] = plan.ranges[w];
    for (int k = 0; k < streams_used; ++k) {
      if (identical && k == kY) continue;
      const double part = static_cast<double>(end - begin) * static_cast<double>(selections[k].count) / static_cast<double>(n);
      second[w].windows[k].prepare(selections[k], part);
    }
  }
  run_ranges(plan, [&](int wi, int64_t begin, int64_t end) {
    const std::size_t w = static_cast<std::size_t>(wi);
    Second& state = second[w];
    Scratch s;
    std::unique_ptr<float[]> squared(new float[4 * kChunk]);
    std::unique_ptr<float[]> nonzero(has_zero ? new float[kChunk + 16] : nullptr);
    auto visit = [&](int64_t base, int64_t count, float* node_sums) {
      const float* xs = x + base;
      const float* ys = y + base;
      float* squares_of[4];
      for (std::size_t k = 0; k < 4; ++k) squares_of[k] = squared.get() + k * kChunk;
      if (identical) {  // the errors are constant: neither binned nor windowed, their squares zero
        kernels::squared_deviations(xs, count, means[kX], squares_of[0]);
        pairwise_sums32(squares_of, 1, count, node_sums);
        node_sums[kY] = node_sums[kX];
        node_sums[kAbs] = node_sums[kRel] = 0.0f;
        if (count_bins_of[0]) kernels::count_bins(xs, count, display.spec0, state.bins[0]);
        if (count_bins_of[1] && !y_bins_from_x) kernels::count_bins(xs, count, display.spec1, state.bins[1]);
        state.windows[kX].offer(selections[kX], xs, count);
        return;
      }
      kernels::differences_and_squares(xs, ys, count, epsilon, means, s.d.get(), s.r.get(), squares_of);
      const float* stream[4] = {xs, ys, s.d.get(), s.r.get()};
      pairwise_sums32(squares_of, 4, count, node_sums);
      int64_t nonzero_in_chunk = 0;
      if (has_zero) {
        nonzero_in_chunk = kernels::select_nonzero_reference(s.r.get(), ys, count, nonzero.get());
        add_shifted_sums(state.nonzero, nonzero.get(), nonzero_in_chunk);
      }
      if (count_bins_of[0]) kernels::count_bins(xs, count, display.spec0, state.bins[0]);
      if (count_bins_of[1]) kernels::count_bins(ys, count, display.spec1, state.bins[1]);
      if (count_bins_of[2]) kernels::count_bins(s.d.get(), count, display.spec_abs, state.bins[2]);
      if (count_bins_of[3]) {
        if (bins_nonzero_only) kernels::count_bins(nonzero.get(), nonzero_in_chunk, display.spec_rel, state.bins[3]);
        else kernels::count_bins(s.r.get(), count, display.spec_rel, state.bins[3]);
      }
      for (int k = 0; k < kRelNonzero; ++k) state.windows[k].offer(selections[k], stream[k], count);
      if (has_zero) state.windows[kRelNonzero].offer(selections[kRelNonzero], nonzero.get(), nonzero_in_chunk);
    };
    float worker_squares[4];
    tree_chunks<4>(begin, end - begin, visit, worker_squares);
    for (std::size_t k = 0; k < 4; ++k) squares[k][w] = worker_squares[k];
  });

  // The selections are independent: one task per window (a stream's several windows, however many
  // streams are measured, share the pool), largest first.
  struct Task {
    int stream, window;  // window -1: the whole stream
    int64_t size;        // values kept, to order the tasks
  };
  std::vector<Task> tasks;
  std::vector<std::vector<const WindowState*>> parts(kStreams);
  for (int k = 0; k < streams_used; ++k) {
    if (identical && k == kY) continue;
    for (auto& s : second) parts[static_cast<std::size_t>(k)].push_back(&s.windows[k]);
    const Selection& sel = selections[k];
    if (sel.constant || sel.copy_all) {
      tasks.push_back(Task{k, -1, sel.constant ? 0 : sel.count});
      continue;
    }
    for (std::size_t w = 0; w < sel.windows.size(); ++w) {
      int64_t size = 0;
      if (w < static_cast<std::size_t>(sel.tied))
        for (auto& s : second) size += s.windows[k].inside[w].size();
      else
        size = static_cast<int64_t>(sel.windows[w].share * static_cast<double>(sel.count));
      tasks.push_back(Task{k, static_cast<int>(w), size});
    }
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
  streams.a = &acc[kX];
  streams.b = &acc[kY];
  streams.abs = &acc[kAbs];
  streams.rel_all = &acc[kRel];
  streams.rel_nonzero = &acc[kRelNonzero];
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

}  // namespace parity::compare::detail
