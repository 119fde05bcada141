#include "rank_selection.h"

#include <algorithm>
#include <array>
#include <bit>
#include <utility>

#include "rank_selection_kernels.h"
#include "parity/core/error.h"

namespace parity::statistics::detail {
namespace {

using kernels::key_of;
constexpr int kDigitBits = kernels::kDigitBits;
constexpr uint32_t kBuckets = kernels::kDigitBuckets;
constexpr int64_t kFewCandidates = 2048;  // below this, nth_element
constexpr int64_t kBlock = 4096;          // digits computed at a time

inline float value_of(uint32_t key) {
  const uint32_t bits = (key & 0x80000000u) ? key ^ 0x80000000u : ~key;
  return std::bit_cast<float>(bits) + 0.0f;  // -0 -> +0
}

void select_keys(std::vector<uint32_t>& keys, const int64_t* ranks, int rank_count, float* out);

// The digit to histogram first for keys within [low, high] (low < high): the kDigitBits bits that
// end at their highest differing bit (the bits above it are the same in every key), so the first
// level already spreads the keys, however narrow their range (the values in a window are).
inline int first_shift(uint32_t low, uint32_t high) {
  const int differing = 32 - std::countl_zero(low ^ high);
  return std::max(0, differing - kDigitBits);
}

// The histogram of the digit at `shift` over `count` values or keys. Keys often share their digit
// (the values of a window or a sample crowd into few buckets), and then each increment waits for
// the one before: four interleaved sets of counters keep four increments in flight.
template <typename T>
void digit_histogram(const T* source, int64_t count, int shift, std::array<int64_t, kBuckets>& histogram) {
  std::array<std::array<uint32_t, kBuckets>, 4> parts{};
  std::array<uint16_t, kBlock> digits;
  for (int64_t begin = 0; begin < count; begin += kBlock) {
    const int64_t size = std::min(kBlock, count - begin);
    kernels::key_digits(source + begin, size, shift, digits.data());
    int64_t i = 0;
    for (; i + 4 <= size; i += 4)
      for (std::size_t p = 0; p < 4; ++p) ++parts[p][digits[static_cast<std::size_t>(i) + p]];
    for (; i < size; ++i) ++parts[0][digits[static_cast<std::size_t>(i)]];
    if (begin + kBlock < count && ((begin / kBlock) & 0xffff) == 0xffff) {  // 2^28 values: empty the uint32 counters
      for (uint32_t b = 0; b < kBuckets; ++b)
        for (auto& part : parts) histogram[b] += std::exchange(part[b], 0u);
    }
  }
  for (uint32_t b = 0; b < kBuckets; ++b)
    histogram[b] += int64_t{parts[0][b]} + parts[1][b] + parts[2][b] + parts[3][b];
}

// One level: the histogram of the digit at `shift` over `count` values or keys, the bucket of each
// wanted rank, and the keys of those buckets gathered for the next level.
template <typename T>
void select_level(const T* source, int64_t count, int shift, const int64_t* ranks, int rank_count, float* out) {
  std::array<int64_t, kBuckets> histogram{};
  digit_histogram(source, count, shift, histogram);
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
  std::array<uint32_t, kBuckets / 32> marked{};
  int64_t total = 0;
  for (const auto& group : groups) {
    marked[group.bucket >> 5] |= 1u << (group.bucket & 31);
    total += histogram[group.bucket];
  }
  std::vector<uint32_t> kept(static_cast<std::size_t>(total + 16));
  const int64_t taken = kernels::keys_in_buckets(source, count, shift, marked.data(), kept.data());
  if (taken != total)  // the two passes read the digits alike: anything else is a kernel bug
    raise<InternalError>("rank selection: {} values in the wanted buckets, the histogram counted {}", taken, total);
  kept.resize(static_cast<std::size_t>(taken));
  if (groups.size() == 1) {
    groups[0].keys = std::move(kept);
  } else {  // the kept keys, bucket by bucket
    std::array<int16_t, kBuckets> slot;
    slot.fill(-1);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      slot[groups[g].bucket] = static_cast<int16_t>(g);
      groups[g].keys.reserve(static_cast<std::size_t>(histogram[groups[g].bucket]));
    }
    for (uint32_t key : kept)
      groups[static_cast<std::size_t>(slot[(key >> shift) & (kBuckets - 1)])].keys.push_back(key);
  }
  for (auto& group : groups)
    select_keys(group.keys, group.ranks.data(), static_cast<int>(group.ranks.size()), out + group.first);
}

// The keys at ascending, distinct `ranks` (counted from `first`) of [begin, end), reordered:
// nth_element places the middle rank, and each side's ranks are then found within that side.
void nth_keys(uint32_t* begin, uint32_t* end, int64_t first, const int64_t* ranks, int rank_count, float* out) {
  if (rank_count == 0) return;
  const int middle = rank_count / 2;
  uint32_t* at = begin + (ranks[middle] - first);
  std::nth_element(begin, at, end);
  out[middle] = value_of(*at);
  nth_keys(begin, at, first, ranks, middle, out);
  nth_keys(at + 1, end, ranks[middle] + 1, ranks + middle + 1, rank_count - middle - 1, out + middle + 1);
}

// The keys at `ranks` of `keys` (reordered).
void select_keys(std::vector<uint32_t>& keys, const int64_t* ranks, int rank_count, float* out) {
  const int64_t count = static_cast<int64_t>(keys.size());
  uint32_t low = ~0u, high = 0;
  if (count > kFewCandidates) kernels::key_range(keys.data(), count, low, high);
  if (low == high) {  // one key (a ReLU's zeros): every rank's
    std::fill(out, out + rank_count, value_of(low));
    return;
  }
  if (count <= kFewCandidates) {
    nth_keys(keys.data(), keys.data() + count, 0, ranks, rank_count, out);
    return;
  }
  select_level(keys.data(), count, first_shift(low, high), ranks, rank_count, out);
}

// The selection over values whose keys lie within [low, high].
std::vector<float> select_between(const float* values, int64_t count, const std::vector<int64_t>& ranks, uint32_t low,
                                  uint32_t high) {
  std::vector<float> out(ranks.size());
  if (ranks.empty()) return out;
  if (low == high) {  // every value has the one key
    std::fill(out.begin(), out.end(), value_of(low));
    return out;
  }
  if (count <= kFewCandidates) {
    std::vector<uint32_t> keys(static_cast<std::size_t>(count));
    for (int64_t i = 0; i < count; ++i) keys[static_cast<std::size_t>(i)] = key_of(values[i]);
    select_keys(keys, ranks.data(), static_cast<int>(ranks.size()), out.data());
    return out;
  }
  select_level(values, count, first_shift(low, high), ranks.data(), static_cast<int>(ranks.size()), out.data());
  return out;
}

}  // namespace

std::vector<float> select_float_ranks(const float* values, int64_t count, const std::vector<int64_t>& ranks) {
  uint32_t low = ~0u, high = 0;
  if (!ranks.empty() && count > kFewCandidates) kernels::key_range(values, count, low, high);
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

}  // namespace parity::statistics::detail
