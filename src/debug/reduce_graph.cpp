// debug reduce's prepared graph (candidates by node list or by marked inputs and outputs) and the checks of
// candidates; see reduce_graph.h.
#include "reduce_graph.h"

#include <algorithm>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/graph_order.h"
#include "parity/onnx/passes.h"
#include "parity/onnx/tensor_proto.h"

namespace parity::debug::reduce_internal {

const char* mode_name(ReduceMode mode) { return mode == ReduceMode::kBisect ? "bisect" : "linear"; }

PreparedGraph::PreparedGraph(const onnx::Model& model, const TensorValues& values) : values_(values) {
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

std::string PreparedGraph::describe(int index) const { return onnx::describe_node(node(index)); }

std::vector<std::string> PreparedGraph::graph_inputs() const {
  std::vector<std::string> names;
  for (const auto& input : model_->graph().input())
    if (!initializers_.count(input.name())) names.push_back(input.name());
  return names;
}

std::vector<std::string> PreparedGraph::graph_outputs() const {
  std::vector<std::string> names;
  for (const auto& output : model_->graph().output()) names.push_back(output.name());
  return names;
}

std::optional<int> PreparedGraph::producer(const std::string& tensor) const {
  auto it = producer_.find(tensor);
  if (it == producer_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> PreparedGraph::outputs_of(int index) const {
  std::vector<std::string> names;
  for (const auto& output : node(index).output())
    if (!output.empty()) names.push_back(output);
  return names;
}

std::vector<std::string> PreparedGraph::variable_inputs_of(int index) const {
  std::vector<std::string> names;
  for (const auto& input : node(index).input())
    if (!input.empty() && !initializers_.count(input) &&
        std::find(names.begin(), names.end(), input) == names.end())
      names.push_back(input);
  return names;
}

std::vector<int> PreparedGraph::needed(const std::vector<int>& nodes, const std::vector<std::string>& outputs) const {
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

std::vector<int> PreparedGraph::ancestors(int index) const {
  std::vector<int> all(static_cast<std::size_t>(size()));
  for (int i = 0; i < size(); ++i) all[i] = i;
  return needed(all, outputs_of(index));
}

std::vector<std::string> PreparedGraph::unread_outputs(const std::vector<int>& nodes) const {
  std::set<std::string> read;
  for (int index : nodes) read.insert(reads_[index].begin(), reads_[index].end());
  std::vector<std::string> outputs;
  for (int index : nodes)
    for (const auto& output : node(index).output())
      if (!output.empty() && (!read.count(output) || is_graph_output(output))) outputs.push_back(output);
  return outputs;
}

namespace {

// Nodes that reach one of `outputs` without going through a tensor of `stops` (ONNX-GraphSurgeon's
// cleanup after marking: a graph input's producer is disconnected from it), in graph order.
std::vector<int> reaching(const std::unordered_map<std::string, int>& producers,
                          const std::vector<std::vector<std::string>>& reads, const std::vector<std::string>& outputs,
                          const std::set<std::string>& stops) {
  std::set<int> kept;
  std::vector<int> stack;
  auto visit = [&](const std::string& tensor) {
    if (stops.count(tensor)) return;
    auto it = producers.find(tensor);
    if (it != producers.end() && kept.insert(it->second).second) stack.push_back(it->second);
  };
  for (const auto& output : outputs) visit(output);
  while (!stack.empty()) {
    int index = stack.back();
    stack.pop_back();
    for (const auto& tensor : reads[index]) visit(tensor);
  }
  return {kept.begin(), kept.end()};
}

}  // namespace

MarkedCandidate PreparedGraph::mark(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                                    bool freeze) const {
  MarkedCandidate candidate;
  candidate.outputs = outputs;
  std::set<std::string> stops(inputs.begin(), inputs.end());
  std::vector<int> nodes = reaching(producer_, reads_, outputs, stops);
  // Read by the nodes, made by none of them, neither a graph input nor an initializer: cut off.
  auto cut_off = [&](const std::vector<int>& kept) {
    std::set<std::string> made, seen;
    for (int index : kept) made.insert(node(index).output().begin(), node(index).output().end());
    std::vector<std::string> tensors;
    for (int index : kept)
      for (const auto& tensor : reads_[index])
        if (!made.count(tensor) && !stops.count(tensor) && !initializers_.count(tensor) && seen.insert(tensor).second)
          tensors.push_back(tensor);
    return tensors;
  };
  candidate.cut_off = cut_off(nodes);
  if (freeze) candidate.frozen = candidate.cut_off;
  if (!candidate.cut_off.empty()) {
    // Polygraphy folds constants once it has frozen a tensor: every node whose inputs are all constant
    // (initializers, frozen or folded tensors) goes, its outputs becoming constants (the first sample's values).
    // Without freezing the same nodes go, their outputs fed like the cut-off tensors (every sample's values).
    std::set<std::string> constants(candidate.cut_off.begin(), candidate.cut_off.end());
    std::vector<std::string> folded;
    for (int index : nodes) {
      const auto& read = reads_[index];
      bool all_constant = !read.empty() && std::all_of(read.begin(), read.end(), [&](const std::string& tensor) {
        return constants.count(tensor) || initializers_.count(tensor);
      });
      auto made = outputs_of(index);
      bool valued = !values_.empty() && std::all_of(made.begin(), made.end(), [&](const std::string& tensor) {
        return values_.front().count(tensor) > 0;
      });
      if (!all_constant || !valued) continue;
      for (const auto& tensor : made)
        if (constants.insert(tensor).second) folded.push_back(tensor);
    }
    if (!folded.empty()) {
      std::set<std::string> folded_stops = stops;
      folded_stops.insert(constants.begin(), constants.end());
      nodes = reaching(producer_, reads_, outputs, folded_stops);
      std::set<std::string> read;
      for (int index : nodes) read.insert(reads_[index].begin(), reads_[index].end());
      auto kept = [&](const std::string& tensor) {
        return read.count(tensor) || std::count(outputs.begin(), outputs.end(), tensor);
      };
      std::vector<std::string> still_cut;
      for (const auto& tensor : candidate.cut_off)
        if (kept(tensor)) still_cut.push_back(tensor);
      candidate.cut_off = std::move(still_cut);
      for (const auto& tensor : folded)
        if (kept(tensor)) candidate.folded.push_back(tensor);
    }
  }
  candidate.nodes = nodes;
  // ONNX-GraphSurgeon's cleanup removes graph inputs that no kept node reads.
  std::set<std::string> read;
  for (int index : nodes) read.insert(reads_[index].begin(), reads_[index].end());
  std::set<std::string> declared;
  for (const auto& input : inputs)
    if (read.count(input) && declared.insert(input).second) candidate.inputs.push_back(input);
  if (!freeze) {
    candidate.inputs.insert(candidate.inputs.end(), candidate.cut_off.begin(), candidate.cut_off.end());
    candidate.inputs.insert(candidate.inputs.end(), candidate.folded.begin(), candidate.folded.end());
  }
  return candidate;
}

onnx::Model PreparedGraph::empty_candidate() const {
  onnx::Model candidate;
  candidate.proto = std::make_shared<::onnx::ModelProto>();
  candidate.path = model_.path;
  candidate.base_dir = model_.base_dir;
  auto& proto = *candidate;
  proto.CopyFrom(*model_);
  proto.clear_graph();
  proto.mutable_graph()->set_name(model_->graph().name());
  return candidate;
}

void PreparedGraph::add_input(::onnx::GraphProto& graph, const std::string& tensor) const {
  if (auto it = graph_inputs_.find(tensor); it != graph_inputs_.end())
    *graph.add_input() = *it->second;
  else
    add_value_info(*graph.add_input(), tensor);
}

void PreparedGraph::add_output(::onnx::GraphProto& graph, const std::string& tensor) const {
  for (const auto& declared : model_->graph().output())
    if (declared.name() == tensor) {
      *graph.add_output() = declared;
      return;
    }
  add_value_info(*graph.add_output(), tensor);
}

onnx::Model PreparedGraph::build(const MarkedCandidate& marked, bool freeze) const {
  onnx::Model candidate = empty_candidate();
  auto& graph = *candidate->mutable_graph();
  std::set<std::string> read;
  for (int index : marked.nodes) {
    *graph.add_node() = node(index);
    read.insert(reads_[index].begin(), reads_[index].end());
  }
  for (const auto& input : marked.inputs) add_input(graph, input);
  for (const auto& initializer : model_->graph().initializer())
    if (read.count(initializer.name())) {
      // An initializer that is also a declared graph input (a default value) stays one.
      if (graph_inputs_.count(initializer.name())) add_input(graph, initializer.name());
      *graph.add_initializer() = initializer;
    }
  if (freeze)
    for (const auto* tensors : {&marked.cut_off, &marked.folded})
      for (const auto& tensor : *tensors) *graph.add_initializer() = onnx::tensor_to_proto(value_of(tensor), tensor);
  for (const auto& output : marked.outputs) add_output(graph, output);
  return candidate;
}

onnx::Model PreparedGraph::build(const std::vector<int>& nodes, const std::vector<std::string>& outputs,
                                 std::vector<std::string>* frozen, bool freeze_cut_branches,
                                 std::vector<std::string>* frozen_initializers) const {
  onnx::Model candidate = empty_candidate();
  auto& graph = *candidate->mutable_graph();
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
  for (const auto& initializer : model_->graph().initializer())
    if (used_initializers.count(initializer.name())) *graph.add_initializer() = initializer;
  for (const auto& output : outputs) add_output(graph, output);
  return candidate;
}

bool PreparedGraph::reads_first(const std::vector<int>& nodes, const std::string& tensor) const {
  if (nodes.empty()) return false;
  const auto& first = reads_[*std::min_element(nodes.begin(), nodes.end())];
  return std::find(first.begin(), first.end(), tensor) != first.end();
}

// The tensor's value in the first sample (the data loader's first input), as Polygraphy freezes it.
const Tensor& PreparedGraph::value_of(const std::string& name) const {
  if (values_.empty() || !values_.front().count(name))
    raise<InvalidInputError>("tensor '{}' has no value from the run of the whole model (it is not a tensor, or "
                             "the run did not produce it), so it cannot be frozen into an initializer",
                             name);
  return values_.front().at(name);
}

// dtype from the values, dims fixed where every sample agrees.
void PreparedGraph::add_value_info(::onnx::ValueInfoProto& info, const std::string& name) const {
  info.set_name(name);
  std::vector<const Tensor*> samples;
  for (const auto& sample : values_)
    if (auto it = sample.find(name); it != sample.end()) samples.push_back(&it->second);
  if (samples.empty())
    raise<InvalidInputError>("tensor '{}' has no value from the run of the whole model (it is not a tensor, or "
                             "the run did not produce it), so it cannot become a graph input or output",
                             name);
  const Tensor* first = samples.front();
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

namespace {

const char* reduction_name(const ReduceOptions& options) {
  return options.reduce_neighbourhood ? "neighbourhood" : "marking";
}

// The reduction's replay: the shared format (parity/debug/replay.h) with the model's node count and the
// algorithm, which a loaded replay must match.
DebugReplay open_replay(const ReduceOptions& options, int64_t model_nodes) {
  nlohmann::json header = {{"tool", "debug reduce"},
                           {"model_nodes", model_nodes},
                           {"mode", mode_name(options.mode)},
                           {"reduction", reduction_name(options)}};
  DebugReplay replay(options.load_replay, options.save_replay, std::move(header), {"model_nodes"});
  const auto& loaded = replay.loaded_field("model_nodes");
  if (!loaded.is_null() && (!loaded.is_number_integer() || loaded.get<int64_t>() != model_nodes))
    raise<FileError>("{}: the replay is of a model with {} nodes, this one has {}", options.load_replay.string(),
                     loaded.dump(), model_nodes);
  const auto& reduction = replay.loaded_field("reduction");
  if (!reduction.is_null() && reduction != reduction_name(options))
    raise<FileError>("{}: the replay is of the {} reduction, this one is the {} reduction ({})",
                     options.load_replay.string(), reduction.dump(), reduction_name(options),
                     options.reduce_neighbourhood ? "--reduce-neighbourhood given" : "no --reduce-neighbourhood");
  return replay;
}

}  // namespace

CandidateChecks::CandidateChecks(const PreparedGraph& graph, const FailureCheck& check, const ReduceOptions& options)
    : check_(check), options_(options), replay_(open_replay(options, graph.size())) {}

bool CandidateChecks::fails_impl(const std::string& key, const std::string& what, int nodes, int outputs,
                                 const std::function<onnx::Model()>& build) {
  ++step_;
  bool failed;
  const char* source = "";
  std::optional<onnx::Model> candidate;
  if (auto replayed = replay_.find(key)) {
    failed = replayed->at("failed").get<bool>();
    ++checks_replayed_;
    source = " (from the replay)";
  } else {
    candidate = build();
    failed = check_(*candidate, step_);
    ++checks_run_;
    if (failed) ++checks_failed_;
  }
  // The passing candidate seen last is the closest to the result (each phase narrows its window).
  if (!failed) last_passing_ = candidate ? std::move(*candidate) : build();
  replay_.record({{"key", key}, {"nodes", nodes}, {"failed", failed}});
  log::info("Step {} | {} | {} node(s), {} output(s) | {}{}", step_, what, nodes, outputs, failed ? "FAIL" : "pass",
            source);
  return failed;
}

void announce_frozen(const ReduceOptions& options, const std::vector<std::string>& tensors) {
  for (const auto& tensor : tensors) {
    if (options.on_freeze) options.on_freeze(tensor);
    log::info("Freezing tensor: {} to eliminate branches.", tensor);
  }
}

}  // namespace parity::debug::reduce_internal
