#include "window_selection.h"

#include <cmath>

#include "../pair_statistics_internal.h"
#include "rank_selection.h"

namespace parity::statistics::detail {
namespace {

constexpr double kWindowSigmas = 5.0;

}  // namespace

std::vector<uint64_t> wanted_ranks(int64_t count, const std::vector<double>& levels) {
  std::vector<uint64_t> ranks;
  RankPlan plan{count, 0, count};
  add_median_ranks(plan, ranks);
  for (double q : levels) add_quantile_ranks(plan, q, ranks);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

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
    return at[static_cast<std::size_t>(std::lower_bound(positions.begin(), positions.end(), position) -
                                       positions.begin())];
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

std::vector<int64_t> SampleStrata::positions_in(int64_t begin, int64_t end) const {
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

int64_t sample_size(int64_t n) {
  double wanted = std::cbrt(5.5 * static_cast<double>(n));
  wanted *= wanted;
  return std::min<int64_t>(n, std::clamp<int64_t>(static_cast<int64_t>(wanted), 8192, int64_t{1} << 20));
}

}  // namespace parity::statistics::detail
