// Streaming statistics of one tensor: the accumulators behind statistics.h and pair_statistics.h
// (private to statistics).
//
// Values flow through in chunks converted to their "work" type (Polygraphy's cast_up: float16 ->
// float32, small ints -> int32, uint32 -> int64). Per stream, one pass gathers counts, moments
// (double accumulators, shifted for accuracy), min/max with first indices, NaN/Inf counts and a
// 16-bit radix histogram of the finite values' order-preserving keys. Exact order statistics
// (median, quantiles) then come from one or more refining passes over the same stream: each pass
// narrows every requested rank to a 16-bit-wider key prefix (or collects a small group and
// selects within it), so float32 streams need exactly one extra pass and nothing is copied or
// sorted wholesale.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "parity/statistics/statistics.h"
#include "parity/core/half.h"
#include "parity/core/tensor.h"

namespace parity::statistics::detail {

struct NumpyNumbers;

// ------------------------------------------------------------------------------------------------
// Work types
// ------------------------------------------------------------------------------------------------
enum class Work : uint8_t { kBool, kInt32, kInt64, kUInt64, kFloat32, kFloat64 };

// Polygraphy's cast_up. Float8/float4/float6 and bfloat16 are read as float32 and packed ints as
// int32 (Parity's choice: numpy has no such types). Throws UnsupportedError for string/complex.
Work cast_up_work(DType dtype);
DType work_dtype(Work work);

template <Work W> struct WorkType;
template <> struct WorkType<Work::kBool> { using type = uint8_t; };
template <> struct WorkType<Work::kInt32> { using type = int32_t; };
template <> struct WorkType<Work::kInt64> { using type = int64_t; };
template <> struct WorkType<Work::kUInt64> { using type = uint64_t; };
template <> struct WorkType<Work::kFloat32> { using type = float; };
template <> struct WorkType<Work::kFloat64> { using type = double; };

template <typename T> constexpr Work work_of() {
  if constexpr (std::is_same_v<T, uint8_t>) return Work::kBool;
  else if constexpr (std::is_same_v<T, int32_t>) return Work::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return Work::kInt64;
  else if constexpr (std::is_same_v<T, uint64_t>) return Work::kUInt64;
  else if constexpr (std::is_same_v<T, float>) return Work::kFloat32;
  else return Work::kFloat64;
}

// Calls fn.template operator()<T>() with T the C++ type of `work`.
template <typename Fn>
decltype(auto) visit_work(Work work, Fn&& fn) {
  switch (work) {
    case Work::kBool: return fn.template operator()<uint8_t>();
    case Work::kInt32: return fn.template operator()<int32_t>();
    case Work::kInt64: return fn.template operator()<int64_t>();
    case Work::kUInt64: return fn.template operator()<uint64_t>();
    case Work::kFloat32: return fn.template operator()<float>();
    case Work::kFloat64: break;
  }
  return fn.template operator()<double>();
}

// The lowest value of a signed integer source type, whose numpy abs() wraps to itself
// (abs(int8(-128)) == -128); NaN when the type has none.
double abs_wrap_value(DType source);

// numpy's |v| of a work-type value as a double: integers whose abs() wraps (see abs_wrap_value,
// passed as `wrap`) keep their value; unsigned values are their own magnitude.
template <typename T>
inline double magnitude_of(T v, double wrap) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fabs(static_cast<double>(v));
  } else if constexpr (std::is_signed_v<T>) {
    double d = static_cast<double>(v);
    return d == wrap ? d : std::fabs(d);
  } else {
    return static_cast<double>(v);
  }
}

// Whether a work-type value is finite (integers always are).
template <typename T>
inline bool is_finite_value(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isfinite(v);
  else return true;
}

// ------------------------------------------------------------------------------------------------
// Chunked reading
// ------------------------------------------------------------------------------------------------
constexpr int64_t kChunk = 2048;

// Elements [begin, begin+count) of `t` as T: a pointer into the tensor when its type is already
// T, else converted into `scratch` (kChunk elements).
template <typename T>
const T* load_chunk(const TensorView& t, int64_t begin, int64_t count, T* scratch);

// ------------------------------------------------------------------------------------------------
// Accumulators
// ------------------------------------------------------------------------------------------------
struct Moments {
  int64_t n = 0;
  double shift = 0;
  double s1 = 0, s2 = 0, sabs = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  int64_t argmin = -1, argmax = -1;

  inline void add(double v, double magnitude, int64_t i) {
    if (n == 0) shift = v;
    ++n;
    double c = v - shift;
    s1 += c;
    s2 += c * c;
    sabs += magnitude;
    if (v < min) { min = v; argmin = i; }
    if (v > max) { max = v; argmax = i; }
  }
  // `other` holds later elements than *this (ties keep the earlier index).
  void merge(const Moments& other);
  double sum() const { return shift * static_cast<double>(n) + s1; }
  double mean() const { return n ? shift + s1 / static_cast<double>(n) : NAN; }
  double variance() const;  // population variance, >= 0
};

struct NonFinite {
  int64_t nan = 0, posinf = 0, neginf = 0;
  int64_t first_nan = -1, first_posinf = -1, first_neginf = -1;
  inline void add(double v, int64_t i) {
    if (std::isnan(v)) { if (nan++ == 0) first_nan = i; }
    else if (v > 0) { if (posinf++ == 0) first_posinf = i; }
    else { if (neginf++ == 0) first_neginf = i; }
  }
  void merge(const NonFinite& other);
  int64_t total() const { return nan + posinf + neginf; }
};

// ------------------------------------------------------------------------------------------------
// numpy's float32 sums (np.add.reduce with a float32 accumulator), reproduced bit for bit
// ------------------------------------------------------------------------------------------------
// numpy's pairwise summation (FLOAT_pairwise_sum) of `length` values fed in order: blocks of at
// most 128 values summed with 8 accumulators, halves (rounded down to a multiple of 8) added.
class PairwiseSum32 {
 public:
  PairwiseSum32() = default;
  explicit PairwiseSum32(int64_t length) { reset(length); }
  void reset(int64_t length);
  void add(const float* values, int64_t count);
  float result() const { return total_; }

 private:
  struct Frame {
    int64_t right_length;
    float left_sum;
    bool left_done;
  };
  void start_node(int64_t length);
  void finish_leaf(float sum);
  float combine() const { return ((r_[0] + r_[1]) + (r_[2] + r_[3])) + ((r_[4] + r_[5]) + (r_[6] + r_[7])); }

  std::vector<Frame> stack_;
  int64_t leaf_length_ = 0, position_ = 0, main_end_ = 0;
  float r_[8] = {};
  float partial_ = 0;
  float total_ = 0;
};

float pairwise_sum32(const float* values, int64_t count);

// numpy's pairwise sums of `stream_count` (1 to kMaxPairwiseStreams) arrays of `count` values each,
// all at once (one traversal of the tree they share): sums[k] = pairwise_sum32(streams[k], count).
constexpr int kMaxPairwiseStreams = 6;
void pairwise_sums32(const float* const* streams, int stream_count, int64_t count, float* sums);

// One worker's share of a float32 sum over n values. Contiguous: numpy reduces the array directly
// (one pairwise tree over all n; the worker's range is a node of that tree). Buffered: numpy casts
// first, in buffers of 8192 values, and adds each buffer's pairwise sum in order.
class SumPart32 {
 public:
  static constexpr int64_t kBuffer = 8192;
  SumPart32() = default;
  SumPart32(bool buffered, int64_t begin, int64_t end);
  [[gnu::always_inline]] inline void add(float v) {
    pending_[static_cast<std::size_t>(pending_count_++)] = v;
    if (pending_count_ == static_cast<int64_t>(pending_.size())) [[unlikely]] flush(false);
  }
  // `count` values in order, as many add() calls would.
  void add_block(const float* values, int64_t count);
  void finish() { flush(true); }
  // The whole sum from every worker's part (in range order), numpy's way.
  static float combine(std::vector<SumPart32>& parts, int64_t n, int depth);

 private:
  static constexpr int64_t kFlush = 2048;
  void flush(bool last);
  bool buffered_ = false;
  int64_t begin_ = 0, end_ = 0, next_ = 0;  // next_: global index of pending_[0]
  std::vector<float> pending_;  // min(kFlush, end - begin) values: no 8 KiB buffer for a small part
  int64_t pending_count_ = 0;
  PairwiseSum32 tree_;                       // contiguous
  std::vector<float> chunk_;                 // buffered: the current 8192-chunk's values
  int64_t chunk_start_ = 0;
  std::vector<std::pair<int64_t, float>> chunk_sums_;           // complete chunks
  std::vector<std::pair<int64_t, std::vector<float>>> pieces_;  // chunks cut by the range ends
};

// Ranges of [0, n) for `workers` (rounded down to a power of two) that are nodes of numpy's
// pairwise tree at depth log2(workers); `depth` receives that depth.
std::vector<std::pair<int64_t, int64_t>> tree_ranges(int64_t n, int workers, int* depth);

// ------------------------------------------------------------------------------------------------
// Order-preserving keys
// ------------------------------------------------------------------------------------------------
template <typename T> struct KeyTraits;
template <> struct KeyTraits<float> {
  using Key = uint32_t;
  static Key key(float v) {
    uint32_t u = std::bit_cast<uint32_t>(v == 0.0f ? 0.0f : v);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  }
  static float value(Key k) {
    uint32_t u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    return std::bit_cast<float>(u);
  }
};
template <> struct KeyTraits<double> {
  using Key = uint64_t;
  static Key key(double v) {
    uint64_t u = std::bit_cast<uint64_t>(v == 0.0 ? 0.0 : v);
    return (u >> 63) ? ~u : (u | (uint64_t{1} << 63));
  }
  static double value(Key k) {
    uint64_t u = (k >> 63) ? (k & ~(uint64_t{1} << 63)) : ~k;
    return std::bit_cast<double>(u);
  }
};
template <> struct KeyTraits<int32_t> {
  using Key = uint32_t;
  static Key key(int32_t v) { return static_cast<uint32_t>(v) ^ 0x80000000u; }
  static int32_t value(Key k) { return static_cast<int32_t>(k ^ 0x80000000u); }
};
template <> struct KeyTraits<int64_t> {
  using Key = uint64_t;
  static Key key(int64_t v) { return static_cast<uint64_t>(v) ^ (uint64_t{1} << 63); }
  static int64_t value(Key k) { return static_cast<int64_t>(k ^ (uint64_t{1} << 63)); }
};
template <> struct KeyTraits<uint64_t> {
  using Key = uint64_t;
  static Key key(uint64_t v) { return v; }
  static uint64_t value(Key k) { return k; }
};
template <> struct KeyTraits<uint8_t> {
  using Key = uint32_t;
  static Key key(uint8_t v) { return static_cast<uint32_t>(v) << 16; }
  static uint8_t value(Key k) { return static_cast<uint8_t>(k >> 16); }
};

template <typename T>
inline uint32_t top16(T v) {
  using Key = typename KeyTraits<T>::Key;
  return static_cast<uint32_t>(KeyTraits<T>::key(v) >> (sizeof(Key) * 8 - 16));
}

// ------------------------------------------------------------------------------------------------
// One stream's first-pass state
// ------------------------------------------------------------------------------------------------
struct StreamAccumulator {
  Moments moments;      // finite values
  NonFinite nonfinite;
  std::vector<uint32_t> histogram;  // 65536 buckets of top16(key); empty when not wanted

  // Buckets come from a per-thread cache of cleared buffers (taken back on destruction), so a
  // comparison does not allocate and fault in fresh pages for every stream.
  StreamAccumulator() = default;
  StreamAccumulator(const StreamAccumulator& other) = default;
  StreamAccumulator(StreamAccumulator&& other) noexcept = default;
  StreamAccumulator& operator=(const StreamAccumulator& other) = default;
  StreamAccumulator& operator=(StreamAccumulator&& other) noexcept;
  ~StreamAccumulator();
  void enable_histogram();

  template <typename T>
  inline void add(T v, double magnitude, int64_t i) {
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(v)) [[unlikely]] {
        nonfinite.add(static_cast<double>(v), i);
        return;
      }
    }
    moments.add(static_cast<double>(v), magnitude, i);
    if (!histogram.empty()) ++histogram[top16(v)];
  }
  void merge(const StreamAccumulator& other);
};

// ------------------------------------------------------------------------------------------------
// Exact order statistics by radix refinement
// ------------------------------------------------------------------------------------------------
template <typename T>
class OrderSelector {
 public:
  using Key = typename KeyTraits<T>::Key;
  static constexpr int kBits = static_cast<int>(sizeof(Key) * 8);
  static constexpr uint64_t kCollectLimit = uint64_t{1} << 15;

  // `level0` is the top-16 histogram of all N finite values; `ranks` are positions in their
  // ascending order (each < N).
  void begin(std::span<const uint32_t> level0, std::vector<uint64_t> ranks);
  // Without a histogram (small streams, see kSelectByCopyLimit): the next pass collects all
  // `count` finite values and selects every rank within that copy.
  void begin_by_copy(uint64_t count, std::vector<uint64_t> ranks);
  bool needs_pass() const { return !groups_.empty(); }

  struct PassState {
    std::vector<std::vector<uint32_t>> histograms;  // per group (histogram mode)
    std::vector<std::vector<Key>> collected;        // per group (collect mode)
    void merge(PassState& other);
  };
  PassState make_pass_state() const;

  // interest_[top16]: 0 = no group there, g+1 = the only group there, kManyGroups = look them up.
  static constexpr uint8_t kManyGroups = 255;

  [[gnu::always_inline]] inline void offer(PassState& state, T v) const {
    const Key k = KeyTraits<T>::key(v);
    if (collect_all_) {
      state.collected[0].push_back(k);
      return;
    }
    const uint8_t slot = interest_[static_cast<std::size_t>(k >> (kBits - 16))];
    if (slot == 0) [[likely]] return;
    if (slot != kManyGroups) {
      take(state, static_cast<std::size_t>(slot - 1), k);
      return;
    }
    for (std::size_t g = 0; g < groups_.size(); ++g)
      if ((k >> (kBits - groups_[g].bits)) == groups_[g].prefix) take(state, g, k);
  }
  void finish_pass(PassState& state);

  // The value at `rank` (one of those given to begin()).
  T value(uint64_t rank) const;

 private:
  struct Target {
    uint64_t rank;
    Key prefix;
    int bits;
    uint64_t rank_in_group;
    uint64_t group_count;
    bool done = false;
    Key result = 0;
  };
  struct Group {
    Key prefix;
    int bits;
    bool collect;
  };
  void regroup();
  inline void take(PassState& state, std::size_t g, Key k) const {
    const Group& group = groups_[g];
    if (group.bits > 16 && (k >> (kBits - group.bits)) != group.prefix) return;
    if (group.collect) state.collected[g].push_back(k);
    else ++state.histograms[g][static_cast<uint32_t>((k >> (kBits - group.bits - 16)) & 0xffffu)];
  }

  std::vector<Target> targets_;
  std::vector<Group> groups_;
  std::vector<uint8_t> interest_;  // 65536 slots (see kManyGroups)
  bool collect_all_ = false;       // one group holding every value (begin_by_copy)
};

// Streams of at most this many elements select their order statistics in a copy of their values
// (nth_element) instead of through the 65536-bucket radix histograms, whose fixed cost (clearing
// and scanning the buckets) dominates small tensors.
constexpr int64_t kSelectByCopyLimit = int64_t{1} << 14;

// ------------------------------------------------------------------------------------------------
// numpy.histogram (10 equal bins over a given finite range)
// ------------------------------------------------------------------------------------------------
struct BinSpec {
  enum class Arithmetic : uint8_t { kHalf, kSingle, kDouble };
  bool valid = false;
  bool supplied = false;        // range given as Python numbers (else numpy scalars of the data)
  Arithmetic arithmetic = Arithmetic::kDouble;  // the bin dtype
  double keep_first = 0, keep_last = 0;  // the range as compared with the data
  double first_bin = 0;         // the first edge in the bin dtype (subtracted from values)
  double denominator = 1;       // last - first (float64 when supplied, else in the bin dtype)
  std::array<double, 11> edges{};
  std::string error;            // numpy's message when the edges are not increasing

  // Polygraphy's hist_range for two outputs: Python numbers from .item(), so numpy computes the
  // edges in float64 then rounds them to the data's type, and the bin index in float64. `data` is
  // the histogrammed array's own dtype (float16 stays float16, ints bin in float64).
  static BinSpec supplied_range(double first, double last, DType data);
  // np.histogram's own range (a.min(), a.max()): numpy scalars of the data's type, so everything
  // happens in that type (ints in float64).
  static BinSpec data_range(double first, double last, Work data);
  // The same for float16 data: numpy keeps float16 (every operation rounded to float16).
  static BinSpec data_range_half(double first, double last);

  void check_increasing();

  [[gnu::always_inline]] inline int bin(double x) const {
    if (!(x >= keep_first && x <= keep_last)) return -1;
    double f;
    switch (arithmetic) {
      case Arithmetic::kSingle: {
        float xf = static_cast<float>(x), num = xf - static_cast<float>(first_bin);
        if (supplied) f = (static_cast<double>(num) / denominator) * 10.0;
        else f = static_cast<double>((num / static_cast<float>(denominator)) * 10.0f);
        break;
      }
      case Arithmetic::kDouble:
        f = supplied ? ((x - first_bin) / denominator) * 10.0 : ((x - first_bin) / denominator) * 10.0;
        break;
      default:
        if (supplied) f = (round(x - first_bin) / denominator) * 10.0;
        else f = round(round(round(x - first_bin) / denominator) * 10.0);
        break;
    }
    int index = static_cast<int>(f);
    if (index >= 10) index = 9;
    if (index < 0) index = 0;
    if (x < edges[static_cast<std::size_t>(index)]) --index;
    else if (index != 9 && x >= edges[static_cast<std::size_t>(index) + 1]) ++index;
    return index;
  }

 private:
  inline double round(double v) const {
    switch (arithmetic) {
      case Arithmetic::kSingle: return static_cast<double>(static_cast<float>(v));
      case Arithmetic::kHalf:
        return static_cast<double>(float16_bits_to_float(float_to_float16_bits(static_cast<float>(v))));
      case Arithmetic::kDouble: break;
    }
    return v;
  }
};

struct BinCounter {
  const BinSpec* spec = nullptr;
  std::array<int64_t, 10> counts{};
  [[gnu::always_inline]] inline void add(double x) {
    int b = spec->bin(x);
    if (b >= 0) ++counts[static_cast<std::size_t>(b)];
  }
  void merge(const BinCounter& other) {
    for (std::size_t i = 0; i < 10; ++i) counts[i] += other.counts[i];
  }
};

// ------------------------------------------------------------------------------------------------
// Turning accumulated state into Statistics
// ------------------------------------------------------------------------------------------------
// How np.quantile interpolates for a stream: in the array's own type (float16/float32/float64),
// or, for integers, in float64 after an integer (wrapping) difference of the source width.
struct QuantileArithmetic {
  enum class Kind { kHalf, kSingle, kDouble, kInteger } kind = Kind::kDouble;
  int integer_bits = 64;
  bool integer_signed = true;
  static QuantileArithmetic of(DType dtype);
  static QuantileArithmetic of_work(Work work);
};

// What is known about a stream's type.
struct StreamTraits {
  Work work = Work::kFloat32;       // min/max/median/std/var type (cast-up)
  QuantileArithmetic quantile;      // np.quantile on the stream's own dtype
  bool is_bool = false;             // no percentiles in the stats line
};

// Ranks (into the finite values' ascending order) needed for the median and the quantiles of one
// view. `total` counts every non-NaN element (including infinities); `negative_infinities` of them
// sort first. Returns positions within the finite values only.
struct RankPlan {
  int64_t total = 0;
  int64_t negative_infinities = 0;
  int64_t finite = 0;
  // full-array positions -> finite positions (or -1/-2 for -inf/+inf)
  int64_t map(int64_t position) const {
    if (position < negative_infinities) return -1;
    if (position >= negative_infinities + finite) return -2;
    return position - negative_infinities;
  }
};
void add_median_ranks(const RankPlan& plan, std::vector<uint64_t>& ranks);
void add_quantile_ranks(const RankPlan& plan, double q, std::vector<uint64_t>& ranks);

// Value lookup at full-array positions, after selection.
using RankValue = std::function<double(uint64_t finite_rank)>;
double median_from(const RankPlan& plan, const RankValue& value, Work work);
double quantile_from(const RankPlan& plan, const RankValue& value, double q, const QuantileArithmetic& arithmetic);

struct ViewState {
  const Moments* moments = nullptr;
  const NonFinite* nonfinite = nullptr;  // non-finite values of the view (Parity) or of all (Polygraphy)
  int64_t size = 0;                      // every element (Polygraphy) / elements in view (Parity)
};

// Polygraphy's numbers for a stream of `size` elements (NaN/Inf-propagating).
Statistics polygraphy_statistics(const Moments& moments, const NonFinite& nonfinite, int64_t size,
                                 const StreamTraits& traits, const RankValue& value,
                                 std::span<const double> quantiles, const Shape& shape,
                                 const NumpyNumbers* numpy = nullptr);
// Parity's numbers over the finite values only.
// When every element is in the view (no NaN/Inf, nothing excluded), numpy's float32 numbers are
// used where they are finite, so clean data prints exactly as in Polygraphy.
Statistics finite_statistics(const Moments& moments, int64_t size, const StreamTraits& traits,
                             const RankValue& value, std::span<const double> quantiles,
                             const Shape& shape, const NumpyNumbers* numpy = nullptr);

std::vector<int64_t> unravel(int64_t flat, const Shape& shape);

// ------------------------------------------------------------------------------------------------
// Parallel passes
// ------------------------------------------------------------------------------------------------
// The worker ranges of a pass over n elements: nodes of numpy's pairwise tree (so float32 sums
// can be reproduced exactly), one per worker, in order.
struct WorkPlan {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  int depth = 0;
  int workers() const { return static_cast<int>(ranges.size()); }
};
WorkPlan plan_work(int64_t n);
// Calls fn(worker, begin, end) for every range, concurrently on the compute thread pool
// (parity/core/thread_pool.h).
void run_ranges(const WorkPlan& plan, const std::function<void(int, int64_t, int64_t)>& fn);

// ------------------------------------------------------------------------------------------------
// Polygraphy's float32 mean / avg-magnitude / var of a stream
// ------------------------------------------------------------------------------------------------
struct NumpyNumbers {
  double mean = NAN;           // np.mean(x, dtype=float32)
  double avg_magnitude = NAN;  // np.mean(np.abs(x), dtype=float32)
  bool has_variance = false;   // float32 work type: numpy's own float32 var/std
  double variance = NAN, std_dev = NAN;
};

// One worker's float32 sums of a stream.
struct StreamSums {
  bool enabled = false;
  bool same_magnitude = false;  // |x| == x (errors): avg-magnitude is the mean
  bool variance = false;        // float32 work type
  bool separate_variance = false;  // the variance's mean sum differs from the mean's (float16 data)
  SumPart32 sum, magnitude, variance_sum, squares;

  // buffered: the stream's dtype is not float32 (numpy casts in 8192-value buffers).
  void init(bool buffered, bool same_magnitude_, bool variance_, bool separate, int64_t begin, int64_t end) {
    enabled = true;
    same_magnitude = same_magnitude_;
    variance = variance_;
    separate_variance = separate;
    sum = SumPart32(buffered, begin, end);
    if (!same_magnitude) magnitude = SumPart32(buffered, begin, end);
    if (variance && separate_variance) variance_sum = SumPart32(false, begin, end);
    if (variance) squares = SumPart32(false, begin, end);
  }
  inline void add(float value, float magnitude_value, float work_value) {
    sum.add(value);
    if (!same_magnitude) magnitude.add(magnitude_value);
    if (separate_variance) variance_sum.add(work_value);
  }
  inline void add_square(float work_value, float mean) {
    float d = work_value - mean;
    squares.add(d * d);
  }
};

// The means needed before the squares pass, and the final numbers, from every worker's sums.
float variance_mean(std::vector<StreamSums>& parts, int64_t n, int depth);
NumpyNumbers numpy_numbers(std::vector<StreamSums>& parts, int64_t n, int depth);

// The same from the workers' plain float32 sums of a contiguous float32 stream (`parts[w]`: the
// sum over plan_work's range w): numpy's whole sum, its mean, and the numbers.
float combine_worker_sums(const std::vector<float>& parts, int64_t n, int depth);
float variance_mean_of(float sum, int64_t n);
// `magnitude_sum` null: |x| is x (avg-magnitude is the mean); `squares_sum` null: no float32 var.
NumpyNumbers numpy_numbers_of(float sum, const float* magnitude_sum, const float* squares_sum, int64_t n);

}  // namespace parity::statistics::detail}  // namespace parity::statistics::detail
