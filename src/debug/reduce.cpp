// debug reduce: the three phases (outputs, neighbourhood, inputs) over one prepared graph; see
// parity/debug/reduce.h.
#include "parity/debug/reduce.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/debug/replay.h"
#include "parity/onnx/graph_order.h"
#include "parity/onnx/passes.h"
#include "parity/onnx/tensor_proto.h"
#include "parity/runtime/interpreter.h"

namespace parity::debug {
namespace {

const char* mode_name(ReduceMode mode) { return mode == ReduceMode::kBisect ? "bisect" : "linear"; }

// The graph being reduced, indexed once: what each node reads and which node makes each tensor.
class PreparedGraph {
 public:
  PreparedGraph(const onnx::Model& model, const TensorValues& values) : values_(values) {
    model_.proto = std::make_shared<::onnx::ModelProto>(*model);
    model_.path = model.path;
    model_.base_dir = model.base_dir;
    auto& graph = *model_->mutable_graph();
    onnx::lower_constant_nodes(graph);
    onnx::toposort(graph);
    onnx::clear_value_info(graph);
    for (const auto& node : graph.node()) reads_.push_back(onnx::node_reads(node));
    for (int i = 0; i < graph.node_size(); ++i)
      for (const auto& output : graph.node(i).output())
        if (!output.empty()) producer_[output] = i;
    for (const auto& initializer : graph.initializer()) initializers_.insert(initializer.name());
    for (const auto& input : graph.input()) graph_inputs_[input.name()] = &input;
    for (const auto& output : graph.output()) graph_outputs_.insert(output.name());
  }

  const onnx::Model& model() const { return model_; }
  int size() const { return model_->graph().node_size(); }
  const ::onnx::NodeProto& node(int index) const { return model_->graph().node(index); }
  const std::vector<std::string>& reads(int index) const { return reads_[index]; }
  bool is_graph_output(const std::string& name) const { return graph_outputs_.count(name) > 0; }
  std::string describe(int index) const { return onnx::describe_node(node(index)); }

  // Nodes of `nodes` that reach one of `outputs` through nodes of `nodes`, in graph order.
  std::vector<int> needed(const std::vector<int>& nodes, const std::vector<std::string>& outputs) const {
    std::set<int> allowed(nodes.begin(), nodes.end()), kept;
    std::vector<int> stack;
    auto visit = [&](const std::string& tensor) {
      auto it = producer_.find(tensor);
      if (it != producer_.end() && allowed.count(it->second) && kept.insert(it->second).second)
        stack.push_back(it->second);
    };
    for (const auto& output : outputs) visit(output);
    while (!stack.empty()) {
      int index = stack.back();
      stack.pop_back();
      for (const auto& tensor : reads_[index]) visit(tensor);
    }
    return {kept.begin(), kept.end()};
  }

  // Every ancestor of node `index`, and the node itself, in graph order.
  std::vector<int> ancestors(int index) const {
    std::vector<int> all(static_cast<std::size_t>(size()));
    for (int i = 0; i < size(); ++i) all[i] = i;
    std::vector<std::string> outputs;
    for (const auto& output : node(index).output())
      if (!output.empty()) outputs.push_back(output);
    return needed(all, outputs);
  }

  // Tensors the nodes make that none of them reads, and graph outputs they make.
  std::vector<std::string> unread_outputs(const std::vector<int>& nodes) const {
    std::set<std::string> read;
    for (int index : nodes) read.insert(reads_[index].begin(), reads_[index].end());
    std::vector<std::string> outputs;
    for (int index : nodes)
      for (const auto& output : node(index).output())
        if (!output.empty() && (!read.count(output) || is_graph_output(output))) outputs.push_back(output);
    return outputs;
  }

  // The model made of `nodes` (sorted), computing `outputs`; tensors read but not made become graph
  // inputs (original inputs keep their declaration; others take dtype and shape from the values).
  // With `freeze_cut_branches`, such a tensor that the first node does not read is an initializer
  // holding its value in the first sample instead (Polygraphy's freezing of cut-off branches), its
  // name appended to `frozen_initializers`.
  onnx::Model build(const std::vector<int>& nodes, const std::vector<std::string>& outputs,
                    std::vector<std::string>* frozen = nullptr, bool freeze_cut_branches = false,
                    std::vector<std::string>* frozen_initializers = nullptr) const {
    onnx::Model candidate;
    candidate.proto = std::make_shared<::onnx::ModelProto>();
    candidate.path = model_.path;
    candidate.base_dir = model_.base_dir;
    const auto& source = model_->graph();
    auto& proto = *candidate;
    proto.CopyFrom(*model_);
    proto.clear_graph();
    auto& graph = *proto.mutable_graph();
    graph.set_name(source.name());
    std::set<std::string> made, declared, used_initializers;
    for (int index : nodes) {
      *graph.add_node() = node(index);
      for (const auto& output : node(index).output()) made.insert(output);
    }
    for (int index : nodes) {
      for (const auto& tensor : reads_[index]) {
        if (made.count(tensor) || !declared.insert(tensor).second) continue;
        if (initializers_.count(tensor)) {
          used_initializers.insert(tensor);
          if (auto it = graph_inputs_.find(tensor); it != graph_inputs_.end()) *graph.add_input() = *it->second;
          continue;
        }
        if (auto it = graph_inputs_.find(tensor); it != graph_inputs_.end()) {
          *graph.add_input() = *it->second;
          continue;
        }
        if (freeze_cut_branches && !reads_first(nodes, tensor)) {
          *graph.add_initializer() = onnx::tensor_to_proto(value_of(tensor), tensor);
          if (frozen_initializers) frozen_initializers->push_back(tensor);
          continue;
        }
        add_value_info(*graph.add_input(), tensor);
        if (frozen) frozen->push_back(tensor);
      }
    }
    for (const auto& initializer : source.initializer())
      if (used_initializers.count(initializer.name())) *graph.add_initializer() = initializer;
    for (const auto& output : outputs) {
      bool original = false;
      for (const auto& declared_output : source.output())
        if (declared_output.name() == output) {
          *graph.add_output() = declared_output;
          original = true;
        }
      if (!original) add_value_info(*graph.add_output(), output);
    }
    return candidate;
  }

 private:
  bool reads_first(const std::vector<int>& nodes, const std::string& tensor) const {
    if (nodes.empty()) return false;
    const auto& first = reads_[*std::min_element(nodes.begin(), nodes.end())];
    return std::find(first.begin(), first.end(), tensor) != first.end();
  }

  // The tensor's value in the first sample (the data loader's first input), as Polygraphy freezes it.
  const Tensor& value_of(const std::string& name) const {
    if (values_.empty() || !values_.front().count(name))
      raise<InvalidInputError>("tensor '{}' has no value from the run of the whole model (it is not a tensor, or "
                               "the run did not produce it), so it cannot be frozen into an initializer",
                               name);
    return values_.front().at(name);
  }

  // dtype from the values, dims fixed where every sample agrees.
  void add_value_info(::onnx::ValueInfoProto& info, const std::string& name) const {
    info.set_name(name);
    const Tensor* first = nullptr;
    std::vector<const Tensor*> samples;
    for (const auto& sample : values_)
      if (auto it = sample.find(name); it != sample.end()) samples.push_back(&it->second);
    if (samples.empty())
      raise<InvalidInputError>("tensor '{}' has no value from the run of the whole model (it is not a tensor, or "
                               "the run did not produce it), so it cannot become a graph input or output",
                               name);
    first = samples.front();
    auto* type = info.mutable_type()->mutable_tensor_type();
    type->set_elem_type(static_cast<int32_t>(first->dtype()));
    auto* shape = type->mutable_shape();
    for (std::size_t d = 0; d < first->shape().size(); ++d) {
      bool agree = std::all_of(samples.begin(), samples.end(), [&](const Tensor* t) {
        return t->shape().size() == first->shape().size() && t->shape()[d] == first->shape()[d];
      });
      auto* dim = shape->add_dim();
      if (agree) dim->set_dim_value(first->shape()[d]);
    }
  }

  onnx::Model model_;
  const TensorValues& values_;
  std::vector<std::vector<std::string>> reads_;
  std::unordered_map<std::string, int> producer_;
  std::set<std::string> initializers_, graph_outputs_;
  std::map<std::string, const ::onnx::ValueInfoProto*> graph_inputs_;
};

// The reduction's replay: the shared format (parity/debug/replay.h) with the model's node count,
// which a loaded replay must match.
DebugReplay open_replay(const ReduceOptions& options, int64_t model_nodes) {
  nlohmann::json header = {{"tool", "debug reduce"}, {"model_nodes", model_nodes}, {"mode", mode_name(options.mode)}};
  DebugReplay replay(options.load_replay, options.save_replay, std::move(header), {"model_nodes"});
  const auto& loaded = replay.loaded_field("model_nodes");
  if (!loaded.is_null() && (!loaded.is_number_integer() || loaded.get<int64_t>() != model_nodes))
    raise<FileError>("{}: the replay is of a model with {} nodes, this one has {}", options.load_replay.string(),
                     loaded.dump(), model_nodes);
  return replay;
}

class Reducer {
 public:
  Reducer(const onnx::Model& model, const TensorValues& values, const FailureCheck& check,
          const ReduceOptions& options)
      : graph_(model, values), check_(check), options_(options), replay_(open_replay(options, graph_.size())) {}

  ReduceResult run() {
    ReduceResult result;
    result.original_nodes = graph_.size();
    const int total = graph_.size();
    std::vector<int> all(static_cast<std::size_t>(total));
    for (int i = 0; i < total; ++i) all[i] = i;
    std::vector<std::string> original_outputs;
    for (const auto& output : graph_.model()->graph().output()) original_outputs.push_back(output.name());

    // Polygraphy never checks the whole model: it searches anyway and keeps the smallest candidate seen
    // failing, or the whole model when none fails. Parity checks it first, says so, and does the same
    // unless the caller asked for a failing model.
    result.whole_model_passes = !fails("full", "the whole model", all, original_outputs);
    if (result.whole_model_passes) {
      if (options_.require_failing_model)
        raise<InvalidInputError>("the check passes on the whole model ({} nodes): there is no failure to reduce",
                                 total);
      log::warning("The check passes on the whole model ({} nodes): there is no failure to reduce. Going on as "
                   "Polygraphy does: the reduced model is the smallest candidate that fails the check, or the whole "
                   "model (which passes) if none does",
                   total);
    }
    bool failure_found = !result.whole_model_passes;
    std::vector<int> nodes = all;
    std::vector<std::string> outputs = original_outputs;

    if (options_.reduce_outputs && total > 1) {
      // Phase 1: the shortest failing prefix. `pass` is a prefix length known to pass, `fail` one
      // known to fail.
      int pass = 0, fail = total;
      auto try_prefix = [&](int length) {
        std::vector<int> prefix(all.begin(), all.begin() + length);
        return fails("outputs:" + std::to_string(length),
                     fmt::format("outputs ({}) | window [{}, {}] | first {} of {} nodes", mode_name(options_.mode),
                                 pass, fail, length, total),
                     prefix, graph_.unread_outputs(prefix));
      };
      if (options_.mode == ReduceMode::kBisect) {
        while (fail - pass > 1) {
          int middle = pass + (fail - pass) / 2;
          (try_prefix(middle) ? fail : pass) = middle;
        }
      } else {
        for (int length = total - 1; length > 0; --length) {
          if (!try_prefix(length)) {
            pass = length;
            break;
          }
          fail = length;
        }
      }
      // With a passing whole model, `fail` still at the end means that no prefix failed either.
      if (result.whole_model_passes && fail == total) {
        log::info("No prefix of the nodes fails the check: the graph outputs stay as they are");
      } else {
        failure_found = true;
        reduce_to_failing_node(fail, pass, all, nodes, outputs, result);
      }
    }

    if (options_.reduce_inputs && nodes.size() > 1) {
      // Phase 3: the shortest failing suffix; the outputs made by removed nodes are dropped.
      const int count = static_cast<int>(nodes.size());
      int fail = 0, pass = count;
      auto suffix_outputs = [&](int start) {
        std::set<std::string> made;
        for (int i = start; i < count; ++i)
          for (const auto& output : graph_.node(nodes[i]).output()) made.insert(output);
        std::vector<std::string> kept;
        for (const auto& output : outputs)
          if (made.count(output)) kept.push_back(output);
        return kept;
      };
      auto try_suffix = [&](int start) {
        std::vector<int> suffix(nodes.begin() + start, nodes.end());
        auto kept = suffix_outputs(start);
        suffix = graph_.needed(suffix, kept);
        if (kept.empty() || suffix.empty()) return false;
        return fails("inputs:" + std::to_string(start),
                     fmt::format("inputs ({}) | window [{}, {}] | last {} of {} nodes", mode_name(options_.mode),
                                 fail, pass, count - start, count),
                     suffix, kept);
      };
      if (options_.mode == ReduceMode::kBisect) {
        while (pass - fail > 1) {
          int middle = fail + (pass - fail) / 2;
          (try_suffix(middle) ? fail : pass) = middle;
        }
      } else {
        for (int start = 1; start < count; ++start) {
          if (!try_suffix(start)) break;
          fail = start;
        }
      }
      if (fail > 0) failure_found = true;
      outputs = suffix_outputs(fail);
      nodes = graph_.needed(std::vector<int>(nodes.begin() + fail, nodes.end()), outputs);
    }

    result.reduced = graph_.build(nodes, outputs, &result.frozen_inputs, options_.freeze_cut_branches,
                                  &result.frozen_initializers);
    result.reduced_fails = failure_found;
    // With no failing candidate there is no failure for a passing model to be close to.
    if (failure_found) result.min_good = last_passing_;
    result.checks_run = checks_run_;
    result.checks_replayed = checks_replayed_;
    return result;
  }

 private:
  // Phases 1's outcome and phase 2: the prefix of `fail` nodes fails and that of `pass` nodes passes, so
  // the prefix's last node is the failing node; then only its ancestors, with only its outputs.
  void reduce_to_failing_node(int fail, int pass, const std::vector<int>& all, std::vector<int>& nodes,
                              std::vector<std::string>& outputs, ReduceResult& result) {
    const int failing = fail - 1;
    result.failing_node = graph_.describe(failing);
    log::info("Failing node: {} (the check passes on the {} node(s) before it and fails once it is added)",
              result.failing_node, pass);
    nodes.assign(all.begin(), all.begin() + fail);
    outputs = graph_.unread_outputs(nodes);
    std::vector<int> ancestors = graph_.ancestors(failing);
    std::vector<std::string> node_outputs;
    for (const auto& output : graph_.node(failing).output())
      if (!output.empty()) node_outputs.push_back(output);
    if (ancestors.size() < nodes.size() || node_outputs.size() < outputs.size()) {
      if (fails("neighbourhood:" + std::to_string(failing),
                fmt::format("neighbourhood | the {} ancestor(s) of {}", ancestors.size(), result.failing_node),
                ancestors, node_outputs)) {
        nodes = std::move(ancestors);
        outputs = std::move(node_outputs);
      } else {
        log::info("The failing node's ancestors alone pass; keeping the prefix's outputs");
      }
    }
  }

  onnx::Model build(const std::vector<int>& nodes, const std::vector<std::string>& outputs) const {
    if (!options_.freeze_cut_branches) return graph_.build(nodes, outputs);
    std::vector<std::string> frozen;
    onnx::Model candidate = graph_.build(nodes, outputs, nullptr, true, &frozen);
    for (const auto& tensor : frozen) {
      if (options_.on_freeze) options_.on_freeze(tensor);
      log::info("Freezing tensor: {} to eliminate branches.", tensor);
    }
    return candidate;
  }

  bool fails(const std::string& key, const std::string& what, const std::vector<int>& nodes,
             const std::vector<std::string>& outputs) {
    ++step_;
    bool failed;
    const char* source = "";
    std::optional<onnx::Model> candidate;
    if (auto replayed = replay_.find(key)) {
      failed = replayed->at("failed").get<bool>();
      ++checks_replayed_;
      source = " (from the replay)";
    } else {
      candidate = build(nodes, outputs);
      failed = check_(*candidate, step_);
      ++checks_run_;
    }
    // The passing candidate seen last is the closest to the result (each phase narrows its window).
    if (!failed) last_passing_ = candidate ? std::move(*candidate) : build(nodes, outputs);
    replay_.record({{"key", key}, {"nodes", nodes.size()}, {"failed", failed}});
    log::info("Step {} | {} | {} node(s), {} output(s) | {}{}", step_, what, nodes.size(), outputs.size(),
              failed ? "FAIL" : "pass", source);
    return failed;
  }

  PreparedGraph graph_;
  const FailureCheck& check_;
  const ReduceOptions& options_;
  DebugReplay replay_;
  int step_ = 0, checks_run_ = 0, checks_replayed_ = 0;
  std::optional<onnx::Model> last_passing_;
};

}  // namespace

TensorValues run_full_model(const onnx::Model& model, const std::vector<NamedTensors>& feeds) {
  runtime::Interpreter interpreter(model, runtime::InterpreterOptions{});
  TensorValues values;
  for (const auto& feed : feeds) {
    runtime::NamedValues inputs;
    auto& sample = values.emplace_back();
    for (const auto& [name, tensor] : feed) {
      inputs.emplace_back(name, ops::Value::of(tensor));
      sample.emplace(name, tensor);
    }
    for (auto& [name, value] : interpreter.run(inputs, runtime::IntermediateOutputs::all()))
      if (value.is_tensor()) sample.insert_or_assign(name, value.tensor());
  }
  return values;
}

std::vector<NamedTensors> candidate_feeds(const onnx::Model& candidate, const TensorValues& values) {
  std::set<std::string> initializers;
  for (const auto& initializer : candidate->graph().initializer()) initializers.insert(initializer.name());
  std::vector<NamedTensors> feeds;
  for (const auto& sample : values) {
    auto& feed = feeds.emplace_back();
    for (const auto& input : candidate->graph().input()) {
      if (initializers.count(input.name())) continue;
      auto it = sample.find(input.name());
      if (it == sample.end())
        raise<InvalidInputError>("no value for the candidate's input '{}' in the run of the whole model",
                                 input.name());
      feed.emplace_back(input.name(), it->second);
    }
  }
  return feeds;
}

ReduceResult reduce(const onnx::Model& model, const TensorValues& values, const FailureCheck& check,
                    const ReduceOptions& options) {
  return Reducer(model, values, check, options).run();
}

}  // namespace parity::debug
