// `check lint` (Polygraphy's check lint): names unnamed nodes, reports duplicate node names, runs
// ONNX's checker, then runs the whole model on ONNX Runtime; when that fails, runs each node alone
// on ONNX Runtime in topological order with data-loader inputs, skipping nodes that depend on a
// failed one. Unused graph inputs and nodes are reported as warnings. Sources and messages are
// Polygraphy's: "onnx_loader", "onnx_checker", "onnx_graphsurgeon" (graph checks), "onnxruntime"
// (node checks, with ONNX Runtime's text pruned as Polygraphy prunes it). LintNodeRunner::kReference
// runs the node checks on Parity's reference runner instead (source "ref_runner").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parity/onnx/model.h"
#include "parity/core/tensor.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"

namespace parity::runtime {

struct LintEntry {
  std::string level;   // "exception", "warning", "info"
  std::string source;  // "onnx_checker", "onnx_loader", "onnx_graphsurgeon", "onnxruntime", "ref_runner"
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

// What runs the node checks.
enum class LintNodeRunner {
  kOnnxRuntime,  // Polygraphy's: ONNX Runtime, source "onnxruntime"
  kReference,    // Parity's reference runner, source "ref_runner"
};

struct LintOptions {
  // The inputs, one feed per iteration (at least one). The whole model runs on each in turn; the
  // node checks use the first feed the whole model fails on (Polygraphy lints with the first
  // iteration only, which is the same for one iteration).
  std::vector<NamedTensors> feeds;
  LintNodeRunner runner = LintNodeRunner::kOnnxRuntime;
  OnnxrtOptions onnxrt;  // providers and library for LintNodeRunner::kOnnxRuntime
};

// Throws InvalidInputError for a graph with a cycle (naming a node on it) or no feeds, FileError
// when ONNX Runtime is needed and not found, InvalidInputError for a provider it does not have.
// Each entry is logged ("LINT | Name: n, Op: Op | message") as it is found.
LintReport lint_model(onnx::Model model, const LintOptions& options);

}  // namespace parity::runtime
