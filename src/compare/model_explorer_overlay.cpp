// Model Explorer's custom node data of a run (parity/compare/model_explorer_overlay.h).
#include "parity/compare/model_explorer_overlay.h"

#include <cmath>

#include "parity/compare/accuracy.h"
#include "parity/compare/layerwise.h"
#include "parity/core/file_io.h"

namespace parity::compare {
namespace {

constexpr double kNonFinite = -1;

void add_result(nlohmann::json& results, const std::string& tensor, double max_abs) {
  nlohmann::json result = {{"value", std::isfinite(max_abs) ? max_abs : kNonFinite}};
  if (!std::isfinite(max_abs)) result["bgColor"] = "#ff00ff";
  results[tensor] = std::move(result);
}

}  // namespace

nlohmann::json model_explorer_overlay(const Verdict& verdict) {
  nlohmann::json results = nlohmann::json::object();
  double atol = SimpleMetrics{}.atol;
  if (!verdict.layerwise.empty()) {
    for (const auto& entry : verdict.layerwise.front().entries) {
      if (results.contains(entry.tensor)) continue;  // the first iteration's
      add_result(results, entry.tensor, entry.max_abs_error());
      if (entry.comparison.simple) atol = entry.comparison.simple->atol;
    }
  } else if (verdict.accuracy && !verdict.accuracy->pairs.empty() && !verdict.accuracy->pairs.front().iterations.empty()) {
    for (const auto& output : verdict.accuracy->pairs.front().iterations.front().outputs) {
      if (!output.simple) continue;
      add_result(results, output.output0, output.simple->max_absdiff);
      atol = output.simple->atol;
    }
  }
  return {{"results", std::move(results)},
          {"thresholds",
           {{{"value", atol}, {"bgColor", "#b7e1a1"}},
            {{"value", 10 * atol}, {"bgColor", "#f9e79f"}},
            {{"value", 100 * atol}, {"bgColor", "#f5b041"}},
            {{"value", 1e300}, {"bgColor", "#e74c3c"}}}}};
}

void save_model_explorer_overlay(const std::filesystem::path& path, const Verdict& verdict) {
  write_file_atomic(path, model_explorer_overlay(verdict).dump(2));
}

}  // namespace parity::compare
