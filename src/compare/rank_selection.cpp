#include "rank_selection.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <tuple>
#include <utility>

namespace parity::compare::detail {
namespace {

constexpr int kDigitBits = 11;
constexpr uint32_t kBuckets = 1u << kDigitBits;
constexpr int64_t kFewCandidates = 2048;  // below this, nth_element

// A float's bits mapped so that unsigned order is the floats' order (negative values reversed).
inline uint32_t key_of(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  return bits ^ ((bits & 0x80000000u) ? 0xffffffffu : 0x80000000u);
}

inline float value_of(uint32_t key) {
  const uint32_t bits = (key & 0x80000000u) ? key ^ 0x80000000u : ~key;
  return std::bit_cast<float>(bits) + 0.0f;  // -0 -> +0
}

struct FloatKeys {
  const float* values;
  uint32_t operator()(int64_t i) const { return key_of(values[i]); }
};
struct Keys {
  const uint32_t* keys;
  uint32_t operator()(int64_t i) const { return keys[i]; }
};

void select_keys(std::vector<uint32_t>& keys, const int64_t* ranks, int rank_count, float* out);

// The smallest and largest of `count` keys.
template <typename KeyAt>
std::pair<uint32_t, uint32_t> key_range(const KeyAt& key_at, int64_t count) {
  uint32_t low = ~0u, high = 0;
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t key = key_at(i);
    low = std::min(low, key);
    high = std::max(high, key);
  }
  return {low, high};
}

// The digit to histogram first for keys within [low, high] (low < high): the kDigitBits bits that
// end at their highest differing bit (the bits above it are the same in every key), so the first
// level already spreads the keys, however narrow their range (the values in a window are).
inline int first_shift(uint32_t low, uint32_t high) {
  const int differing = 32 - std::countl_zero(low ^ high);
  return std::max(0, differing - kDigitBits);
}

// The histogram of the digit at `shift` over `count` keys. Keys often share their digit (the
// values of a window or a sample crowd into few buckets), and then each increment waits for the
// one before: four interleaved sets of counters keep four increments in flight.
template <typename KeyAt>
void digit_histogram(const KeyAt& key_at, int64_t count, int shift, std::array<int64_t, kBuckets>& histogram) {
  if (count >= (int64_t{1} << 32)) {  // the uint32 counters could overflow
    for (int64_t i = 0; i < count; ++i) ++histogram[(key_at(i) >> shift) & (kBuckets - 1)];
    return;
  }
  std::array<std::array<uint32_t, kBuckets>, 4> parts{};
  int64_t i = 0;
  for (; i + 4 <= count; i += 4)
    for (int p = 0; p < 4; ++p) ++parts[static_cast<std::size_t>(p)][(key_at(i + p) >> shift) & (kBuckets - 1)];
  for (; i < count; ++i) ++parts[0][(key_at(i) >> shift) & (kBuckets - 1)];
  for (uint32_t b = 0; b < kBuckets; ++b)
    histogram[b] += int64_t{parts[0][b]} + parts[1][b] + parts[2][b] + parts[3][b];
}

// One level: the histogram of the digit at `shift` over `count` keys, the bucket of each wanted
// rank, and the keys of those buckets gathered for the next level.
template <typename KeyAt>
void select_level(const KeyAt& key_at, int64_t count, int shift, const int64_t* ranks, int rank_count, float* out) {
  std::array<int64_t, kBuckets> histogram{};
  digit_histogram(key_at, count, shift, histogram);
  struct Group {
    uint32_t bucket;
    int64_t start;  // rank of the bucket's first key
    std::vector<int64_t> ranks;  // within the bucket
    int first;      // index of the group's first rank in `ranks`
    std::vector<uint32_t> keys;
  };
  std::vector<Group> groups;
  int64_t start = 0;
  uint32_t bucket = 0;
  for (int r = 0; r < rank_count; ++r) {
    while (start + histogram[bucket] <= ranks[r]) start += histogram[bucket++];
    if (groups.empty() || groups.back().bucket != bucket) groups.push_back(Group{bucket, start, {}, r, {}});
    groups.back().ranks.push_back(ranks[r] - start);
  }
  std::array<int16_t, kBuckets> slot;
  slot.fill(-1);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    slot[groups[g].bucket] = static_cast<int16_t>(g);
    groups[g].keys.reserve(static_cast<std::size_t>(histogram[groups[g].bucket]));
  }
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t key = key_at(i);
    const int16_t s = slot[(key >> shift) & (kBuckets - 1)];
    if (s >= 0) groups[static_cast<std::size_t>(s)].keys.push_back(key);
  }
  for (auto& group : groups)
    select_keys(group.keys, group.ranks.data(), static_cast<int>(group.ranks.size()), out + group.first);
}

// The keys at `ranks` of `keys` (reordered).
void select_keys(std::vector<uint32_t>& keys, const int64_t* ranks, int rank_count, float* out) {
  const int64_t count = static_cast<int64_t>(keys.size());
  uint32_t low = ~0u, high = 0;
  if (count > kFewCandidates) std::tie(low, high) = key_range(Keys{keys.data()}, count);
  if (count <= kFewCandidates || low == high) {
    int64_t from = 0;
    for (int r = 0; r < rank_count; ++r) {
      const int64_t rank = ranks[r];
      if (rank >= from) std::nth_element(keys.begin() + from, keys.begin() + rank, keys.end());
      out[r] = value_of(keys[static_cast<std::size_t>(rank)]);
      from = rank + 1;
    }
    return;
  }
  select_level(Keys{keys.data()}, count, first_shift(low, high), ranks, rank_count, out);
}

// The selection over values whose keys lie within [low, high].
std::vector<float> select_between(const float* values, int64_t count, const std::vector<int64_t>& ranks, uint32_t low,
                                  uint32_t high) {
  std::vector<float> out(ranks.size());
  if (ranks.empty()) return out;
  if (count <= kFewCandidates || low == high) {
    std::vector<uint32_t> keys(static_cast<std::size_t>(count));
    for (int64_t i = 0; i < count; ++i) keys[static_cast<std::size_t>(i)] = key_of(values[i]);
    select_keys(keys, ranks.data(), static_cast<int>(ranks.size()), out.data());
    return out;
  }
  select_level(FloatKeys{values}, count, first_shift(low, high), ranks.data(), static_cast<int>(ranks.size()),
               out.data());
  return out;
}

}  // namespace

std::vector<float> select_float_ranks(const float* values, int64_t count, const std::vector<int64_t>& ranks) {
  uint32_t low = ~0u, high = 0;
  if (!ranks.empty() && count > kFewCandidates) std::tie(low, high) = key_range(FloatKeys{values}, count);
  return select_between(values, count, ranks, low, high);
}

std::vector<float> select_float_ranks_within(const float* values, int64_t count, const std::vector<int64_t>& ranks,
                                             float low, float high) {
  // -0 sorts below +0 among the keys: a zero bound is taken as -0 below and +0 above, so that the
  // range holds either zero.
  const uint32_t low_key = key_of(low == 0 ? -0.0f : low);
  const uint32_t high_key = key_of(high == 0 ? 0.0f : high);
  return select_between(values, count, ranks, low_key, high_key);
}

}  // namespace parity::compare::detail
