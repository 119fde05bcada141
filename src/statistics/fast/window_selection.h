// Order statistics from windows (private to the float32 fast path): which ranks a stream
// needs, windows around them placed from a sample of the stream, each worker's pass over its
// values (how many lie below each window, and those inside kept), and the ranks' values selected
// among the kept ones. A window that misses its rank says so, and the caller falls back to the
// general kernel: the numbers never depend on the sample.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "float_kernels.h"
#include "../streaming_statistics.h"

namespace parity::statistics::detail {

constexpr int64_t kCopyLimit = int64_t{1} << 16;  // streams up to this size select within a copy

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

std::vector<uint64_t> wanted_ranks(int64_t count, const std::vector<double>& levels);

// Windows around `selection.ranks` from a sample of the stream (left unchanged).
void plan_windows(Selection& selection, std::vector<float>& sample, float stream_min, float stream_max);

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
      for (int w = 0; w < tied; ++w)
        tails[static_cast<std::size_t>(w)] = inside[static_cast<std::size_t>(w)].tail(n + 16);
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
bool resolve_whole(const Selection& selection, const std::vector<const WindowState*>& workers, RankValues& values);

// The values of window `index`'s ranks from the workers' counts and kept values; false when the
// window missed one of them.
bool resolve_window(const Selection& selection, std::size_t index, const std::vector<const WindowState*>& workers,
                    RankValues& values);

// Strata of equal width, one pseudo-random position in each (fixed seed: runs are reproducible).
// Stratum i is [floor(i n / count), floor((i + 1) n / count)); each worker generates the
// positions within its own range.
class SampleStrata {
 public:
  SampleStrata(int64_t n, int64_t count) : n_(n), count_(count), step_(n / count), extra_(n % count) {}

  // The positions within [begin, end), ascending.
  std::vector<int64_t> positions_in(int64_t begin, int64_t end) const;

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
int64_t sample_size(int64_t n);

}  // namespace parity::statistics::detail
