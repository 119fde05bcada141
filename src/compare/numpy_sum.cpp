// numpy's float32 reductions, reproduced bit for bit: np.add.reduce's pairwise summation (one tree
// over a float32 array, or 8192-value buffers when numpy casts), split over tree-aligned worker
// ranges and merged in numpy's order; and the mean / avg-magnitude / float32 var built on them.
#include <algorithm>
#include <functional>

#include "streaming_statistics.h"

namespace parity::compare::detail {

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

// acc[j] += v[8 * row + j] for every row: numpy's eight accumulators, one vector add per row
// where the CPU has 256-bit vectors (lane-wise, so the same sums bit for bit).
[[gnu::target_clones("avx2", "default")]] void add_rows(float* __restrict acc, const float* __restrict v,
                                                        int64_t rows) {
  float a[8];
  for (int j = 0; j < 8; ++j) a[j] = acc[j];
  for (int64_t row = 0; row < rows; ++row)
    for (int j = 0; j < 8; ++j) a[j] += v[row * 8 + j];
  for (int j = 0; j < 8; ++j) acc[j] = a[j];
}

}  // namespace

void PairwiseSum32::add(const float* v, int64_t count) {
  while (count > 0 && leaf_length_ > 0) {
    int64_t take = std::min(count, leaf_length_ - position_);
    const float* end = v + take;
    if (leaf_length_ < 8) {
      for (; v < end; ++v) partial_ += *v;
    } else {
      for (; v < end && position_ < 8; ++v) r_[position_++] = *v;
      if (end - v >= 8 && position_ + 8 <= main_end_ && (position_ & 7) == 0) {
        // Whole rows of eight at once (numpy adds row after row to its eight accumulators).
        int64_t rows = std::min<int64_t>((end - v) / 8, (main_end_ - position_) / 8);
        add_rows(r_, v, rows);
        v += rows * 8;
        position_ += rows * 8;
      }
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
  PairwiseSum32 sum(count);
  sum.add(values, count);
  return sum.result();
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
      std::size_t take = static_cast<std::size_t>(std::min<int64_t>(chunk_end - global, static_cast<int64_t>(pending - i)));
      if (chunk_.empty()) chunk_start_ = global;
      chunk_.insert(chunk_.end(), pending_.begin() + static_cast<std::ptrdiff_t>(i),
                    pending_.begin() + static_cast<std::ptrdiff_t>(i + take));
      i += take;
      if (global + static_cast<int64_t>(take) == chunk_end) {  // reached a chunk boundary
        int64_t index = chunk_start_ / kBuffer;
        if (chunk_start_ % kBuffer == 0) chunk_sums_.emplace_back(index, pairwise_sum32(chunk_.data(), static_cast<int64_t>(chunk_.size())));
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
    std::size_t next = 0;
    std::function<float(int64_t, int)> node = [&](int64_t length, int level) -> float {
      if (level == 0 || length <= 128) return parts[next++].tree_.result();
      int64_t half = length / 2;
      half -= half % 8;
      float left = node(half, level - 1);
      float right = node(length - half, level - 1);
      return left + right;
    };
    return 0.0f + node(n, depth);
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
double mean_of(float sum, int64_t n) { return static_cast<double>(static_cast<float>(static_cast<double>(sum) / static_cast<double>(n))); }

}  // namespace

float variance_mean(std::vector<StreamSums>& parts, int64_t n, int depth) {
  if (parts.empty() || n == 0) return 0.0f;
  // The variance's own mean: the float32 array's sum (the same as the mean's unless float16).
  std::vector<SumPart32> pieces;
  for (auto& p : parts) pieces.push_back(p.separate_variance ? p.variance_sum : p.sum);
  float s = SumPart32::combine(pieces, n, depth);
  return static_cast<float>(static_cast<double>(s) / static_cast<double>(n));
}

NumpyNumbers numpy_numbers(std::vector<StreamSums>& parts, int64_t n, int depth) {
  NumpyNumbers numbers;
  if (parts.empty() || n == 0) return numbers;
  const bool same_magnitude = parts[0].same_magnitude, variance = parts[0].variance;
  float sum = combine_member(parts, n, depth, &StreamSums::sum);
  numbers.mean = mean_of(sum, n);
  numbers.avg_magnitude = same_magnitude ? numbers.mean : mean_of(combine_member(parts, n, depth, &StreamSums::magnitude), n);
  if (variance) {
    float squares = combine_member(parts, n, depth, &StreamSums::squares);
    float var = static_cast<float>(static_cast<double>(squares) / static_cast<double>(n));
    numbers.has_variance = true;
    numbers.variance = var;
    numbers.std_dev = static_cast<double>(std::sqrt(var));
  }
  return numbers;
}

}  // namespace parity::compare::detail
