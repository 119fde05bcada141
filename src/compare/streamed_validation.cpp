#include "parity/compare/streamed_validation.h"

#include "parity/core/logger.h"

namespace parity::compare {

void StreamedValidation::check(int64_t iteration, const runtime::ProducedTensor& tensor) {
  ++checked;
  statistics::NonFiniteCounts counts = statistics::count_nonfinite(tensor.tensor);
  if (counts.any()) findings.push_back({iteration, tensor.name, tensor.node_name, tensor.op_type, counts});
}

void StreamedValidation::log() const {
  if (passed()) {
    log::finish("PASSED | Validation (every streamed tensor) | {}: no NaN or Inf in {} tensor(s)", runner, checked);
    return;
  }
  const Finding& first = findings.front();
  log::error("FAILED | Validation (every streamed tensor) | {}: {} of {} tensor(s) hold NaN or Inf. The first, in "
             "execution order: '{}' (iteration {}, node '{}', op {}): NaN: {}, Inf: {}, -Inf: {}",
             runner, findings.size(), checked, first.tensor, first.iteration, first.node, first.op,
             first.counts.nan, first.counts.posinf, first.counts.neginf);
}

nlohmann::ordered_json StreamedValidation::to_json() const {
  nlohmann::ordered_json json;
  json["runner"] = runner;
  json["tensors_checked"] = checked;
  json["passed"] = passed();
  auto list = nlohmann::ordered_json::array();
  for (const auto& finding : findings)
    list.push_back({{"tensor", finding.tensor},
                    {"iteration", finding.iteration},
                    {"node", finding.node},
                    {"op", finding.op},
                    {"nan", finding.counts.nan},
                    {"inf", finding.counts.posinf},
                    {"neg_inf", finding.counts.neginf}});
  json["nonfinite_tensors"] = std::move(list);
  return json;
}

}  // namespace parity::compare
