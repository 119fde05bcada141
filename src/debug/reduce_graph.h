// debug reduce's internals, shared by its two algorithms (reduce_marking.cpp: Polygraphy's marking of one
// node's outputs, then one node's inputs; reduce_neighbourhood.cpp: Parity's prefix, neighbourhood and suffix):
// the graph being reduced, indexed once, which builds candidates, and the checks of candidates with the replay.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "parity/debug/reduce.h"
#include "parity/debug/replay.h"

namespace parity::debug::reduce_internal {

const char* mode_name(ReduceMode mode);

// A candidate given by its graph inputs and outputs, as Polygraphy marks them (mark_io, then cleanup, then
// fix_graph): the nodes are those that reach an output without passing a graph input; a tensor those nodes
// read that no kept node makes and that is neither a graph input nor an initializer is cut off. When one is,
// the nodes whose inputs are all cut off, initializers or outputs of such nodes are folded away.
struct MarkedCandidate {
  std::vector<int> nodes;            // in graph order
  std::vector<std::string> inputs;   // the graph inputs the nodes read, in the order marked
  std::vector<std::string> outputs;  // as marked
  std::vector<std::string> cut_off;  // cut-off tensors: graph inputs fed per sample (appended to `inputs`),
                                     // or, frozen, initializers holding the first sample's values
  std::vector<std::string> frozen;   // frozen: every cut-off tensor, before folding (some may be folded away)
  std::vector<std::string> folded;   // outputs of nodes folded away that kept nodes read or that are graph
                                     // outputs: frozen, initializers too; else graph inputs (appended)
};

class PreparedGraph {
 public:
  // `model`'s Constant nodes lowered to initializers, its nodes sorted; `values` (run_full_model) give the
  // dtype and shape of tensors that become graph inputs or outputs, and the values of frozen tensors.
  PreparedGraph(const onnx::Model& model, const TensorValues& values);

  const onnx::Model& model() const { return model_; }
  int size() const { return model_->graph().node_size(); }
  const ::onnx::NodeProto& node(int index) const { return model_->graph().node(index); }
  const std::vector<std::string>& reads(int index) const { return reads_[index]; }
  bool is_graph_output(const std::string& name) const { return graph_outputs_.count(name) > 0; }
  bool is_initializer(const std::string& name) const { return initializers_.count(name) > 0; }
  std::string describe(int index) const;
  std::vector<std::string> graph_inputs() const;   // declared inputs that are not initializers, in order
  std::vector<std::string> graph_outputs() const;  // in order
  // The node making `tensor` (nullopt for graph inputs, initializers and unknown names).
  std::optional<int> producer(const std::string& tensor) const;
  // The node's non-empty outputs, and its non-empty inputs that are not initializers (Polygraphy's mark_io
  // filters constants out of inputs).
  std::vector<std::string> outputs_of(int index) const;
  std::vector<std::string> variable_inputs_of(int index) const;

  // Nodes of `nodes` that reach one of `outputs` through nodes of `nodes`, in graph order.
  std::vector<int> needed(const std::vector<int>& nodes, const std::vector<std::string>& outputs) const;
  // Every ancestor of node `index`, and the node itself, in graph order.
  std::vector<int> ancestors(int index) const;
  // Tensors the nodes make that none of them reads, and graph outputs they make.
  std::vector<std::string> unread_outputs(const std::vector<int>& nodes) const;

  // The candidate with these graph inputs and outputs. With `freeze`, cut-off tensors are frozen (the first
  // sample's values) and nodes whose inputs are then all constant folded away, as Polygraphy does; without,
  // cut-off tensors become graph inputs.
  MarkedCandidate mark(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                       bool freeze) const;
  onnx::Model build(const MarkedCandidate& candidate, bool freeze) const;

  // The model made of `nodes` (sorted), computing `outputs`; tensors read but not made become graph
  // inputs (original inputs keep their declaration; others take dtype and shape from the values).
  // With `freeze_cut_branches`, such a tensor that the first node does not read is an initializer
  // holding its value in the first sample instead, its name appended to `frozen_initializers`.
  onnx::Model build(const std::vector<int>& nodes, const std::vector<std::string>& outputs,
                    std::vector<std::string>* frozen = nullptr, bool freeze_cut_branches = false,
                    std::vector<std::string>* frozen_initializers = nullptr) const;

 private:
  onnx::Model empty_candidate() const;
  void add_input(::onnx::GraphProto& graph, const std::string& tensor) const;
  void add_output(::onnx::GraphProto& graph, const std::string& tensor) const;
  bool reads_first(const std::vector<int>& nodes, const std::string& tensor) const;
  const Tensor& value_of(const std::string& name) const;
  void add_value_info(::onnx::ValueInfoProto& info, const std::string& name) const;

  onnx::Model model_;
  const TensorValues& values_;
  std::vector<std::vector<std::string>> reads_;
  std::unordered_map<std::string, int> producer_;
  std::set<std::string> initializers_, graph_outputs_;
  std::map<std::string, const ::onnx::ValueInfoProto*> graph_inputs_;
};

// Runs (or replays) the checks of candidates, numbering them, logging one line each, recording the replay
// and keeping the passing candidate seen last.
class CandidateChecks {
 public:
  CandidateChecks(const PreparedGraph& graph, const FailureCheck& check, const ReduceOptions& options);

  // True when the candidate fails. `key` names it in the replay, `what` in the log; `build` makes it (not
  // called when the replay has the outcome, unless it passes).
  template <typename Build>
  bool fails(const std::string& key, const std::string& what, int nodes, int outputs, const Build& build) {
    return fails_impl(key, what, nodes, outputs, std::function<onnx::Model()>(build));
  }

  int checks_run() const { return checks_run_; }
  int checks_failed() const { return checks_failed_; }  // of those run
  int checks_replayed() const { return checks_replayed_; }
  std::optional<onnx::Model>& last_passing() { return last_passing_; }
  const ReduceOptions& options() const { return options_; }

 private:
  bool fails_impl(const std::string& key, const std::string& what, int nodes, int outputs,
                  const std::function<onnx::Model()>& build);

  const FailureCheck& check_;
  const ReduceOptions& options_;
  DebugReplay replay_;
  int step_ = 0, checks_run_ = 0, checks_failed_ = 0, checks_replayed_ = 0;
  std::optional<onnx::Model> last_passing_;
};

// Logs the freezing of cut-off tensors (Polygraphy's line) and calls options.on_freeze for each.
void announce_frozen(const ReduceOptions& options, const std::vector<std::string>& tensors);

// The two algorithms, after the check of the whole model (`whole_model_passes`). They fill `reduced`,
// `min_good`, `failing_node`, `frozen_inputs`, `frozen_initializers` and `reduced_fails`.
ReduceResult reduce_by_marking(const PreparedGraph& graph, CandidateChecks& checks, bool whole_model_passes);
ReduceResult reduce_by_neighbourhood(const PreparedGraph& graph, CandidateChecks& checks, bool whole_model_passes);

}  // namespace parity::debug::reduce_internal
