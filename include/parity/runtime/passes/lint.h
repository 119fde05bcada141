// `check lint` (Polygraphy's check lint, with the reference runner in place of ONNX Runtime):
// names unnamed nodes, reports duplicate node names, runs ONNX's checker, then runs the whole
// model on the reference runner; when that fails, runs each node alone in topological order with
// data-loader inputs, skipping nodes that depend on a failed one. Unused inputs, initializers and
// nodes are reported as warnings.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parity/onnx/model.h"
#include "parity/runtime/data_loader.h"

namespace parity::runtime {

struct LintEntry {
  std::string level;   // "exception", "warning", "info"
  std::string source;  // "onnx_checker", "onnx_loader", "graph", "ref_runner"
  std::string message;
  std::optional<std::string> node;
  std::string op;
};

struct LintReport {
  std::vector<std::string> passing;  // sorted
  std::vector<std::string> failing;  // sorted
  std::vector<LintEntry> entries;
  bool valid = true;  // no exception-level entry
  // {"summary": {"passing": [...], "failing": [...]}, "lint_entries": [{level, source, message, nodes?}]}
  nlohmann::ordered_json to_json() const;
};

struct LintOptions {
  DataLoaderOptions data;
};

// Throws InvalidInputError for a graph with a cycle (naming a node on it). Each entry is logged
// ("LINT | Name: n, Op: Op | message") as it is found.
LintReport lint_model(onnx::Model model, const LintOptions& options = {});

}  // namespace parity::runtime
