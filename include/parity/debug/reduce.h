// `debug reduce`'s algorithm (Polygraphy's debug reduce, reworked for graphs that are not chains):
// shrinks a model whose check fails to a small subgraph that still fails.
//
// Phases, each a bisection (or a linear scan) over the nodes in topological order:
//   1. outputs: the shortest prefix of the nodes that fails, every tensor it leaves unread marked as
//      an output; its last node is the failing node.
//   2. neighbourhood: the failing node's ancestors with only its outputs as graph outputs (on a
//      graph where many branches meet late this drops every branch that does not feed it).
//   3. inputs: the shortest suffix of those nodes that fails; the tensors the removed nodes made
//      become graph inputs, fed with the values a run of the whole model gave (every sample), or,
//      with ReduceOptions::freeze_cut_branches (Polygraphy's way), initializers holding the first
//      sample's values, except those the suffix's first node reads.
// A whole model that passes the check is searched anyway, as Polygraphy does (see reduce()).
// Each check's outcome is recorded in a replay (JSON), which a later reduction reads back to
// resume or repeat the same steps without running the checks again.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "parity/core/array_io.h"
#include "parity/core/tensor.h"
#include "parity/onnx/model.h"

namespace parity::debug {

enum class ReduceMode { kBisect, kLinear };

// The values of every tensor of the whole model, one map per data sample (iteration).
using TensorValues = std::vector<std::map<std::string, Tensor>>;

// Runs the whole model on the reference interpreter once per feed and keeps every tensor it
// produces (and the feeds themselves).
TensorValues run_full_model(const onnx::Model& model, const std::vector<NamedTensors>& feeds);

// The feeds of a candidate: for each sample, the values of its graph inputs.
std::vector<NamedTensors> candidate_feeds(const onnx::Model& candidate, const TensorValues& values);

// A candidate's check: true when the candidate still fails. `step` numbers the checks (1, 2, ...).
using FailureCheck = std::function<bool(const onnx::Model& candidate, int step)>;

struct ReduceOptions {
  ReduceMode mode = ReduceMode::kBisect;
  bool reduce_outputs = true;
  bool reduce_inputs = true;
  std::filesystem::path load_replay;  // outcomes read back instead of checked (empty: none)
  std::filesystem::path save_replay;  // rewritten after each check (empty: none)
  // When the whole model passes the check: false (Polygraphy's behaviour) warns and searches anyway,
  // the result being the smallest failing candidate or the whole model; true throws InvalidInputError.
  bool require_failing_model = false;
  // Polygraphy's cut-off branches: a tensor that a removed node made becomes an initializer holding its
  // value in the first sample of `values`, unless the candidate's first node reads it (it is then a
  // graph input, as without this option, where every such tensor is one, fed per sample).
  bool freeze_cut_branches = false;
  // Called before each tensor of a candidate is frozen (with freeze_cut_branches).
  std::function<void(const std::string& tensor)> on_freeze;
};

struct ReduceResult {
  onnx::Model reduced;
  std::optional<onnx::Model> min_good;  // the passing candidate closest to `reduced`, when one was seen
  std::string failing_node;             // describe_node of the node phase 1 found ("" without it)
  std::vector<std::string> frozen_inputs;  // graph inputs of `reduced` that were intermediate tensors
  std::vector<std::string> frozen_initializers;  // intermediate tensors frozen into initializers of `reduced`
  bool whole_model_passes = false;  // the check passed on the whole model
  bool reduced_fails = true;        // `reduced` was seen failing (false: no candidate failed, it is the whole model)
  int64_t original_nodes = 0;
  int checks_run = 0;       // checks actually run
  int checks_replayed = 0;  // outcomes taken from the replay
};

// Reduces `model` (its Constant nodes lowered and sorted first). `values` must hold every tensor
// that can become a candidate's graph input (run_full_model). When the whole model passes the check,
// warns and searches anyway as Polygraphy does (or throws InvalidInputError with
// options.require_failing_model). Throws FileError for a replay that cannot be read or that does not
// belong to this model.
ReduceResult reduce(const onnx::Model& model, const TensorValues& values, const FailureCheck& check,
                    const ReduceOptions& options = {});

}  // namespace parity::debug
