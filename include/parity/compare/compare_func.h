// Comparison functions between two runners' outputs for one iteration (Polygraphy's CompareFunc):
//
//  simple   - Polygraphy's CompareFunc.simple, with its exact pass/fail semantics: per-output
//             atol/rtol (OR-combined), check_error_stat (elemwise, max, mean, median, quantile),
//             infinities_compare_equal, shape checks (or reshape/transpose with check_shapes=false),
//             relative error against the SECOND output (the reference) with 2.22e-16 added to its
//             zeros, cast-up of small types and numpy's type promotion. Parity's report adds: stats
//             over finite values with NaN/Inf counts, relative error statistics that leave out the
//             elements whose reference is zero (counted instead of printed as rel=1e16/inf), the
//             number of mismatching elements. The verdict is always Polygraphy's.
//  indices  - Polygraphy's CompareFunc.indices (top-k style outputs, index_tolerance).
//  distance - L2 distance and cosine similarity (Polygraphy's distance_metrics, API-only there):
//             passes when L2 <= l2_tolerance (default 1e-5) AND cosine >= threshold (0.997).
//  quality  - PSNR and SNR in dB (Polygraphy's quality_metrics, API-only there): passes when
//             PSNR >= psnr_tolerance (default 30 dB) AND SNR >= snr_tolerance (20 dB).
//
// Every function logs Polygraphy's comparison block through parity::Logger (see comparator.h for
// the surrounding "Accuracy Comparison" lines) and returns structured results.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parity/statistics/statistics.h"
#include "parity/core/array_io.h"
#include "parity/core/tensor.h"

namespace parity::compare {

// One runner's outputs for one iteration (Polygraphy's IterationResult).
struct IterationResult {
  std::string runner_name = "custom_runner";
  NamedTensors outputs;
  std::optional<double> runtime;  // seconds

  const Tensor* find(std::string_view name) const;
  std::vector<std::string> names() const;
};

// A value given once for every output, or per output name with "" as the default for the others
// (Polygraphy's Union[T, Dict[str, T]] and util.value_or_from_dict).
template <typename T>
class PerOutput {
 public:
  PerOutput() = default;
  PerOutput(T value) : global_(std::move(value)) {}  // NOLINT: implicit like Polygraphy's plain value
  static PerOutput per_name(std::vector<std::pair<std::string, T>> entries) {
    PerOutput p;
    p.global_.reset();
    p.entries_ = std::move(entries);
    return p;
  }
  bool is_per_name() const { return !global_.has_value(); }
  const std::vector<std::pair<std::string, T>>& entries() const { return entries_; }
  // The value for `name`: the global value; else the entry for `name`, the "" entry, or `fallback`.
  T get(std::string_view name, const T& fallback) const {
    if (global_) return *global_;
    for (const auto& [key, value] : entries_)
      if (key == name) return value;
    for (const auto& [key, value] : entries_)
      if (key.empty()) return value;
    return fallback;
  }

 private:
  std::optional<T> global_ = T{};
  std::vector<std::pair<std::string, T>> entries_;
};

enum class ErrorStat { kElemwise, kMax, kMean, kMedian, kQuantile };
// "elemwise", "max", "mean", "median", "quantile"; anything else throws InvalidInputError with
// Polygraphy's message ("Invalid choice for check_error_stat: ...").
ErrorStat parse_error_stat(std::string_view name);
std::string_view error_stat_name(ErrorStat stat);

// ---- Output pairing ----
// Returns the names in `other` to compare the output called `output_name` (at position `index` in
// the first result) with; empty to skip it.
using FindOutputFunc = std::function<std::vector<std::string>(const std::string& output_name, std::size_t index,
                                                              const IterationResult& other)>;

// Polygraphy's util.find_str_in_iterable: exact match, then the first case-insensitive substring
// match either way, then the element at `index`.
std::optional<std::string> find_str_in_iterable(std::string_view name, const std::vector<std::string>& sequence,
                                                std::optional<std::size_t> index = std::nullopt);

// Polygraphy's default_find_output_func: find_str_in_iterable in `other`; a non-exact match is
// skipped when that name also exists exactly in `base` (the first result), else used with the
// warning "Output names did not match exactly. Assuming <runner> output: X corresponds to output: Y".
std::vector<std::string> default_find_output(const std::string& output_name, std::size_t index,
                                             const IterationResult& other, const IterationResult& base);

// ---- Results ----
// An optional value kept on the heap: empty it costs one pointer. An OutputComparison holds the
// metrics of one comparison kind of four, and a layerwise run one OutputComparison per tensor, so
// the other kinds' room (several KB) is not carried inline. Copies copy the value.
template <typename T>
class HeapOptional {
 public:
  HeapOptional() = default;
  HeapOptional(T value) : value_(std::make_unique<T>(std::move(value))) {}
  HeapOptional(const HeapOptional& other) : value_(other.value_ ? std::make_unique<T>(*other.value_) : nullptr) {}
  HeapOptional(HeapOptional&&) noexcept = default;
  HeapOptional& operator=(const HeapOptional& other) {
    value_ = other.value_ ? std::make_unique<T>(*other.value_) : nullptr;
    return *this;
  }
  HeapOptional& operator=(HeapOptional&&) noexcept = default;
  HeapOptional& operator=(T value) {
    value_ = std::make_unique<T>(std::move(value));
    return *this;
  }
  explicit operator bool() const { return value_ != nullptr; }
  bool has_value() const { return value_ != nullptr; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return value_.get(); }
  const T* operator->() const { return value_.get(); }

 private:
  std::unique_ptr<T> value_;
};

struct SimpleMetrics {
  double atol = 1e-5, rtol = 1e-5;
  ErrorStat check_error_stat = ErrorStat::kElemwise;
  double error_quantile = 0.99;

  // Polygraphy's OutputCompareResult, NaN/Inf-propagating exactly as Polygraphy computes them
  // (mean in float32; relative error with 2.22e-16 added to zero references).
  double max_absdiff = 0, max_reldiff = 0;
  double mean_absdiff = 0, mean_reldiff = 0;
  double median_absdiff = 0, median_reldiff = 0;
  std::optional<double> quantile_absdiff, quantile_reldiff;  // only for check_error_stat=quantile
  // "Minimum Required Tolerance": the checked statistic's values (max for elemwise).
  double required_atol = 0, required_rtol = 0;

  // Parity's view: the same statistic over the finite errors, and for rel over the elements whose
  // reference is not zero; NaN when no such element exists.
  double required_atol_finite = 0, required_rtol_nonzero_reference = 0;

  int64_t element_count = 0;
  int64_t mismatch_count = 0;          // elements failing both tolerances (elemwise rule)
  int64_t zero_reference_count = 0;    // elements where the second output is exactly 0
  double max_absdiff_at_zero_reference = 0;  // largest finite abs error there (0 if none)
  int64_t nonfinite_error_count = 0;   // elements whose abs error is NaN or Inf (always mismatch)

  // Statistics of both outputs (after cast-up) and of the errors (reldiff.finite excludes zero
  // references), as logged and as a report writes them. Empty when the comparison was made with
  // SimpleOptions::keep_summaries off: a layerwise run without a report then keeps about 0.3 KB a
  // tensor instead of 5.
  struct Summaries {
    statistics::TensorSummary output0, output1, absdiff, reldiff;
  };
  HeapOptional<Summaries> summaries;
};

struct IndicesMetrics {
  int64_t index_tolerance = 0;
  int64_t values_not_found = 0;        // out0 values missing from out1's batch
  int64_t beyond_tolerance = 0;        // found farther than index_tolerance
  statistics::TensorSummary output0, output1;
};

struct DistanceMetrics {
  double l2_tolerance = 1e-5;
  double cosine_similarity_threshold = 0.997;
  double l2_norm = 0;
  double cosine_similarity = 0;
  bool l2_passed = false, cosine_passed = false;
  statistics::TensorSummary output0, output1;
};

struct QualityMetrics {
  std::optional<double> psnr_tolerance = 30.0;  // nullopt: PSNR not checked
  std::optional<double> snr_tolerance = 20.0;   // nullopt: SNR not checked
  std::optional<double> psnr;                   // dB; inf for identical outputs
  std::optional<double> snr;                    // dB
  bool psnr_passed = true, snr_passed = true;
  statistics::TensorSummary output0, output1;
};

struct OutputComparison {
  std::string kind;             // "simple", "indices", "distance", "quality"
  std::string output0, output1; // names in the first and second result
  DType dtype0 = DType::kUndefined, dtype1 = DType::kUndefined;
  Shape shape0, shape1;
  bool passed = false;
  bool compared = false;        // false when the values were never compared (shape mismatch...)
  std::string failure;          // why it failed ("" when passed)
  HeapOptional<SimpleMetrics> simple;
  HeapOptional<IndicesMetrics> indices;
  HeapOptional<DistanceMetrics> distance;
  HeapOptional<QualityMetrics> quality;
};

struct IterationComparison {
  std::vector<OutputComparison> outputs;  // in the first result's output order
  bool passed() const;                    // every compared output passed
  std::vector<std::string> mismatched() const;
};

using CompareFunc = std::function<IterationComparison(const IterationResult&, const IterationResult&)>;

// ---- simple ----
// One output pair `simple` compared, values in hand (the second reshaped to the first's shape when
// check_shapes is off), for callers that draw its error (compare/error_pictures.h).
struct ComparedPair {
  const std::string& runner0;
  const std::string& name0;
  TensorView out0;
  const std::string& runner1;
  const std::string& name1;
  TensorView out1;
  bool infinities_compare_equal = false;
};
using ComparedPairObserver = std::function<void(const ComparedPair&)>;

struct SimpleOptions {
  bool check_shapes = true;
  PerOutput<double> rtol{1e-5};
  PerOutput<double> atol{1e-5};
  bool fail_fast = false;
  FindOutputFunc find_output;  // empty: default_find_output
  PerOutput<ErrorStat> check_error_stat{ErrorStat::kElemwise};
  bool infinities_compare_equal = false;
  PerOutput<double> error_quantile{0.99};
  statistics::StatisticsStyle style = statistics::StatisticsStyle::kParity;
  // Called inside each compared output's "Error Metrics" block, after its required tolerance line (a
  // streamed layerwise comparison calls it for each tensor too); empty: nothing is called.
  ComparedPairObserver on_compared;
  // Whether each SimpleMetrics keeps its Summaries once logged (reports write them); off, a
  // comparison of many tensors holds only the figures.
  bool keep_summaries = true;
};
// Refuses (InvalidInputError) a NaN atol or rtol, global or per output: the failure test
// `difference > tolerance` is false against NaN, so every element would pass (in Polygraphy too).
// `simple` calls it.
void check_tolerances(const SimpleOptions& options);
CompareFunc simple(SimpleOptions options = {});

// The per-output core of `simple` (tolerance line through FAILED/PASSED line), for callers that
// pair outputs themselves (layerwise streaming comparison).
struct SimpleOutputParams {
  double atol = 1e-5, rtol = 1e-5;
  ErrorStat check_error_stat = ErrorStat::kElemwise;
  double error_quantile = 0.99;
  bool check_shapes = true;
  bool infinities_compare_equal = false;
  statistics::StatisticsStyle style = statistics::StatisticsStyle::kParity;
  const ComparedPairObserver* on_compared = nullptr;  // SimpleOptions::on_compared, when set
  bool keep_summaries = true;                         // SimpleOptions::keep_summaries
};
// The parameters `simple` uses for the output called `name` (what a streamed comparison uses).
SimpleOutputParams simple_output_params(const SimpleOptions& options, const std::string& name);

OutputComparison compare_simple_output(const std::string& runner0, const std::string& name0, const TensorView& out0,
                                       const std::string& runner1, const std::string& name1, const TensorView& out1,
                                       const SimpleOutputParams& params);

// ---- indices ----
struct IndicesOptions {
  PerOutput<int64_t> index_tolerance{0};
  bool fail_fast = false;
  statistics::StatisticsStyle style = statistics::StatisticsStyle::kParity;
};
CompareFunc indices(IndicesOptions options = {});

// ---- distance ----
struct DistanceOptions {
  PerOutput<double> l2_tolerance{1e-5};
  PerOutput<double> cosine_similarity_threshold{0.997};
  bool check_shapes = true;
  bool fail_fast = false;
  FindOutputFunc find_output;
  statistics::StatisticsStyle style = statistics::StatisticsStyle::kParity;
};
CompareFunc distance(DistanceOptions options = {});

// ---- quality ----
struct QualityOptions {
  std::optional<PerOutput<double>> psnr_tolerance = PerOutput<double>{30.0};  // nullopt: skip PSNR
  std::optional<PerOutput<double>> snr_tolerance = PerOutput<double>{20.0};   // nullopt: skip SNR
  bool check_shapes = true;
  bool fail_fast = false;
  FindOutputFunc find_output;
  statistics::StatisticsStyle style = statistics::StatisticsStyle::kParity;
};
CompareFunc quality(QualityOptions options = {});

// Forgets which "log once" messages were shown (Polygraphy's LogMode.ONCE is per process).
void reset_log_once();

}  // namespace parity::compare
