// JSON reports of comparisons and validations.
#include <cmath>

#include "parity/compare/accuracy.h"
#include "parity/core/file_io.h"

namespace parity::compare {

using json = nlohmann::ordered_json;

namespace {

json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

json optional_number(const std::optional<double>& v) { return v ? number(*v) : json(nullptr); }

std::string_view state_name(statistics::Statistics::State state) {
  switch (state) {
    case statistics::Statistics::State::kValues: return "values";
    case statistics::Statistics::State::kEmpty: return "empty";
    case statistics::Statistics::State::kNoFiniteValues: return "no_finite_values";
  }
  return "values";
}

json to_json(const statistics::Statistics& s) {
  json j;
  j["state"] = state_name(s.state);
  j["count"] = s.count;
  j["mean"] = number(s.mean);
  j["std_dev"] = number(s.std_dev);
  j["variance"] = number(s.variance);
  j["median"] = number(s.median);
  j["min"] = number(s.min);
  j["min_index"] = s.argmin;
  j["max"] = number(s.max);
  j["max_index"] = s.argmax;
  j["avg_magnitude"] = number(s.avg_magnitude);
  json quantiles = json::object();
  for (std::size_t i = 0; i < s.quantile_levels.size(); ++i) {
    char key[32];
    std::snprintf(key, sizeof key, "%g", s.quantile_levels[i]);
    quantiles[key] = number(s.quantile_values[i]);
  }
  j["quantiles"] = quantiles;
  return j;
}

json shape_json(const Shape& shape) { return json(shape); }

}  // namespace

json to_json(const statistics::TensorSummary& s) {
  json j;
  j["dtype"] = std::string(dtype_name(s.dtype));
  j["shape"] = shape_json(s.shape);
  j["size"] = s.size;
  j["nan"] = s.nan_count;
  j["posinf"] = s.posinf_count;
  j["neginf"] = s.neginf_count;
  if (s.excluded_count) j["zero_reference"] = s.excluded_count;
  j["finite"] = to_json(s.finite);
  j["polygraphy"] = to_json(s.polygraphy);
  return j;
}

json to_json(const OutputComparison& c) {
  json j;
  j["kind"] = c.kind;
  j["output0"] = c.output0;
  j["output1"] = c.output1;
  j["dtype0"] = c.dtype0 == DType::kUndefined ? std::string("undefined") : std::string(dtype_name(c.dtype0));
  j["shape0"] = shape_json(c.shape0);
  j["dtype1"] = c.dtype1 == DType::kUndefined ? std::string("undefined") : std::string(dtype_name(c.dtype1));
  j["shape1"] = shape_json(c.shape1);
  j["passed"] = c.passed;
  j["compared"] = c.compared;
  j["failure"] = c.failure;
  if (c.simple) {
    const SimpleMetrics& m = *c.simple;
    json s;
    s["atol"] = number(m.atol);
    s["rtol"] = number(m.rtol);
    s["check_error_stat"] = std::string(error_stat_name(m.check_error_stat));
    s["error_quantile"] = number(m.error_quantile);
    s["required_tolerance"] = {{"abs", number(m.required_atol)}, {"rel", number(m.required_rtol)}};
    s["required_tolerance_finite"] = {{"abs", number(m.required_atol_finite)},
                                      {"rel_nonzero_reference", number(m.required_rtol_nonzero_reference)}};
    s["max_absdiff"] = number(m.max_absdiff);
    s["max_reldiff"] = number(m.max_reldiff);
    s["mean_absdiff"] = number(m.mean_absdiff);
    s["mean_reldiff"] = number(m.mean_reldiff);
    s["median_absdiff"] = number(m.median_absdiff);
    s["median_reldiff"] = number(m.median_reldiff);
    s["quantile_absdiff"] = optional_number(m.quantile_absdiff);
    s["quantile_reldiff"] = optional_number(m.quantile_reldiff);
    s["elements"] = m.element_count;
    s["mismatches"] = m.mismatch_count;
    s["zero_reference"] = m.zero_reference_count;
    s["max_absdiff_at_zero_reference"] = number(m.max_absdiff_at_zero_reference);
    s["nonfinite_errors"] = m.nonfinite_error_count;
    if (m.summaries)
      s["statistics"] = {{"output0", to_json(m.summaries->output0)},
                         {"output1", to_json(m.summaries->output1)},
                         {"absdiff", to_json(m.summaries->absdiff)},
                         {"reldiff", to_json(m.summaries->reldiff)}};
    j["simple"] = s;
  }
  if (c.indices) {
    const IndicesMetrics& m = *c.indices;
    j["indices"] = {{"index_tolerance", m.index_tolerance},
                    {"values_not_found", m.values_not_found},
                    {"beyond_tolerance", m.beyond_tolerance},
                    {"statistics", {{"output0", to_json(m.output0)}, {"output1", to_json(m.output1)}}}};
  }
  if (c.distance) {
    const DistanceMetrics& m = *c.distance;
    j["distance"] = {{"l2_tolerance", number(m.l2_tolerance)},
                     {"cosine_similarity_threshold", number(m.cosine_similarity_threshold)},
                     {"l2_norm", number(m.l2_norm)},
                     {"cosine_similarity", number(m.cosine_similarity)},
                     {"l2_passed", m.l2_passed},
                     {"cosine_passed", m.cosine_passed},
                     {"statistics", {{"output0", to_json(m.output0)}, {"output1", to_json(m.output1)}}}};
  }
  if (c.quality) {
    const QualityMetrics& m = *c.quality;
    j["quality"] = {{"psnr_tolerance", optional_number(m.psnr_tolerance)},
                    {"snr_tolerance", optional_number(m.snr_tolerance)},
                    {"psnr", optional_number(m.psnr)},
                    {"snr", optional_number(m.snr)},
                    {"psnr_passed", m.psnr_passed},
                    {"snr_passed", m.snr_passed},
                    {"statistics", {{"output0", to_json(m.output0)}, {"output1", to_json(m.output1)}}}};
  }
  return j;
}

json to_json(const AccuracyResult& result) {
  json j;
  j["passed"] = result.passed();
  json pairs = json::array();
  for (const auto& pair : result.pairs) {
    json p;
    p["runner0"] = pair.runner0;
    p["runner1"] = pair.runner1;
    p["passed"] = pair.passed();
    p["passed_iterations"] = pair.passed_iterations();
    p["total_iterations"] = pair.total_iterations();
    p["pass_rate"] = pair.pass_rate();
    json iterations = json::array();
    for (std::size_t i = 0; i < pair.iterations.size(); ++i) {
      json it;
      it["iteration"] = i;
      it["passed"] = pair.iterations[i].passed();
      json outputs = json::array();
      for (const auto& o : pair.iterations[i].outputs) outputs.push_back(to_json(o));
      it["outputs"] = outputs;
      iterations.push_back(it);
    }
    p["iterations"] = iterations;
    pairs.push_back(p);
  }
  j["pairs"] = pairs;
  return j;
}

json to_json(const ValidationResult& result) {
  json j;
  j["passed"] = result.passed;
  json outputs = json::array();
  for (const auto& o : result.outputs) {
    outputs.push_back({{"runner", o.runner_name},
                       {"iteration", o.iteration},
                       {"output", o.output_name},
                       {"valid", o.valid},
                       {"nan", o.summary.nan_count},
                       {"posinf", o.summary.posinf_count},
                       {"neginf", o.summary.neginf_count},
                       {"statistics", to_json(o.summary)}});
  }
  j["outputs"] = outputs;
  return j;
}

json make_report(const AccuracyResult* accuracy, const ValidationResult* validation) {
  json j;
  j["parity_report_version"] = 1;
  bool passed = (!accuracy || accuracy->passed()) && (!validation || validation->passed);
  j["passed"] = passed;
  if (accuracy) j["accuracy"] = to_json(*accuracy);
  if (validation) j["validation"] = to_json(*validation);
  return j;
}

void save_report(const std::filesystem::path& path, const json& report) {
  write_file_atomic(path, report.dump(4) + "\n");
}

}  // namespace parity::compare
