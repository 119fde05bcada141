// CompareFunc.simple: Polygraphy's tolerance check and its comparison block.
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "log_util.h"
#include "parity/statistics/pair_statistics.h"
#include "parity/compare/compare_func.h"
#include "parity/core/python_format.h"
#include "parity/core/error.h"
#include "shape_match.h"

namespace parity::compare {

using namespace detail;
using namespace statistics;

namespace {

// Polygraphy's stat_failed: NaN, or above the tolerance compared in the statistic's numpy type
// (a float32 statistic is compared with the tolerance rounded to float32).
bool stat_failed(double value, double tolerance, bool single) {
  if (std::isnan(value)) return true;
  if (single) return static_cast<float>(value) > static_cast<float>(tolerance);
  return value > tolerance;
}

// The statistic a check_error_stat looks at, in a statistics view (NaN when unavailable).
double checked_stat(const Statistics& s, ErrorStat stat, double q, bool require_values) {
  if (require_values && s.state != Statistics::State::kValues) return NAN;
  switch (stat) {
    case ErrorStat::kMean: return s.mean;
    case ErrorStat::kMedian: return s.median;
    case ErrorStat::kQuantile: return s.quantile(q);
    case ErrorStat::kMax:
    case ErrorStat::kElemwise: return s.max;
  }
  return NAN;
}

std::string percent_text(int64_t part, int64_t whole) {
  if (whole == 0) return "0%";
  return format_g(100.0 * static_cast<double>(part) / static_cast<double>(whole), 4) + "%";
}

}  // namespace

OutputComparison compare_simple_output(const std::string& runner0, const std::string& name0,
                                       const TensorView& out0_view, const std::string& runner1,
                                       const std::string& name1, const TensorView& out1_view,
                                       const SimpleOutputParams& params) {
  OutputComparison result;
  result.kind = "simple";
  result.output0 = name0;
  result.output1 = name1;
  result.dtype0 = out0_view.dtype();
  result.dtype1 = out1_view.dtype();
  result.shape0 = out0_view.shape();
  result.shape1 = out1_view.shape();
  const StatisticsStyle style = params.style;

  log::info("Tolerance: [abs={}, rel={}] | Checking {} error", format_g(params.atol, 5), format_g(params.rtol, 5),
            error_stat_name(params.check_error_stat));
  log::extra_verbose("Note: Comparing {} vs. {}", runner0, runner1);

  if (params.check_shapes && out0_view.shape() != out1_view.shape()) {
    log::error(
        "FAILED | Output: `{}` | Will not compare outputs of different shapes.\nNote: Output shapes are {} and {}.",
        name0, shape_text(out0_view.shape()), shape_text(out1_view.shape()));
    log_once(Severity::kError,
             "Note: Use --no-shape-check or set check_shapes=False to attempt to compare values anyway.");
    result.failure =
        fmt::format("shapes differ: {} and {}", shape_text(out0_view.shape()), shape_text(out1_view.shape()));
    return result;
  }

  // With check_shapes=false: the second output is reshaped/transposed towards the first's shape,
  // then the first is viewed with the second's shape.
  Tensor out1_holder;
  TensorView out0v = out0_view, out1v = out1_view;
  if (out0_view.shape() != out1_view.shape()) {
    Tensor out1_copy = Tensor::copy_of(out1_view);
    out1_holder = try_match_shape(out1_copy, out0_view.shape());
    out1v = out1_holder.view();
    if (out1v.size() != out0_view.size()) {
      log::error(
          "FAILED | Output: '{}' | Cannot compare outputs with different numbers of elements: {} has {}, {} has {}",
          name0, shape_text(out0_view.shape()), out0_view.size(), shape_text(out1_view.shape()), out1_view.size());
      result.failure = fmt::format("different numbers of elements: {} and {}", out0_view.size(), out1_view.size());
      return result;
    }
    out0v = TensorView(out0_view.dtype(), out1v.shape(), out0_view.raw());
  }
  const Shape& shape = out1v.shape();
  if (Logger::global().enabled(Severity::kSuperVerbose)) {
    log::super_verbose("{} | Output: {} (dtype={}, shape={}):\n{}", runner_column(runner0), name0,
                       dtype_text(out0v.dtype()), shape_text(shape), indent_block(numpy_array_str(out0v)));
    log::super_verbose("{} | Output: {} (dtype={}, shape={}):\n{}", runner_column(runner1), name1,
                       dtype_text(out1v.dtype()), shape_text(shape), indent_block(numpy_array_str(out1v)));
  }

  // The statistics asked for: this comparison's elementwise rule, whose failing elements the kernels
  // count, and the histograms and values it will log at the logger's level.
  PairStatisticsRequest request;
  request.atol = params.atol;
  request.rtol = params.rtol;
  request.infinities_compare_equal = params.infinities_compare_equal;
  if (params.check_error_stat == ErrorStat::kQuantile) request.error_quantile = params.error_quantile;
  request.histograms = Logger::global().enabled(Severity::kInfo);
  // A passing output logs its histograms at VERBOSE only; elemwise knows the verdict after pass 1.
  request.histograms_only_if_mismatched =
      params.check_error_stat == ErrorStat::kElemwise && !Logger::global().enabled(Severity::kVerbose);
  request.histogram_style = style;
  request.small_values = out0v.size() <= 100 && Logger::global().enabled(Severity::kInfo);
  PairStatistics outcome;
  try {
    outcome = compute_pair_statistics(out0v, out1v, shape, request);
  } catch (const UnsupportedError& error) {
    log::error("FAILED | Output: '{}' | Cannot compare these outputs: {}", name0, error.message());
    result.failure = error.message();
    return result;
  }

  if (outcome.reference_floating && outcome.zero_reference_count > 0)
    log_once(
        Severity::kWarning,
        fmt::format("{} | Output: {}: Some values are 0. Will add a small epsilon quantity to these when computing "
                    "relative difference. Note that this may cause some relative differences to be extremely high. ",
                    runner_column(runner1), name1));

  // ---- Verdict (Polygraphy's numbers) ----
  const Statistics& abs_p = outcome.absdiff.polygraphy;
  const Statistics& rel_p = outcome.reldiff.polygraphy;
  const double q = params.error_quantile;
  bool failed = false;
  switch (params.check_error_stat) {
    case ErrorStat::kElemwise:
      failed = outcome.mismatch_count > 0;
      break;
    case ErrorStat::kMax:
      failed = stat_failed(abs_p.max, params.atol, outcome.absdiff_single) &&
               stat_failed(rel_p.max, params.rtol, outcome.reldiff_single);
      break;
    case ErrorStat::kMean:
      failed = stat_failed(abs_p.mean, params.atol, true) && stat_failed(rel_p.mean, params.rtol, true);
      break;
    case ErrorStat::kMedian:
      failed = stat_failed(abs_p.median, params.atol, outcome.absdiff_single) &&
               stat_failed(rel_p.median, params.rtol, outcome.reldiff_single);
      break;
    case ErrorStat::kQuantile:
      failed = stat_failed(abs_p.quantile(q), params.atol, outcome.absdiff_single) &&
               stat_failed(rel_p.quantile(q), params.rtol, outcome.reldiff_single);
      break;
  }

  if (params.check_error_stat == ErrorStat::kElemwise && Logger::global().enabled(Severity::kExtraVerbose)) {
    Logger::Indent indent;
    std::vector<int64_t> flat = mismatch_indices(out0v, out1v, request, std::numeric_limits<int64_t>::max());
    if (Logger::global().enabled(Severity::kSuperVerbose)) {
      const int64_t rank = static_cast<int64_t>(shape.size());
      Tensor where = Tensor::zeros(DType::kInt64, Shape{static_cast<int64_t>(flat.size()), rank});
      int64_t* w = where.mutable_data<int64_t>();
      for (std::size_t i = 0; i < flat.size(); ++i) {
        int64_t f = flat[i];
        for (int64_t k = rank; k-- > 0;) {
          w[static_cast<int64_t>(i) * rank + k] = f % shape[static_cast<std::size_t>(k)];
          f /= shape[static_cast<std::size_t>(k)];
        }
      }
      log::super_verbose("Mismatched indices:\n{}", numpy_array_str(where.view()));
    }
    auto gather = [&](const TensorView& t) {
      Tensor out = Tensor::zeros(t.dtype(), Shape{static_cast<int64_t>(flat.size())});
      const std::size_t bytes = storage_bytes(t.dtype(), 1);
      for (std::size_t i = 0; i < flat.size(); ++i)
        std::memcpy(static_cast<unsigned char*>(out.mutable_raw()) + i * bytes,
                    static_cast<const unsigned char*>(t.raw()) + static_cast<std::size_t>(flat[i]) * bytes, bytes);
      return out;
    };
    if (!is_packed(out0v.dtype()) && !is_packed(out1v.dtype())) {
      log::extra_verbose("{} | Mismatched values:\n{}", runner_column(runner0), numpy_array_str(gather(out0v).view()));
      log::extra_verbose("{} | Mismatched values:\n{}", runner_column(runner1), numpy_array_str(gather(out1v).view()));
    }
  }

  // ---- Log ----
  TensorView abs_values(outcome.absdiff_values.dtype(), outcome.absdiff_values.shape(), outcome.absdiff_values.raw());
  TensorView rel_values(outcome.reldiff_values.dtype(), outcome.reldiff_values.shape(), outcome.reldiff_values.raw());
  const bool have_values = request.small_values;
  const bool have_histograms = request.histograms && !(request.histograms_only_if_mismatched && !failed);
  log_output_stats(outcome.out0, &out0v, have_histograms ? &outcome.histogram0 : nullptr, failed,
                   fmt::format("{}: {}", runner0, name0), style);
  log_output_stats(outcome.out1, &out1v, have_histograms ? &outcome.histogram1 : nullptr, failed,
                   fmt::format("{}: {}", runner1, name1), style);

  SimpleMetrics metrics;
  metrics.atol = params.atol;
  metrics.rtol = params.rtol;
  metrics.check_error_stat = params.check_error_stat;
  metrics.error_quantile = params.error_quantile;
  metrics.max_absdiff = abs_p.max;
  metrics.max_reldiff = rel_p.max;
  metrics.mean_absdiff = abs_p.mean;
  metrics.mean_reldiff = rel_p.mean;
  metrics.median_absdiff = abs_p.median;
  metrics.median_reldiff = rel_p.median;
  if (params.check_error_stat == ErrorStat::kQuantile) {
    metrics.quantile_absdiff = abs_p.quantile(q);
    metrics.quantile_reldiff = rel_p.quantile(q);
  }
  metrics.required_atol = checked_stat(abs_p, params.check_error_stat, q, false);
  metrics.required_rtol = checked_stat(rel_p, params.check_error_stat, q, false);
  metrics.required_atol_finite = checked_stat(outcome.absdiff.finite, params.check_error_stat, q, true);
  metrics.required_rtol_nonzero_reference = checked_stat(outcome.reldiff.finite, params.check_error_stat, q, true);
  metrics.element_count = out0v.size();
  metrics.mismatch_count = outcome.mismatch_count;
  metrics.zero_reference_count = outcome.zero_reference_count;
  metrics.max_absdiff_at_zero_reference = outcome.max_absdiff_at_zero_reference;
  metrics.nonfinite_error_count = outcome.absdiff.nan_count + outcome.absdiff.inf_count();

  log::info("Error Metrics: {}", name0);
  {
    Logger::Indent indent;
    std::string message;
    if (style == StatisticsStyle::kPolygraphy) {
      message = fmt::format("Minimum Required Tolerance: {} error | [abs={}] OR [rel={}]",
                            error_stat_name(params.check_error_stat), format_g(metrics.required_atol, 5),
                            format_g(metrics.required_rtol, 5));
    } else {
      message = fmt::format("Minimum Required Tolerance: {} error | [abs={}] OR [rel={}]",
                            error_stat_name(params.check_error_stat), format_g(metrics.required_atol_finite, 5),
                            format_g(metrics.required_rtol_nonzero_reference, 5));
    }
    if (params.check_error_stat == ErrorStat::kElemwise)
      message += " (requirements may be lower if both abs/rel tolerances are set)";
    else if (params.check_error_stat == ErrorStat::kQuantile)
      message += fmt::format(" (quantile={})", format_g(params.error_quantile, 4));
    if (style == StatisticsStyle::kParity) {
      if (metrics.zero_reference_count > 0)
        message += fmt::format(" | rel leaves out {} element(s) with zero reference, which pass only within abs "
                               "(largest abs error there: {})",
                               metrics.zero_reference_count, format_g(metrics.max_absdiff_at_zero_reference, 5));
      if (metrics.nonfinite_error_count > 0)
        message += fmt::format(" | {} element(s) have a NaN/Inf error", metrics.nonfinite_error_count);
    }
    log::info("{}", message);
    if (params.on_compared) {
      Logger::Indent pictures_indent;
      (*params.on_compared)(ComparedPair{runner0, name0, out0v, runner1, name1, out1v, params.infinities_compare_equal});
    }
    log_output_stats(outcome.absdiff, have_values ? &abs_values : nullptr,
                     have_histograms ? &outcome.histogram_abs : nullptr, failed, "Absolute Difference", style);
    log_output_stats(outcome.reldiff, have_values ? &rel_values : nullptr,
                     have_histograms ? &outcome.histogram_rel : nullptr, failed, "Relative Difference", style);
  }
  log::extra_verbose("Finished comparing: '{}' (dtype={}, shape={}) [{}] and '{}' (dtype={}, shape={}) [{}]", name0,
                     dtype_text(out0v.dtype()), shape_text(shape), runner0, name1, dtype_text(out1v.dtype()),
                     shape_text(shape), runner1);

  if (params.keep_summaries)
    metrics.summaries = SimpleMetrics::Summaries{std::move(outcome.out0), std::move(outcome.out1),
                                                 std::move(outcome.absdiff), std::move(outcome.reldiff)};
  result.simple = std::move(metrics);
  result.compared = true;
  result.passed = !failed;

  if (failed) {
    std::string line = fmt::format("FAILED | Output: '{}' | Difference exceeds tolerance (rel={}, abs={})", name0,
                                   python_float_repr(params.rtol), python_float_repr(params.atol));
    if (style == StatisticsStyle::kParity && params.check_error_stat == ErrorStat::kElemwise)
      line += fmt::format(" | {} of {} element(s) ({}) exceed both", result.simple->mismatch_count,
                          result.simple->element_count,
                          percent_text(result.simple->mismatch_count, result.simple->element_count));
    log::error("{}", line);
    result.failure = "difference exceeds tolerance";
  } else {
    log::finish("PASSED | Output: '{}' | Difference is within tolerance (rel={}, abs={})", name0,
                python_float_repr(params.rtol), python_float_repr(params.atol));
  }
  return result;
}

SimpleOutputParams simple_output_params(const SimpleOptions& options, const std::string& name) {
  SimpleOutputParams params;
  params.atol = options.atol.get(name, 1e-5);
  params.rtol = options.rtol.get(name, 1e-5);
  params.check_error_stat = options.check_error_stat.get(name, ErrorStat::kElemwise);
  params.error_quantile = options.error_quantile.get(name, 0.99);
  params.check_shapes = options.check_shapes;
  params.infinities_compare_equal = options.infinities_compare_equal;
  params.style = options.style;
  if (options.on_compared) params.on_compared = &options.on_compared;
  params.keep_summaries = options.keep_summaries;
  return params;
}

void check_tolerances(const SimpleOptions& options) {
  for (const auto& [label, tolerance] : {std::pair{"atol", &options.atol}, std::pair{"rtol", &options.rtol}}) {
    auto check = [label = label](const std::string& name, double value) {
      if (std::isnan(value))
        raise<InvalidInputError>("{}{} is NaN: every comparison against a NaN tolerance passes; give a number",
                                 label, name.empty() ? std::string() : fmt::format(" for output '{}'", name));
    };
    if (tolerance->is_per_name()) {
      for (const auto& [name, value] : tolerance->entries()) check(name, value);
    } else {
      check("", tolerance->get("", 0));
    }
  }
}

CompareFunc simple(SimpleOptions options) {
  check_tolerances(options);
  return [options](const IterationResult& r0, const IterationResult& r1) {
    check_per_output_keys(options.rtol, r0, r1, "the rtol dictionary");
    check_per_output_keys(options.atol, r0, r1, "the atol dictionary");
    check_per_output_keys(options.check_error_stat, r0, r1, "the check_error_stat dictionary");
    check_per_output_keys(options.error_quantile, r0, r1, "the quantile dictionary");
    if (!options.check_shapes)
      log::info("Strict shape checking disabled. Will attempt to match output shapes before comparisons");
    auto match = [&](const std::string& name0, const Tensor& out0, const std::string& name1, const Tensor& out1) {
      return compare_simple_output(r0.runner_name, name0, out0.view(), r1.runner_name, name1, out1.view(),
                                   simple_output_params(options, name0));
    };
    return run_comparison(match, options.fail_fast, r0, r1, options.find_output);
  };
}

}  // namespace parity::compare
