// `debug reduce`'s algorithm (Polygraphy's debug reduce): shrinks a model whose check fails to a small
// subgraph that still fails. The whole model is checked first (Parity's addition: a passing model is
// reported); then one of two reductions.
//
// By default, Polygraphy's, with its results (its tests assert them), each phase a bisection (or, in
// linear mode, a scan over every node) with Polygraphy's markers:
//   1. outputs: one node's outputs marked as the graph outputs, the nodes they need kept; the failing
//      candidate with the fewest nodes wins.
//   2. inputs: over the nodes left, one node's inputs marked as the graph inputs; the nodes before them
//      are cut off.
// With ReduceOptions::reduce_neighbourhood, Parity's tighter reduction for graphs that are not chains:
//   1. outputs: the shortest prefix of the nodes that fails, every tensor it leaves unread marked as
//      an output; its last node is the failing node.
//   2. neighbourhood: the failing node's ancestors with only its outputs as graph outputs (on a
//      graph where many branches meet late this drops every branch that does not feed it).
//   3. inputs: the shortest suffix of those nodes that fails.
// A tensor that a kept node reads and a removed node made becomes a graph input, fed with the values a
// run of the whole model gave (every sample), or, with ReduceOptions::freeze_cut_branches (Polygraphy's
// way, for --check commands), an initializer holding the first sample's value (by default, after which
// the nodes whose inputs are then all constant are folded away, as Polygraphy does; with
// reduce_neighbourhood, except the tensors the first kept node reads, which stay graph inputs).
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
  // Parity's prefix, neighbourhood and suffix phases instead of Polygraphy's marking (see above).
  bool reduce_neighbourhood = false;
  std::filesystem::path load_replay;  // outcomes read back instead of checked (empty: none)
  std::filesystem::path save_replay;  // rewritten after each check (empty: none)
  // When the whole model passes the check: false (Polygraphy's behaviour) warns and searches anyway,
  // the result being the smallest failing candidate or the whole model; true throws InvalidInputError.
  bool require_failing_model = false;
  // Polygraphy's cut-off branches: a tensor that a removed node made and that is not a marked graph input
  // becomes an initializer holding its value in the first sample of `values`, and nodes whose inputs are
  // then all constant are folded away (with reduce_neighbourhood: no folding, and a tensor the candidate's
  // first node reads stays a graph input). Without this option every such tensor is a graph input, fed
  // per sample.
  bool freeze_cut_branches = false;
  // Called before each tensor of a candidate is frozen (with freeze_cut_branches).
  std::function<void(const std::string& tensor)> on_freeze;
  // When every check run failed (none replayed): one more check, of the last node outside the result
  // alone (its inputs marked as the graph inputs), which tells a failure that every candidate held from a
  // check that fails whatever it is given (ReduceResult::outside_node_fails).
  bool probe_when_every_check_fails = false;
};

struct ReduceResult {
  onnx::Model reduced;
  std::optional<onnx::Model> min_good;  // the passing candidate closest to `reduced`, when one was seen
  std::string failing_node;             // describe_node of the node whose outputs phase 1 marked ("" without it)
  std::vector<std::string> frozen_inputs;  // graph inputs of `reduced` that were intermediate tensors
  std::vector<std::string> frozen_initializers;  // intermediate tensors frozen into initializers of `reduced`
  bool whole_model_passes = false;  // the check passed on the whole model
  bool reduced_fails = true;        // `reduced` was seen failing (false: no candidate failed, it is the whole model)
  bool every_check_failed = false;  // every check run failed (and none was replayed), the probe's aside
  std::optional<bool> outside_node_fails;  // with probe_when_every_check_fails: the probe's outcome, when it ran
  std::string outside_node;                // describe_node of the node the probe checked alone
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
