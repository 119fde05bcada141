// numpy's float32 reductions, reproduced bit for bit: np.add.reduce's pairwise summation (one tree
// over a float32 array, or 8192-value buffers when numpy casts), split over tree-aligned worker
// ranges and merged in numpy's order; and the mean / avg-magnitude / float32 var built on them.
#include <algorithm>
#include <cstring>
#include <functional>
#include <cmath>

#include "parity/core/error.h"
#include "streaming_statistics.h"

namespace parity::statistics::detail {

// ------------------------------------------------------------------------------------------------
// numpy's float32 sums
// ------------------------------------------------------------------------------------------------
void PairwiseSum32::reset(int64_t length) {
  stack_.clear();
  total_ = 0;
  partial_ = 0;
  leaf_length_ = position_ = main_end_ = 0;
  if (length > 0) start_node(length);
}

void PairwiseSum32::start_node(int64_t length) {
  while (length > 128) {
    int64_t half = length / 2;
    half -= half % 8;
    stack_.push_back(Frame{length - half, 0.0f, false});
    length = half;
  }
  leaf_length_ = length;
  position_ = 0;
  partial_ = 0.0f;
  main_end_ = length < 8 ? 0 : length - length % 8;
}

void PairwiseSum32::finish_leaf(float sum) {
  while (!stack_.empty()) {
    Frame& frame = stack_.back();
    if (!frame.left_done) {
      frame.left_done = true;
      frame.left_sum = sum;
      int64_t right = frame.right_length;
      start_node(right);
      return;
    }
    sum = frame.left_sum + sum;
    stack_.pop_back();
  }
  total_ = sum;
  leaf_length_ = position_ = 0;
}

namespace {

using Lanes8 = float __attribute__((vector_size(32)));

// acc += v[0..8) (unaligned; a vector in and out by pointer, never by value: the default
// clone has no 256-bit registers to pass it in).
[[gnu::always_inline]] inline void add_lanes(Lanes8& acc, const float* v) {
  Lanes8 lanes;
  std::memcpy(&lanes, v, sizeof lanes);
  acc += lanes;
}

// numpy's leaf of at most 128 values, for `Streams` arrays at once (independent chains, so the
// adds overlap): fewer than 8 values added in order from 0; else eight accumulators over whole
// rows, combined pairwise, and the remainder added in order.
template <int Streams>
[[gnu::always_inline]] inline void leaf_sums(const float* const* v, int64_t offset, int64_t n, float* out) {
  if (n < 8) {
    for (int k = 0; k < Streams; ++k) {
      float sum = 0.0f;
      for (int64_t i = 0; i < n; ++i) sum += v[k][offset + i];
      out[k] = sum;
    }
    return;
  }
  Lanes8 acc[Streams];
  for (int k = 0; k < Streams; ++k) std::memcpy(&acc[k], v[k] + offset, sizeof(Lanes8));
  const int64_t rows_end = n - n % 8;
  for (int64_t i = 8; i < rows_end; i += 8)
    for (int k = 0; k < Streams; ++k) add_lanes(acc[k], v[k] + offset + i);
  for (int k = 0; k < Streams; ++k) {
    const Lanes8& r = acc[k];
    float sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (int64_t i = rows_end; i < n; ++i) sum += v[k][offset + i];
    out[k] = sum;
  }
}

// One leaf of every stream, with 256-bit vectors where the CPU has them (lane-wise adds: the same
// sums bit for bit).
[[gnu::target_clones("avx2", "default")]] void leaf_sums_of(const float* const* v, int streams, int64_t offset,
                                                            int64_t n, float* out) {
  switch (streams) {
    case 1: leaf_sums<1>(v, offset, n, out); break;
    case 2: leaf_sums<2>(v, offset, n, out); break;
    case 3: leaf_sums<3>(v, offset, n, out); break;
    case 4: leaf_sums<4>(v, offset, n, out); break;
    case 5: leaf_sums<5>(v, offset, n, out); break;
    default: leaf_sums<6>(v, offset, n, out); break;
  }
}

void node_sums(const float* const* v, int streams, int64_t offset, int64_t n, float* out) {
  if (n <= 128) {
    leaf_sums_of(v, streams, offset, n, out);
    return;
  }
  int64_t half = n / 2;
  half -= half % 8;
  float left[kMaxPairwiseStreams], right[kMaxPairwiseStreams];
  node_sums(v, streams, offset, half, left);
  node_sums(v, streams, offset + half, n - half, right);
  for (int k = 0; k < streams; ++k) out[k] = left[k] + right[k];
}

}  // namespace

void pairwise_sums32(const float* const* streams, int stream_count, int64_t count, float* sums) {
  if (stream_count < 1 || stream_count > kMaxPairwiseStreams)
    raise<InternalError>("pairwise_sums32: {} streams (1 to {})", stream_count, kMaxPairwiseStreams);
  if (count <= 0) {
    for (int k = 0; k < stream_count; ++k) sums[k] = 0.0f;
    return;
  }
  node_sums(streams, stream_count, 0, count, sums);
}

void PairwiseSum32::add(const float* v, int64_t count) {
  while (count > 0 && leaf_length_ > 0) {
    if (position_ == 0 && count >= leaf_length_) {
      // A whole leaf at hand: summed at once.
      float sum;
      leaf_sums_of(&v, 1, 0, leaf_length_, &sum);
      v += leaf_length_;
      count -= leaf_length_;
      finish_leaf(sum);
      continue;
    }
    int64_t take = std::min(count, leaf_length_ - position_);
    const float* end = v + take;
    if (leaf_length_ < 8) {
      for (; v < end; ++v) partial_ += *v;
    } else {
      for (; v < end && position_ < 8; ++v) r_[position_++] = *v;
      for (; v < end && position_ < main_end_; ++v) r_[(position_++) & 7] += *v;
      for (; v < end; ++v) {
        if (position_ == main_end_) partial_ = combine();
        partial_ += *v;
        ++position_;
      }
    }
    position_ = leaf_length_ < 8 ? position_ + take : position_;
    count -= take;
    if (position_ == leaf_length_) {
      float sum = partial_;
      if (leaf_length_ >= 8 && main_end_ == leaf_length_) sum = combine();
      finish_leaf(sum);
    }
  }
}

float pairwise_sum32(const float* values, int64_t count) {
  float sum = 0.0f;
  if (count > 0) pairwise_sums32(&values, 1, count, &sum);
  return sum;
}

SumPart32::SumPart32(bool buffered, int64_t begin, int64_t end)
    : buffered_(buffered),
      begin_(begin),
      end_(end),
      next_(begin),
      pending_(static_cast<std::size_t>(std::clamp<int64_t>(end - begin, 1, kFlush))) {
  if (!buffered_) tree_.reset(end - begin);
  chunk_start_ = begin;
}

void SumPart32::flush(bool last) {
  const std::size_t pending = static_cast<std::size_t>(pending_count_);
  if (!buffered_) {
    tree_.add(pending_.data(), pending_count_);
  } else {
    std::size_t i = 0;
    while (i < pending) {
      int64_t global = next_ + static_cast<int64_t>(i);
      int64_t chunk_end = (global / kBuffer + 1) * kBuffer;
      std::size_t take =
          static_cast<std::size_t>(std::min<int64_t>(chunk_end - global, static_cast<int64_t>(pending - i)));
      if (chunk_.empty()) chunk_start_ = global;
      chunk_.insert(chunk_.end(), pending_.begin() + static_cast<std::ptrdiff_t>(i),
                    pending_.begin() + static_cast<std::ptrdiff_t>(i + take));
      i += take;
      if (global + static_cast<int64_t>(take) == chunk_end) {  // reached a chunk boundary
        int64_t index = chunk_start_ / kBuffer;
        if (chunk_start_ % kBuffer == 0)
          chunk_sums_.emplace_back(index, pairwise_sum32(chunk_.data(), static_cast<int64_t>(chunk_.size())));
        else pieces_.emplace_back(index, chunk_);
        chunk_.clear();
      }
    }
    if (last && !chunk_.empty()) {
      pieces_.emplace_back(chunk_start_ / kBuffer, chunk_);
      chunk_.clear();
    }
  }
  next_ += pending_count_;
  pending_count_ = 0;
}

void SumPart32::add_block(const float* values, int64_t count) {
  if (!buffered_ && pending_count_ == 0) {
    tree_.add(values, count);
    next_ += count;
    return;
  }
  for (int64_t i = 0; i < count; ++i) add(values[i]);
}

std::vector<std::pair<int64_t, int64_t>> tree_ranges(int64_t n, int workers, int* depth) {
  int d = 0;
  while ((2 << d) <= workers) ++d;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::function<void(int64_t, int64_t, int)> split = [&](int64_t offset, int64_t length, int level) {
    if (level == 0 || length <= 128) {
      ranges.emplace_back(offset, offset + length);
      return;
    }
    int64_t half = length / 2;
    half -= half % 8;
    split(offset, half, level - 1);
    split(offset + half, length - half, level - 1);
  };
  split(0, n, d);
  if (depth) *depth = d;
  return ranges;
}

float SumPart32::combine(std::vector<SumPart32>& parts, int64_t n, int depth) {
  for (auto& p : parts) p.finish();
  if (parts.empty()) return 0.0f;
  if (!parts[0].buffered_) {
    std::vector<float> sums;
    for (auto& p : parts) sums.push_back(p.tree_.result());
    return combine_worker_sums(sums, n, depth);
  }
  const int64_t chunks = (n + kBuffer - 1) / kBuffer;
  std::vector<float> sums(static_cast<std::size_t>(chunks), 0.0f);
  std::vector<std::vector<float>> pieces(static_cast<std::size_t>(chunks));
  std::vector<bool> complete(static_cast<std::size_t>(chunks), false);
  for (auto& p : parts) {
    for (auto& [index, sum] : p.chunk_sums_) {
      sums[static_cast<std::size_t>(index)] = sum;
      complete[static_cast<std::size_t>(index)] = true;
    }
    for (auto& [index, values] : p.pieces_) {
      auto& piece = pieces[static_cast<std::size_t>(index)];
      piece.insert(piece.end(), values.begin(), values.end());
    }
  }
  float total = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) {
    std::size_t k = static_cast<std::size_t>(c);
    float chunk = complete[k] ? sums[k] : pairwise_sum32(pieces[k].data(), static_cast<int64_t>(pieces[k].size()));
    total += chunk;
  }
  return total;
}

namespace {

template <typename Member>
float combine_member(std::vector<StreamSums>& parts, int64_t n, int depth, Member member) {
  std::vector<SumPart32> pieces;
  pieces.reserve(parts.size());
  for (auto& p : parts) pieces.push_back(std::move(p.*member));
  return SumPart32::combine(pieces, n, depth);
}

// np.mean's division: float32 sum / intp count, computed in float64 and stored as float32.
double mean_of(float sum, int64_t n) {
  return static_cast<double>(static_cast<float>(static_cast<double>(sum) / static_cast<double>(n)));
}

}  // namespace

float variance_mean_of(float sum, int64_t n) {
  return static_cast<float>(static_cast<double>(sum) / static_cast<double>(n));
}

NumpyNumbers numpy_numbers_of(float sum, const float* magnitude_sum, const float* squares_sum, int64_t n) {
  NumpyNumbers numbers;
  numbers.mean = mean_of(sum, n);
  numbers.avg_magnitude = magnitude_sum ? mean_of(*magnitude_sum, n) : numbers.mean;
  if (squares_sum) {
    float var = static_cast<float>(static_cast<double>(*squares_sum) / static_cast<double>(n));
    numbers.has_variance = true;
    numbers.variance = var;
    numbers.std_dev = static_cast<double>(std::sqrt(var));
  }
  return numbers;
}

float combine_worker_sums(const std::vector<float>& parts, int64_t n, int depth) {
  if (parts.empty()) return 0.0f;
  std::size_t next = 0;
  std::function<float(int64_t, int)> node = [&](int64_t length, int level) -> float {
    if (level == 0 || length <= 128) return parts[next++];
    int64_t half = length / 2;
    half -= half % 8;
    float left = node(half, level - 1);
    float right = node(length - half, level - 1);
    return left + right;
  };
  return 0.0f + node(n, depth);
}

float variance_mean(std::vector<StreamSums>& parts, int64_t n, int depth) {
  if (parts.empty() || n == 0) return 0.0f;
  // The variance's own mean: the float32 array's sum (the same as the mean's unless float16).
  std::vector<SumPart32> pieces;
  for (auto& p : parts) pieces.push_back(p.separate_variance ? p.variance_sum : p.sum);
  return variance_mean_of(SumPart32::combine(pieces, n, depth), n);
}

NumpyNumbers numpy_numbers(std::vector<StreamSums>& parts, int64_t n, int depth) {
  if (parts.empty() || n == 0) return NumpyNumbers{};
  const bool same_magnitude = parts[0].same_magnitude, variance = parts[0].variance;
  float sum = combine_member(parts, n, depth, &StreamSums::sum);
  float magnitude = same_magnitude ? 0.0f : combine_member(parts, n, depth, &StreamSums::magnitude);
  float squares = variance ? combine_member(parts, n, depth, &StreamSums::squares) : 0.0f;
  return numpy_numbers_of(sum, same_magnitude ? nullptr : &magnitude, variance ? &squares : nullptr, n);
}

}  // namespace parity::statistics::detail
