#include "streaming_statistics.h"

#include <cfloat>
#include <numeric>

#include "parity/core/error.h"
#include "parity/core/thread_pool.h"
#include "parity/core/values.h"

namespace parity::statistics::detail {

// ------------------------------------------------------------------------------------------------
// Work types
// ------------------------------------------------------------------------------------------------
Work cast_up_work(DType dtype) {
  switch (dtype) {
    case DType::kBool: return Work::kBool;
    case DType::kInt8: case DType::kUInt8: case DType::kInt16: case DType::kUInt16:
    case DType::kInt32: case DType::kInt4: case DType::kUInt4: case DType::kInt2: case DType::kUInt2:
      return Work::kInt32;
    case DType::kUInt32: case DType::kInt64: return Work::kInt64;
    case DType::kUInt64: return Work::kUInt64;
    case DType::kFloat64: return Work::kFloat64;
    case DType::kFloat32: case DType::kFloat16: case DType::kBFloat16:
    case DType::kFloat8E4M3FN: case DType::kFloat8E4M3FNUZ: case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ: case DType::kFloat8E8M0: case DType::kFloat4E2M1:
    case DType::kFloat6E2M3: case DType::kFloat6E3M2:
      return Work::kFloat32;
    default:
      break;
  }
  raise<UnsupportedError>("cannot compute statistics of {} values (expected a numeric or bool tensor)",
                          dtype == DType::kUndefined ? std::string_view("undefined") : dtype_name(dtype));
}

DType work_dtype(Work work) {
  switch (work) {
    case Work::kBool: return DType::kBool;
    case Work::kInt32: return DType::kInt32;
    case Work::kInt64: return DType::kInt64;
    case Work::kUInt64: return DType::kUInt64;
    case Work::kFloat32: return DType::kFloat32;
    case Work::kFloat64: return DType::kFloat64;
  }
  return DType::kFloat64;
}

double abs_wrap_value(DType source) {
  switch (source) {
    case DType::kInt8: return -128.0;
    case DType::kInt16: return -32768.0;
    case DType::kInt32: return static_cast<double>(std::numeric_limits<int32_t>::min());
    case DType::kInt64: return static_cast<double>(std::numeric_limits<int64_t>::min());
    default: return NAN;
  }
}

// ------------------------------------------------------------------------------------------------
// Chunked reading
// ------------------------------------------------------------------------------------------------
namespace {

template <typename T, typename S>
const T* convert(const S* source, int64_t count, T* scratch) {
  if constexpr (std::is_same_v<T, S>) {
    return source;
  } else {
    for (int64_t i = 0; i < count; ++i) scratch[i] = static_cast<T>(source[i]);
    return scratch;
  }
}

}  // namespace

template <typename T>
const T* load_chunk(const TensorView& t, int64_t begin, int64_t count, T* scratch) {
  switch (t.dtype()) {
    case DType::kFloat32: return convert<T>(t.data<float>() + begin, count, scratch);
    case DType::kFloat64: return convert<T>(t.data<double>() + begin, count, scratch);
    case DType::kInt8: return convert<T>(t.data<int8_t>() + begin, count, scratch);
    case DType::kUInt8: return convert<T>(t.data<uint8_t>() + begin, count, scratch);
    case DType::kInt16: return convert<T>(t.data<int16_t>() + begin, count, scratch);
    case DType::kUInt16: return convert<T>(t.data<uint16_t>() + begin, count, scratch);
    case DType::kInt32: return convert<T>(t.data<int32_t>() + begin, count, scratch);
    case DType::kUInt32: return convert<T>(t.data<uint32_t>() + begin, count, scratch);
    case DType::kInt64: return convert<T>(t.data<int64_t>() + begin, count, scratch);
    case DType::kUInt64: return convert<T>(t.data<uint64_t>() + begin, count, scratch);
    case DType::kBool: {
      const uint8_t* p = t.data<uint8_t>() + begin;
      for (int64_t i = 0; i < count; ++i) scratch[i] = static_cast<T>(p[i] ? 1 : 0);
      return scratch;
    }
    case DType::kFloat16: {
      const uint16_t* p = t.data<uint16_t>() + begin;
      for (int64_t i = 0; i < count; ++i) scratch[i] = static_cast<T>(float16_bits_to_float(p[i]));
      return scratch;
    }
    case DType::kBFloat16: {
      const uint16_t* p = t.data<uint16_t>() + begin;
      for (int64_t i = 0; i < count; ++i) scratch[i] = static_cast<T>(bfloat16_bits_to_float(p[i]));
      return scratch;
    }
    default:
      for (int64_t i = 0; i < count; ++i) {
        double v = element_as_double(t, begin + i);
        if constexpr (std::is_floating_point_v<T>) scratch[i] = static_cast<T>(v);
        else scratch[i] = std::isfinite(v) ? static_cast<T>(v) : T{};
      }
      return scratch;
  }
}

template const uint8_t* load_chunk<uint8_t>(const TensorView&, int64_t, int64_t, uint8_t*);
template const int32_t* load_chunk<int32_t>(const TensorView&, int64_t, int64_t, int32_t*);
template const int64_t* load_chunk<int64_t>(const TensorView&, int64_t, int64_t, int64_t*);
template const uint64_t* load_chunk<uint64_t>(const TensorView&, int64_t, int64_t, uint64_t*);
template const float* load_chunk<float>(const TensorView&, int64_t, int64_t, float*);
template const double* load_chunk<double>(const TensorView&, int64_t, int64_t, double*);

// ------------------------------------------------------------------------------------------------
// Accumulators
// ------------------------------------------------------------------------------------------------
void Moments::merge(const Moments& other) {
  if (other.n == 0) return;
  if (n == 0) {
    *this = other;
    return;
  }
  // Re-express other's shifted sums around this shift: x - K1 = (x - K2) + (K2 - K1).
  double d = other.shift - shift;
  double on = static_cast<double>(other.n);
  s2 += other.s2 + 2 * d * other.s1 + on * d * d;
  s1 += other.s1 + on * d;
  sabs += other.sabs;
  n += other.n;
  // First occurrence wins on ties (the parts may interleave, e.g. zero / non-zero references).
  if (other.min < min || (other.min == min && other.argmin < argmin)) { min = other.min; argmin = other.argmin; }
  if (other.max > max || (other.max == max && other.argmax < argmax)) { max = other.max; argmax = other.argmax; }
}

double Moments::variance() const {
  if (n == 0) return NAN;
  double dn = static_cast<double>(n);
  double v = (s2 - s1 * s1 / dn) / dn;
  return v > 0 ? v : 0.0;
}

void NonFinite::merge(const NonFinite& other) {
  auto first_of = [](int64_t mine, int64_t count, int64_t theirs, int64_t their_count) {
    if (!their_count) return mine;
    if (!count) return theirs;
    return std::min(mine, theirs);
  };
  first_nan = first_of(first_nan, nan, other.first_nan, other.nan);
  first_posinf = first_of(first_posinf, posinf, other.first_posinf, other.posinf);
  first_neginf = first_of(first_neginf, neginf, other.first_neginf, other.neginf);
  nan += other.nan;
  posinf += other.posinf;
  neginf += other.neginf;
}

namespace {

// Cleared 65536-bucket buffers kept by each thread for its next streams.
std::vector<std::vector<uint32_t>>& histogram_cache() {
  thread_local std::vector<std::vector<uint32_t>> cache;
  return cache;
}
constexpr std::size_t kHistogramCacheLimit = 16;

void return_histogram(std::vector<uint32_t>& histogram) {
  if (histogram.size() != 65536) return;
  auto& cache = histogram_cache();
  if (cache.size() < kHistogramCacheLimit) cache.push_back(std::move(histogram));
  histogram.clear();
}

}  // namespace

void StreamAccumulator::enable_histogram() {
  auto& cache = histogram_cache();
  if (histogram.size() == 65536) {
    std::fill(histogram.begin(), histogram.end(), 0u);
  } else if (!cache.empty()) {
    histogram = std::move(cache.back());
    cache.pop_back();
    std::fill(histogram.begin(), histogram.end(), 0u);
  } else {
    histogram.assign(65536, 0);
  }
}

StreamAccumulator& StreamAccumulator::operator=(StreamAccumulator&& other) noexcept {
  if (this == &other) return *this;
  return_histogram(histogram);
  moments = other.moments;
  nonfinite = other.nonfinite;
  histogram = std::move(other.histogram);
  return *this;
}

StreamAccumulator::~StreamAccumulator() { return_histogram(histogram); }

void StreamAccumulator::merge(const StreamAccumulator& other) {
  moments.merge(other.moments);
  nonfinite.merge(other.nonfinite);
  if (!other.histogram.empty()) {
    if (histogram.empty()) enable_histogram();
    for (std::size_t i = 0; i < 65536; ++i) histogram[i] += other.histogram[i];
  }
}

// ------------------------------------------------------------------------------------------------
// OrderSelector
// ------------------------------------------------------------------------------------------------
template <typename T>
void OrderSelector<T>::begin(std::span<const uint32_t> level0, std::vector<uint64_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  targets_.clear();
  collect_all_ = false;
  std::size_t r = 0;
  uint64_t below = 0;
  for (uint32_t bucket = 0; bucket < 65536 && r < ranks.size(); ++bucket) {
    uint64_t count = level0[bucket];
    while (r < ranks.size() && ranks[r] < below + count) {
      Target t;
      t.rank = ranks[r];
      t.prefix = static_cast<Key>(bucket);
      t.bits = 16;
      t.rank_in_group = ranks[r] - below;
      t.group_count = count;
      targets_.push_back(t);
      ++r;
    }
    below += count;
  }
  if (r != ranks.size()) raise<InternalError>("order statistic rank {} beyond {} values", ranks[r], below);
  regroup();
}

template <typename T>
void OrderSelector<T>::begin_by_copy(uint64_t count, std::vector<uint64_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  targets_.clear();
  groups_.clear();
  collect_all_ = !ranks.empty();
  for (uint64_t rank : ranks) {
    if (rank >= count) raise<InternalError>("order statistic rank {} beyond {} values", rank, count);
    Target t;
    t.rank = rank;
    t.prefix = 0;
    t.bits = 0;
    t.rank_in_group = rank;
    t.group_count = count;
    targets_.push_back(t);
  }
  if (collect_all_) groups_.push_back(Group{0, 0, true});
}

template <typename T>
void OrderSelector<T>::regroup() {
  collect_all_ = false;
  groups_.clear();
  if (std::all_of(targets_.begin(), targets_.end(), [](const Target& t) { return t.done; })) return;
  interest_.assign(65536, 0);
  for (Target& t : targets_) {
    if (t.done) continue;
    if (t.bits >= kBits) {
      t.done = true;
      t.result = t.prefix;
      continue;
    }
    bool found = false;
    for (const Group& g : groups_)
      if (g.prefix == t.prefix && g.bits == t.bits) found = true;
    if (found) continue;
    groups_.push_back(Group{t.prefix, t.bits, t.group_count <= kCollectLimit});
    uint8_t& slot = interest_[static_cast<std::size_t>(t.prefix >> (t.bits - 16))];
    slot = (slot == 0 && groups_.size() < kManyGroups) ? static_cast<uint8_t>(groups_.size()) : kManyGroups;
  }
}

template <typename T>
typename OrderSelector<T>::PassState OrderSelector<T>::make_pass_state() const {
  PassState state;
  state.histograms.resize(groups_.size());
  state.collected.resize(groups_.size());
  for (std::size_t g = 0; g < groups_.size(); ++g)
    if (!groups_[g].collect) state.histograms[g].assign(65536, 0);
  // A copy of every value (begin_by_copy): room for all of them up front.
  if (collect_all_) state.collected[0].reserve(static_cast<std::size_t>(targets_.front().group_count));
  return state;
}

template <typename T>
void OrderSelector<T>::PassState::merge(PassState& other) {
  for (std::size_t g = 0; g < histograms.size(); ++g) {
    for (std::size_t i = 0; i < histograms[g].size(); ++i) histograms[g][i] += other.histograms[g][i];
    collected[g].insert(collected[g].end(), other.collected[g].begin(), other.collected[g].end());
  }
}

template <typename T>
void OrderSelector<T>::finish_pass(PassState& state) {
  // Targets come in ascending rank order; within a collected group, everything past the previous
  // selected position is >= it, so each selection only partitions what lies beyond.
  std::vector<std::size_t> selected_up_to(groups_.size(), 0);
  for (Target& t : targets_) {
    if (t.done) continue;
    std::size_t g = 0;
    while (!(groups_[g].prefix == t.prefix && groups_[g].bits == t.bits)) ++g;
    if (groups_[g].collect) {
      auto& keys = state.collected[g];
      if (t.rank_in_group >= keys.size()) raise<InternalError>("order statistic group lost values");
      std::size_t from = std::min<std::size_t>(selected_up_to[g], static_cast<std::size_t>(t.rank_in_group));
      auto position = keys.begin() + static_cast<std::ptrdiff_t>(t.rank_in_group);
      if (from == static_cast<std::size_t>(t.rank_in_group) && from > 0) {
        // The rank right after the previous one (the upper value of a median or quantile): the
        // smallest of what lies beyond.
        std::iter_swap(position, std::min_element(position, keys.end()));
      } else {
        std::nth_element(keys.begin() + static_cast<std::ptrdiff_t>(from), position, keys.end());
      }
      selected_up_to[g] = static_cast<std::size_t>(t.rank_in_group) + 1;
      t.result = keys[t.rank_in_group];
      t.done = true;
    } else {
      const auto& hist = state.histograms[g];
      uint64_t below = 0;
      uint32_t bucket = 0;
      for (; bucket < 65536; ++bucket) {
        if (t.rank_in_group < below + hist[bucket]) break;
        below += hist[bucket];
      }
      if (bucket == 65536) raise<InternalError>("order statistic group lost values");
      t.prefix = static_cast<Key>((t.prefix << 16) | bucket);
      t.bits += 16;
      t.rank_in_group -= below;
      t.group_count = hist[bucket];
    }
  }
  regroup();
}

template <typename T>
T OrderSelector<T>::value(uint64_t rank) const {
  for (const Target& t : targets_)
    if (t.rank == rank) return KeyTraits<T>::value(t.result);
  raise<InternalError>("order statistic rank {} was not requested", rank);
}

template class OrderSelector<uint8_t>;
template class OrderSelector<int32_t>;
template class OrderSelector<int64_t>;
template class OrderSelector<uint64_t>;
template class OrderSelector<float>;
template class OrderSelector<double>;

// ------------------------------------------------------------------------------------------------
// Statistics
// ------------------------------------------------------------------------------------------------
std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size(), 0);
  for (std::size_t k = shape.size(); k-- > 0;) {
    int64_t dim = shape[k];
    if (dim <= 0) break;
    index[k] = flat % dim;
    flat /= dim;
  }
  return index;
}

namespace {

constexpr double kFloatMax = static_cast<double>(FLT_MAX);

double as_float32(double x) { return static_cast<double>(static_cast<float>(x)); }

// Rounds to float32 unless that overflows (Parity's view keeps the double then).
double as_float32_if_finite(double x) {
  double r = as_float32(x);
  return std::isfinite(r) || !std::isfinite(x) ? r : x;
}

const std::array<double, 3> kStandardQuantiles = {0.9, 0.95, 0.99};

std::vector<double> quantile_levels(const StreamTraits& traits, std::span<const double> extra) {
  std::vector<double> levels;
  if (!traits.is_bool) levels.assign(kStandardQuantiles.begin(), kStandardQuantiles.end());
  for (double q : extra) levels.push_back(q);
  return levels;
}

}  // namespace

Statistics polygraphy_statistics(const Moments& m, const NonFinite& nf, int64_t size, const StreamTraits& traits,
                                 const RankValue& value, std::span<const double> extra_quantiles,
                                 const Shape& shape, const NumpyNumbers* numpy) {
  Statistics s;
  s.count = size;
  s.quantile_levels = quantile_levels(traits, extra_quantiles);
  s.quantile_values.assign(s.quantile_levels.size(), NAN);
  if (size == 0) {
    // Polygraphy's use_higher_precision returns 0 for empty arrays; np.mean gives NaN and
    // np.quantile of nothing gives inf.
    s.state = Statistics::State::kEmpty;
    s.mean = NAN;
    s.avg_magnitude = NAN;
    s.std_dev = s.variance = s.median = s.min = s.max = 0;
    std::fill(s.quantile_values.begin(), s.quantile_values.end(), INFINITY);
    return s;
  }
  if (nf.nan > 0) {
    s.mean = s.std_dev = s.variance = s.median = s.min = s.max = s.avg_magnitude = NAN;
    s.argmin = s.argmax = unravel(nf.first_nan, shape);
    return s;
  }
  const bool any_inf = nf.posinf || nf.neginf;
  // mean / avg-magnitude: np.mean(dtype=float32) -> float32 accumulation.
  if (nf.posinf && nf.neginf) s.mean = NAN;
  else if (nf.posinf) s.mean = INFINITY;
  else if (nf.neginf) s.mean = -INFINITY;
  else {
    double sum = m.sum();
    s.mean = std::fabs(sum) > kFloatMax ? std::copysign(INFINITY, sum) : as_float32(m.mean());
  }
  if (any_inf) s.avg_magnitude = INFINITY;
  else {
    double sum_abs = m.sabs;
    s.avg_magnitude = std::fabs(sum_abs) > kFloatMax ? std::copysign(INFINITY, sum_abs)
                                                      : as_float32(sum_abs / static_cast<double>(m.n));
  }
  // std / var in the cast-up type.
  if (any_inf) {
    s.variance = s.std_dev = NAN;
  } else {
    double var = m.variance();
    if (traits.work == Work::kFloat32) {
      double centred = var * static_cast<double>(m.n);
      if (std::fabs(m.sum()) > kFloatMax || centred > kFloatMax) {
        s.variance = s.std_dev = INFINITY;
      } else {
        s.variance = as_float32(var);
        s.std_dev = as_float32(std::sqrt(s.variance));
      }
    } else {
      s.variance = var;
      s.std_dev = std::sqrt(var);
    }
  }
  if (numpy) {
    // numpy's own float32 sums (exact): they already carry Inf/overflow/NaN as numpy does.
    s.mean = numpy->mean;
    s.avg_magnitude = numpy->avg_magnitude;
    if (numpy->has_variance) {
      s.variance = numpy->variance;
      s.std_dev = numpy->std_dev;
    }
  }
  // min / max (first occurrence).
  if (nf.neginf) { s.min = -INFINITY; s.argmin = unravel(nf.first_neginf, shape); }
  else if (m.n > 0) { s.min = m.min; s.argmin = unravel(m.argmin, shape); }
  else { s.min = INFINITY; s.argmin = unravel(nf.first_posinf, shape); }
  if (nf.posinf) { s.max = INFINITY; s.argmax = unravel(nf.first_posinf, shape); }
  else if (m.n > 0) { s.max = m.max; s.argmax = unravel(m.argmax, shape); }
  else { s.max = -INFINITY; s.argmax = unravel(nf.first_neginf, shape); }
  // median / quantiles over all values (infinities sort at the ends).
  RankPlan plan{size, nf.neginf, m.n};
  s.median = median_from(plan, value, traits.work);
  for (std::size_t i = 0; i < s.quantile_levels.size(); ++i)
    s.quantile_values[i] = quantile_from(plan, value, s.quantile_levels[i], traits.quantile);
  return s;
}

Statistics finite_statistics(const Moments& m, int64_t size, const StreamTraits& traits, const RankValue& value,
                             std::span<const double> extra_quantiles, const Shape& shape, const NumpyNumbers* numpy) {
  Statistics s;
  s.count = m.n;
  s.quantile_levels = quantile_levels(traits, extra_quantiles);
  s.quantile_values.assign(s.quantile_levels.size(), NAN);
  if (size == 0) {
    s.state = Statistics::State::kEmpty;
    s.mean = s.std_dev = s.variance = s.median = s.min = s.max = s.avg_magnitude = NAN;
    return s;
  }
  if (m.n == 0) {
    s.state = Statistics::State::kNoFiniteValues;
    s.mean = s.std_dev = s.variance = s.median = s.min = s.max = s.avg_magnitude = NAN;
    return s;
  }
  const double n = static_cast<double>(m.n);
  s.mean = as_float32_if_finite(m.mean());
  s.avg_magnitude = as_float32_if_finite(m.sabs / n);
  double var = m.variance();
  if (traits.work == Work::kFloat32) {
    s.variance = as_float32_if_finite(var);
    s.std_dev = as_float32_if_finite(std::sqrt(s.variance));
  } else {
    s.variance = var;
    s.std_dev = std::sqrt(var);
  }
  if (numpy && m.n == size) {
    if (std::isfinite(numpy->mean)) s.mean = numpy->mean;
    if (std::isfinite(numpy->avg_magnitude)) s.avg_magnitude = numpy->avg_magnitude;
    if (numpy->has_variance && std::isfinite(numpy->variance)) {
      s.variance = numpy->variance;
      s.std_dev = numpy->std_dev;
    }
  }
  s.min = m.min;
  s.argmin = unravel(m.argmin, shape);
  s.max = m.max;
  s.argmax = unravel(m.argmax, shape);
  RankPlan plan{m.n, 0, m.n};
  s.median = median_from(plan, value, traits.work);
  for (std::size_t i = 0; i < s.quantile_levels.size(); ++i)
    s.quantile_values[i] = quantile_from(plan, value, s.quantile_levels[i], traits.quantile);
  return s;
}

// ------------------------------------------------------------------------------------------------
// Parallel passes
// ------------------------------------------------------------------------------------------------
WorkPlan plan_work(int64_t n) {
  // A pass on the compute pool costs a wake-up (microseconds), not a thread start, and the pair
  // statistics cost several nanoseconds an element: 32 K elements are worth a worker.
  constexpr int64_t kMinimumPerWorker = int64_t{1} << 15;
  int64_t hardware = compute_threads();
  int64_t wanted = std::min<int64_t>({hardware, std::max<int64_t>(1, n / kMinimumPerWorker), 16});
  // Each worker's uint32 radix buckets must not overflow: at most 2^31 elements per worker (the
  // tree split halves ranges, so round the count needed up to a power of two).
  int64_t needed = (n + (int64_t{1} << 31) - 1) >> 31, power = 1;
  while (power < needed) power *= 2;
  wanted = std::max(wanted, power);
  WorkPlan plan;
  plan.ranges = tree_ranges(n, static_cast<int>(std::min<int64_t>(wanted, 1 << 20)), &plan.depth);
  return plan;
}

void run_ranges(const WorkPlan& plan, const std::function<void(int, int64_t, int64_t)>& fn) {
  if (plan.ranges.size() <= 1) {
    fn(0, plan.ranges.empty() ? 0 : plan.ranges[0].first, plan.ranges.empty() ? 0 : plan.ranges[0].second);
    return;
  }
  compute_thread_pool().parallel_for(plan.workers(), [&](int w) {
    auto [begin, end] = plan.ranges[static_cast<std::size_t>(w)];
    fn(w, begin, end);
  });
}

}  // namespace parity::statistics::detail
