// CompareFunc.indices, distance (L2 + cosine similarity) and quality (PSNR + SNR).
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "parity/statistics/pair_statistics.h"
#include "log_util.h"
#include "parity/compare/compare_func.h"
#include "parity/core/python_format.h"
#include "parity/core/error.h"
#include "parity/core/values.h"
#include "shape_match.h"

namespace parity::compare {

using namespace detail;
using namespace statistics;

namespace {

OutputComparison start_result(std::string kind, const std::string& name0, const TensorView& out0,
                              const std::string& name1, const TensorView& out1) {
  OutputComparison r;
  r.kind = std::move(kind);
  r.output0 = name0;
  r.output1 = name1;
  r.dtype0 = out0.dtype();
  r.dtype1 = out1.dtype();
  r.shape0 = out0.shape();
  r.shape1 = out1.shape();
  return r;
}

// The shape handling shared by distance and quality (same text as simple). Returns false (and
// fills `result`) when the outputs cannot be compared.
bool match_shapes(bool check_shapes, const std::string& name0, const Tensor& out0, const Tensor& out1,
                  OutputComparison& result, Tensor& out0_matched, Tensor& out1_matched) {
  if (check_shapes && out0.shape() != out1.shape()) {
    log::error(
        "FAILED | Output: `{}` | Will not compare outputs of different shapes.\nNote: Output shapes are {} and {}.",
        name0, shape_text(out0.shape()), shape_text(out1.shape()));
    log_once(Severity::kError,
             "Note: Use --no-shape-check or set check_shapes=False to attempt to compare values anyway.");
    result.failure = fmt::format("shapes differ: {} and {}", shape_text(out0.shape()), shape_text(out1.shape()));
    return false;
  }
  out1_matched = try_match_shape(out1, out0.shape());
  if (out1_matched.size() != out0.size()) {
    log::error(
        "FAILED | Output: '{}' | Cannot compare outputs with different numbers of elements: {} has {}, {} has {}",
        name0, shape_text(out0.shape()), out0.size(), shape_text(out1.shape()), out1.size());
    result.failure = fmt::format("different numbers of elements: {} and {}", out0.size(), out1.size());
    return false;
  }
  out0_matched = out0.reshaped(out1_matched.shape());
  return true;
}

void log_pair_stats(const TensorSummary& s0, const TensorSummary& s1, const Tensor& out0, const Tensor& out1,
                    bool failed, const std::string& label0, const std::string& label1, StatisticsStyle style) {
  Severity severity = failed ? Severity::kInfo : Severity::kVerbose;
  std::optional<Histogram> h0, h1;
  if (Logger::global().enabled(severity)) {
    auto range = common_histogram_range(s0, s1, style);
    if (range) {
      h0 = histogram(out0.view(), range, style);
      h1 = histogram(out1.view(), range, style);
    }
  }
  TensorView v0 = out0.view(), v1 = out1.view();
  log_output_stats(s0, &v0, h0 ? &*h0 : nullptr, failed, label0, style);
  log_output_stats(s1, &v1, h1 ? &*h1 : nullptr, failed, label1, style);
}

void log_value_dumps(const std::string& runner0, const std::string& name0, const Tensor& out0,
                     const std::string& runner1, const std::string& name1, const Tensor& out1) {
  if (!Logger::global().enabled(Severity::kSuperVerbose)) return;
  log::super_verbose("{} | Output: {} (dtype={}, shape={}):\n{}", runner_column(runner0), name0,
                     dtype_text(out0.dtype()), shape_text(out0.shape()), indent_block(numpy_array_str(out0.view())));
  log::super_verbose("{} | Output: {} (dtype={}, shape={}):\n{}", runner_column(runner1), name1,
                     dtype_text(out1.dtype()), shape_text(out1.shape()), indent_block(numpy_array_str(out1.view())));
}

std::string numpy_scalar_text(const TensorView& t, int64_t index) {
  std::size_t bytes = storage_bytes(t.dtype(), 1);
  TensorView scalar(t.dtype(), Shape{},
                    static_cast<const unsigned char*>(t.raw()) + static_cast<std::size_t>(index) * bytes);
  return numpy_array_str(scalar);
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// indices
// ------------------------------------------------------------------------------------------------
CompareFunc indices(IndicesOptions options) {
  return [options](const IterationResult& r0, const IterationResult& r1) {
    auto match = [&](const std::string& name0, const Tensor& out0, const std::string& name1, const Tensor& out1) {
      OutputComparison result = start_result("indices", name0, out0.view(), name1, out1.view());
      IndicesMetrics metrics;
      metrics.index_tolerance = options.index_tolerance.get(name0, 0);
      const int64_t tolerance = metrics.index_tolerance;
      if (out0.shape() != out1.shape()) {
        log::error("Cannot compare outputs of different shapes.");
        result.failure = fmt::format("shapes differ: {} and {}", shape_text(out0.shape()), shape_text(out1.shape()));
        return result;
      }
      bool passed = true;
      const int64_t length = out0.rank() == 0 ? 1 : out0.shape().back();
      const int64_t batches = length == 0 ? 0 : out0.size() / length;
      const TensorView v0 = out0.view(), v1 = out1.view();
      for (int64_t batch = 0; batch < batches; ++batch) {
        const int64_t base = batch * length;
        const int64_t checked = tolerance > 0 ? std::max<int64_t>(0, length - tolerance) : length;
        for (int64_t index0 = 0; index0 < checked; ++index0) {
          double value0 = element_as_double(v0, base + index0);
          if (value0 == element_as_double(v1, base + index0)) continue;
          int64_t index1 = -1;
          for (int64_t k = 0; k < length; ++k)
            if (element_as_double(v1, base + k) == value0) {
              index1 = k;
              break;
            }
          if (index1 < 0) {
            log::error("FAILED | Value: {} not found in output", numpy_scalar_text(v0, base + index0));
            ++metrics.values_not_found;
            passed = false;
            if (options.fail_fast) {
              result.failure = "value not found";
              result.indices = std::move(metrics);
              result.compared = true;
              return result;
            }
            continue;
          }
          if (std::llabs(index1 - index0) > tolerance) {
            log::error("FAILED | Difference exceeds index tolerance ({})", tolerance);
            ++metrics.beyond_tolerance;
            passed = false;
            if (options.fail_fast) {
              result.failure = "difference exceeds index tolerance";
              result.indices = std::move(metrics);
              result.compared = true;
              return result;
            }
            continue;
          }
        }
      }
      metrics.output0 = summarize(v0);
      metrics.output1 = summarize(v1);
      log_pair_stats(metrics.output0, metrics.output1, out0, out1, !passed,
                     fmt::format("{}: {}", r0.runner_name, name0), fmt::format("{}: {}", r1.runner_name, name1),
                     options.style);
      if (passed) log::finish("PASSED | Difference is within index tolerance ({})", tolerance);
      else result.failure = metrics.values_not_found ? "value not found" : "difference exceeds index tolerance";
      result.passed = passed;
      result.compared = true;
      result.indices = std::move(metrics);
      return result;
    };
    return run_comparison(match, options.fail_fast, r0, r1, {});
  };
}

// A measured value and its limit in as few significant digits (5 at least) as tell them apart,
// so a check never reads "Cosine Similarity (1) below threshold (1)".
std::pair<std::string, std::string> value_and_limit(double value, double limit) {
  for (int digits = 5; digits < 17; ++digits) {
    std::string v = format_g(value, digits), l = format_g(limit, digits);
    if (v != l || value == limit || !std::isfinite(value) || !std::isfinite(limit)) return {v, l};
  }
  return {format_g(value, 17), format_g(limit, 17)};
}

// ------------------------------------------------------------------------------------------------
// distance
// ------------------------------------------------------------------------------------------------
CompareFunc distance(DistanceOptions options) {
  return [options](const IterationResult& r0, const IterationResult& r1) {
    check_per_output_keys(options.l2_tolerance, r0, r1, "the l2_tolerance dictionary");
    check_per_output_keys(options.cosine_similarity_threshold, r0, r1, "the cosine_similarity_threshold dictionary");
    if (!options.check_shapes)
      log::info("Strict shape checking disabled. Will attempt to match output shapes before comparisons");
    auto match = [&](const std::string& name0, const Tensor& out0_in, const std::string& name1, const Tensor& out1_in) {
      OutputComparison result = start_result("distance", name0, out0_in.view(), name1, out1_in.view());
      DistanceMetrics m;
      m.l2_tolerance = options.l2_tolerance.get(name0, 1e-5);
      m.cosine_similarity_threshold = options.cosine_similarity_threshold.get(name0, 0.997);
      log::info("Tolerance: [L2={}, Cosine Similarity min={}]", format_g(m.l2_tolerance, 5),
                format_g(m.cosine_similarity_threshold, 5));
      log::extra_verbose("Note: Comparing {} vs. {}", r0.runner_name, r1.runner_name);
      Tensor out0, out1;
      if (!match_shapes(options.check_shapes, name0, out0_in, out1_in, result, out0, out1)) return result;
      log_value_dumps(r0.runner_name, name0, out0, r1.runner_name, name1, out1);

      PairSums sums = pair_sums(out0.view(), out1.view());
      m.l2_norm = std::sqrt(sums.squared_error);
      double magnitude0 = std::sqrt(sums.square0), magnitude1 = std::sqrt(sums.square1);
      if (magnitude0 == 0 && magnitude1 == 0) m.cosine_similarity = 1.0;
      else if (magnitude0 == 0 || magnitude1 == 0) m.cosine_similarity = 0.0;
      else {
        double cosine = sums.dot / (magnitude0 * magnitude1);
        if (std::isnan(cosine)) {
          // Polygraphy's max(-1.0, min(1.0, nan)) is 1.0; Parity reports the NaN.
          m.cosine_similarity = options.style == StatisticsStyle::kPolygraphy ? 1.0 : NAN;
        } else {
          m.cosine_similarity = std::max(-1.0, std::min(1.0, cosine));
        }
      }
      m.l2_passed = m.l2_norm <= m.l2_tolerance;
      m.cosine_passed = m.cosine_similarity >= m.cosine_similarity_threshold;
      const bool passed = m.l2_passed && m.cosine_passed;

      m.output0 = summarize(out0.view());
      m.output1 = summarize(out1.view());
      log_pair_stats(m.output0, m.output1, out0, out1, !passed, fmt::format("{}: {}", r0.runner_name, name0),
                     fmt::format("{}: {}", r1.runner_name, name1), options.style);
      log::info("Distance Metrics: {}", name0);
      {
        Logger::Indent indent;
        auto [l2, l2_limit] = value_and_limit(m.l2_norm, m.l2_tolerance);
        auto [cosine, cosine_limit] = value_and_limit(m.cosine_similarity, m.cosine_similarity_threshold);
        log::info("L2 Norm: {} (tolerance: {}) | {}", l2, l2_limit, m.l2_passed ? "PASSED" : "FAILED");
        log::info("Cosine Similarity: {} (threshold: {}) | {}", cosine, cosine_limit,
                  m.cosine_passed ? "PASSED" : "FAILED");
      }
      if (!passed) {
        auto [l2, l2_limit] = value_and_limit(m.l2_norm, m.l2_tolerance);
        auto [cosine, cosine_limit] = value_and_limit(m.cosine_similarity, m.cosine_similarity_threshold);
        if (!m.l2_passed)
          log::error("FAILED | Output: '{}' | L2 Norm ({}) exceeds tolerance ({})", name0, l2, l2_limit);
        if (!m.cosine_passed)
          log::error("FAILED | Output: '{}' | Cosine Similarity ({}) below threshold ({})", name0, cosine,
                     cosine_limit);
        result.failure = !m.l2_passed ? "L2 norm exceeds tolerance" : "cosine similarity below threshold";
      } else {
        log::finish("PASSED | Output: '{}' | All metrics passed: L2 Norm, Cosine Similarity", name0);
      }
      result.passed = passed;
      result.compared = true;
      result.distance = std::move(m);
      return result;
    };
    return run_comparison(match, options.fail_fast, r0, r1, options.find_output);
  };
}

// ------------------------------------------------------------------------------------------------
// quality
// ------------------------------------------------------------------------------------------------
CompareFunc quality(QualityOptions options) {
  return [options](const IterationResult& r0, const IterationResult& r1) {
    if (options.psnr_tolerance) check_per_output_keys(*options.psnr_tolerance, r0, r1, "the psnr_tolerance dictionary");
    if (options.snr_tolerance) check_per_output_keys(*options.snr_tolerance, r0, r1, "the snr_tolerance dictionary");
    if (!options.check_shapes)
      log::info("Strict shape checking disabled. Will attempt to match output shapes before comparisons");
    auto match = [&](const std::string& name0, const Tensor& out0_in, const std::string& name1, const Tensor& out1_in) {
      OutputComparison result = start_result("quality", name0, out0_in.view(), name1, out1_in.view());
      QualityMetrics m;
      m.psnr_tolerance =
          options.psnr_tolerance ? std::optional<double>(options.psnr_tolerance->get(name0, 30.0)) : std::nullopt;
      m.snr_tolerance =
          options.snr_tolerance ? std::optional<double>(options.snr_tolerance->get(name0, 20.0)) : std::nullopt;
      std::vector<std::string> tolerance_text;
      if (m.psnr_tolerance) tolerance_text.push_back(fmt::format("PSNR min={} dB", format_g(*m.psnr_tolerance, 5)));
      if (m.snr_tolerance) tolerance_text.push_back(fmt::format("SNR min={} dB", format_g(*m.snr_tolerance, 5)));
      if (!tolerance_text.empty()) log::info("Quality Metrics Tolerance: [{}]", fmt::join(tolerance_text, ", "));
      else log::warning("No quality metrics enabled for comparison");
      log::extra_verbose("Note: Comparing {} vs. {}", r0.runner_name, r1.runner_name);
      Tensor out0, out1;
      if (!match_shapes(options.check_shapes, name0, out0_in, out1_in, result, out0, out1)) return result;
      log_value_dumps(r0.runner_name, name0, out0, r1.runner_name, name1, out1);

      PairSums sums = pair_sums(out0.view(), out1.view());
      m.output0 = summarize(out0.view());
      m.output1 = summarize(out1.view());
      const double n = static_cast<double>(sums.count);
      const double mse = sums.count ? sums.squared_error / n : NAN;
      if (m.psnr_tolerance) {
        if (mse == 0) {
          m.psnr = INFINITY;
        } else {
          double max_value = m.output0.polygraphy.max;  // first output's max (Polygraphy's choice)
          if (max_value <= 0) max_value = 1.0;
          m.psnr = 20 * std::log10(max_value) - 10 * std::log10(mse);
        }
        m.psnr_passed = *m.psnr >= *m.psnr_tolerance;
      }
      if (m.snr_tolerance) {
        const double signal = sums.count ? sums.square0 / n : NAN;
        if (mse == 0) m.snr = INFINITY;
        else if (signal == 0) m.snr = -INFINITY;
        else m.snr = 10 * std::log10(signal / mse);
        m.snr_passed = *m.snr >= *m.snr_tolerance;
      }
      const bool passed = m.psnr_passed && m.snr_passed;
      log_pair_stats(m.output0, m.output1, out0, out1, !passed, fmt::format("{}: {}", r0.runner_name, name0),
                     fmt::format("{}: {}", r1.runner_name, name1), options.style);
      log::info("Quality Metrics: {}", name0);
      {
        Logger::Indent indent;
        if (m.psnr) {
          auto [psnr, limit] = value_and_limit(*m.psnr, *m.psnr_tolerance);
          log::info("PSNR: {} dB (min required: {} dB) | {}", psnr, limit, m.psnr_passed ? "PASSED" : "FAILED");
        }
        if (m.snr) {
          auto [snr, limit] = value_and_limit(*m.snr, *m.snr_tolerance);
          log::info("SNR: {} dB (min required: {} dB) | {}", snr, limit, m.snr_passed ? "PASSED" : "FAILED");
        }
      }
      if (!passed) {
        if (m.psnr && !m.psnr_passed) {
          auto [psnr, limit] = value_and_limit(*m.psnr, *m.psnr_tolerance);
          log::error("FAILED | Output: '{}' | PSNR ({} dB) below required minimum ({} dB)", name0, psnr, limit);
        }
        if (m.snr && !m.snr_passed) {
          auto [snr, limit] = value_and_limit(*m.snr, *m.snr_tolerance);
          log::error("FAILED | Output: '{}' | SNR ({} dB) below required minimum ({} dB)", name0, snr, limit);
        }
        result.failure = (m.psnr && !m.psnr_passed) ? "PSNR below minimum" : "SNR below minimum";
      } else {
        std::vector<std::string> metrics_passed;
        if (m.psnr) metrics_passed.push_back("PSNR");
        if (m.snr) metrics_passed.push_back("SNR");
        if (!metrics_passed.empty())
          log::finish("PASSED | Output: '{}' | All quality metrics passed: {}", name0, fmt::join(metrics_passed, ", "));
        else
          log::warning("PASSED | Output: '{}' | No quality metrics were successfully computed", name0);
      }
      result.passed = passed;
      result.compared = true;
      result.quality = std::move(m);
      return result;
    };
    return run_comparison(match, options.fail_fast, r0, r1, options.find_output);
  };
}

}  // namespace parity::compare
