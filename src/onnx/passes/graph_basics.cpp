// Graph bookkeeping passes: cleanup (dead-code removal), toposort,
// Constant-node lowering, input-shape overrides, value_info helpers.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/onnx/graph_order.h"
#include "parity/onnx/passes.h"

namespace parity::onnx {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::NodeProto;

namespace {

template <typename Fn>
void for_each_subgraph(NodeProto& node, Fn&& fn) {
  for (auto& a : *node.mutable_attribute()) {
    if (a.has_g()) fn(*a.mutable_g());
    for (auto& g : *a.mutable_graphs()) fn(g);
  }
}

}  // namespace

std::string describe_node(const NodeProto& node) {
  std::string op = node.domain().empty() || node.domain() == "ai.onnx" ? node.op_type()
                                                                        : node.domain() + "." + node.op_type();
  return node.name().empty() ? fmt::format("node <unnamed> ({})", op) : fmt::format("node '{}' ({})", node.name(), op);
}

int64_t count_nodes(const GraphProto& graph) {
  int64_t n = 0;
  for (const auto& node : graph.node()) {
    ++n;
    for (const auto& a : node.attribute()) {
      if (a.has_g()) n += count_nodes(a.g());
      for (const auto& g : a.graphs()) n += count_nodes(g);
    }
  }
  return n;
}

CleanupReport cleanup(GraphProto& graph, const CleanupOptions& options) {
  CleanupReport report;
  if (options.recurse_subgraphs)
    for (auto& node : *graph.mutable_node())
      for_each_subgraph(node, [&](GraphProto& g) {
        CleanupOptions inner = options;
        inner.remove_unused_graph_inputs = false;  // subgraph inputs are positional
        auto r = cleanup(g, inner);
        report.nodes_removed += r.nodes_removed;
        report.initializers_removed += r.initializers_removed;
      });
  // Walk back from the outputs.
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const auto& o : graph.node(i).output())
      if (!o.empty()) producer[o] = i;
  std::vector<char> live(static_cast<std::size_t>(graph.node_size()), 0);
  std::unordered_set<std::string> used;
  std::vector<std::string> stack;
  for (const auto& o : graph.output()) stack.push_back(o.name());
  while (!stack.empty()) {
    std::string name = std::move(stack.back());
    stack.pop_back();
    if (!used.insert(name).second) continue;
    auto it = producer.find(name);
    if (it == producer.end() || live[static_cast<std::size_t>(it->second)]) continue;
    live[static_cast<std::size_t>(it->second)] = 1;
    for (auto& r : node_reads(graph.node(it->second))) stack.push_back(std::move(r));
  }
  google::protobuf::RepeatedPtrField<NodeProto> kept;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (live[static_cast<std::size_t>(i)]) kept.Add(std::move(*graph.mutable_node(i)));
    else ++report.nodes_removed;
  }
  graph.mutable_node()->Swap(&kept);
  auto* inits = graph.mutable_initializer();
  for (int i = inits->size() - 1; i >= 0; --i)
    if (!used.count(inits->Get(i).name())) {
      inits->DeleteSubrange(i, 1);
      ++report.initializers_removed;
    }
  if (options.remove_unused_graph_inputs) {
    auto* inputs = graph.mutable_input();
    for (int i = inputs->size() - 1; i >= 0; --i)
      if (!used.count(inputs->Get(i).name())) {
        inputs->DeleteSubrange(i, 1);
        ++report.inputs_removed;
      }
  }
  std::unordered_set<std::string> present;
  for (const auto& n : graph.node())
    for (const auto& o : n.output()) present.insert(o);
  auto* infos = graph.mutable_value_info();
  for (int i = infos->size() - 1; i >= 0; --i)
    if (!present.count(infos->Get(i).name())) infos->DeleteSubrange(i, 1);
  return report;
}

void toposort(GraphProto& graph) {
  for (auto& node : *graph.mutable_node()) for_each_subgraph(node, [](GraphProto& g) { toposort(g); });
  const int n = graph.node_size();
  std::unordered_map<std::string, int> producer;  // a tensor produced twice: its last producer
  std::vector<std::vector<std::string>> reads;
  reads.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    for (const auto& o : graph.node(i).output())
      if (!o.empty()) producer[o] = i;
    reads.push_back(node_reads(graph.node(i)));
  }
  const std::vector<int> order =
      topological_order(graph, reads, producer,
                        {.describe_node = [&](int index) { return describe_node(graph.node(index)); },
                         .name_graph_when_node_reads_itself = true});
  bool sorted = true;
  for (int i = 0; i < n; ++i) sorted = sorted && order[static_cast<std::size_t>(i)] == i;
  if (sorted) return;
  google::protobuf::RepeatedPtrField<NodeProto> nodes;
  for (int i : order) nodes.Add(std::move(*graph.mutable_node(i)));
  graph.mutable_node()->Swap(&nodes);
}

bool is_constant_node(const NodeProto& node) {
  return node.op_type() == "Constant" && (node.domain().empty() || node.domain() == "ai.onnx");
}

int64_t lower_constant_nodes(GraphProto& graph, const std::function<void(const NodeProto&)>& on_lowered) {
  int64_t lowered = 0;
  google::protobuf::RepeatedPtrField<NodeProto> kept;
  for (auto& node : *graph.mutable_node()) {
    for_each_subgraph(node, [&](GraphProto& g) { lowered += lower_constant_nodes(g, on_lowered); });
    bool is_constant = is_constant_node(node) && node.output_size() == 1 && node.attribute_size() == 1;
    if (!is_constant) {
      kept.Add(std::move(node));
      continue;
    }
    const AttributeProto& a = node.attribute(0);
    ::onnx::TensorProto t;
    const std::string& name = a.name();
    if (name == "value") {
      t = a.t();
    } else if (name == "value_float") {
      t.set_data_type(::onnx::TensorProto::FLOAT);
      t.add_float_data(a.f());
    } else if (name == "value_floats") {
      t.set_data_type(::onnx::TensorProto::FLOAT);
      t.add_dims(a.floats_size());
      for (float v : a.floats()) t.add_float_data(v);
    } else if (name == "value_int") {
      t.set_data_type(::onnx::TensorProto::INT64);
      t.add_int64_data(a.i());
    } else if (name == "value_ints") {
      t.set_data_type(::onnx::TensorProto::INT64);
      t.add_dims(a.ints_size());
      for (int64_t v : a.ints()) t.add_int64_data(v);
    } else if (name == "value_string") {
      t.set_data_type(::onnx::TensorProto::STRING);
      t.add_string_data(a.s());
    } else if (name == "value_strings") {
      t.set_data_type(::onnx::TensorProto::STRING);
      t.add_dims(a.strings_size());
      for (const auto& v : a.strings()) t.add_string_data(v);
    } else {  // sparse_value, or an attribute reference inside a function
      kept.Add(std::move(node));
      continue;
    }
    t.set_name(node.output(0));
    if (on_lowered) on_lowered(node);
    *graph.add_initializer() = std::move(t);
    ++lowered;
  }
  graph.mutable_node()->Swap(&kept);
  return lowered;
}

void override_input_shapes(GraphProto& graph, const TensorMetadata& shapes) {
  for (const auto& [name, info] : shapes) {
    ::onnx::ValueInfoProto* target = nullptr;
    for (auto& in : *graph.mutable_input())
      if (in.name() == name) target = &in;
    if (!target) {
      std::vector<std::string> names;
      for (const auto& in : graph.input()) names.push_back(in.name());
      raise<InvalidInputError>("--override-input-shapes: the model has no input named '{}' (inputs: {})", name,
                               fmt::join(names, ", "));
    }
    auto* tensor_type = target->mutable_type()->mutable_tensor_type();
    if (info.dtype != DType::kUndefined) tensor_type->set_elem_type(static_cast<int32_t>(info.dtype));
    if (!info.shape) continue;
    auto* shape = tensor_type->mutable_shape();
    shape->clear_dim();
    for (const auto& d : *info.shape) {
      auto* dim = shape->add_dim();
      if (d.value && *d.value >= 0) dim->set_dim_value(*d.value);
      else if (!d.symbol.empty()) dim->set_dim_param(d.symbol);
    }
  }
}

void clear_value_info(GraphProto& graph) {
  graph.clear_value_info();
  for (auto& node : *graph.mutable_node()) for_each_subgraph(node, [](GraphProto& g) { clear_value_info(g); });
}

std::map<std::string, TensorInfo> known_value_infos(const GraphProto& graph) {
  std::map<std::string, TensorInfo> infos;
  for (const auto& t : graph.initializer()) {
    TensorInfo info;
    if (t.data_type() > 0 && t.data_type() <= 28) info.dtype = dtype_from_onnx(t.data_type());
    std::vector<Dim> dims;
    for (int64_t d : t.dims()) dims.push_back(Dim::fixed(d));
    info.shape = std::move(dims);
    infos[t.name()] = info;
  }
  auto add = [&](const ::onnx::ValueInfoProto& v) {
    if (!v.has_type() || !v.type().has_tensor_type()) return;
    infos[v.name()] = tensor_info_from_type(v.type());
  };
  for (const auto& v : graph.value_info()) add(v);
  for (const auto& v : graph.input()) add(v);
  for (const auto& v : graph.output()) add(v);
  return infos;
}

}  // namespace parity::onnx
