// --validate over a streamed layerwise run: every tensor a runner produced is checked for NaN and
// Inf as it comes (it is not kept), and the first one in execution order is named with its node.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parity/statistics/statistics.h"
#include "parity/runtime/runner.h"

namespace parity::compare {

struct StreamedValidation {
  struct Finding {
    int64_t iteration = 0;
    std::string tensor, node, op;
    statistics::NonFiniteCounts counts;
  };
  std::string runner;
  int64_t checked = 0;
  std::vector<Finding> findings;  // in execution order

  // Counts the tensor's NaN/Inf values; a tensor holding any is recorded as a finding.
  void check(int64_t iteration, const runtime::ProducedTensor& tensor);
  bool passed() const { return findings.empty(); }

  // "PASSED | Validation (every streamed tensor) | <runner>: no NaN or Inf in N tensor(s)", or a
  // FAILED line naming the first finding.
  void log() const;
  // {"runner", "tensors_checked", "passed", "nonfinite_tensors": [...]}
  nlohmann::ordered_json to_json() const;
};

}  // namespace parity::compare
