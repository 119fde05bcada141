#include "ort_graph.h"

#include <set>
#include <unordered_set>

#include "parity/core/error.h"
#include "parity/onnx/graph_order.h"

namespace parity::runtime::onnxrt {
namespace {

using ::onnx::GraphProto;
using ::onnx::ModelProto;
using ::onnx::NodeProto;
using ::onnx::TypeProto;

std::string node_label(const NodeProto& node, int index) {
  return node.name().empty() ? fmt::format("node #{} ({})", index, node.op_type())
                             : fmt::format("node '{}' ({})", node.name(), node.op_type());
}

void set_value_type(::onnx::ValueInfoProto& value, const TypeProto* type, bool element_type_only) {
  if (!type) return;
  if (element_type_only && type->has_tensor_type()) {
    if (type->tensor_type().elem_type() != 0)
      value.mutable_type()->mutable_tensor_type()->set_elem_type(type->tensor_type().elem_type());
    return;
  }
  *value.mutable_type() = *type;
}

}  // namespace

GraphAnalysis analyse_graph(const GraphProto& graph, int64_t ir_version) {
  GraphAnalysis analysis;
  const int n = graph.node_size();
  for (int i = 0; i < graph.initializer_size(); ++i)
    analysis.initializer_index[graph.initializer(i).name()] = i;
  for (int i = 0; i < graph.sparse_initializer_size(); ++i)
    analysis.sparse_initializer_index[graph.sparse_initializer(i).values().name()] = i;
  for (int i = 0; i < graph.input_size(); ++i) {
    const std::string& name = graph.input(i).name();
    if (!analysis.initializer_index.count(name) && !analysis.sparse_initializer_index.count(name))
      analysis.input_index[name] = i;
    else if (ir_version >= 4)
      analysis.overridable_index[name] = i;
  }
  for (const auto& o : graph.output()) analysis.outputs.push_back(o.name());

  for (const auto& node : graph.node()) {
    analysis.node_names.push_back(node.name());
    analysis.op_types.push_back(node.op_type());
  }
  const onnx::NodeDescriber describe = [&](int index) { return node_label(graph.node(index), index); };
  const auto producer = onnx::unique_producers(graph, describe);
  analysis.reads.reserve(static_cast<std::size_t>(n));
  for (const auto& node : graph.node()) analysis.reads.push_back(onnx::node_reads(node));
  // The model's own order among ready nodes, as the reference interpreter's, so both runners list
  // tensors in the same order.
  analysis.order = onnx::topological_order(graph, analysis.reads, producer, {.describe_node = describe});

  // Constant nodes (see GraphAnalysis::constant), in execution order so ancestors come first.
  static const std::unordered_set<std::string> nondeterministic = {
      "RandomNormal",      "RandomUniform", "RandomNormalLike",
      "RandomUniformLike", "Multinomial",   "Bernoulli"};
  analysis.constant.assign(static_cast<std::size_t>(n), false);
  analysis.position.assign(static_cast<std::size_t>(n), 0);
  for (std::size_t p = 0; p < analysis.order.size(); ++p) {
    int index = analysis.order[p];
    analysis.position[static_cast<std::size_t>(index)] = p;
    if (nondeterministic.count(graph.node(index).op_type())) continue;
    bool constant = true;
    for (const auto& r : analysis.reads[static_cast<std::size_t>(index)]) {
      bool from_initializer =
          (analysis.initializer_index.count(r) || analysis.sparse_initializer_index.count(r)) &&
          !analysis.overridable_index.count(r);
      auto it = producer.find(r);
      bool from_constant =
          it != producer.end() && analysis.constant[static_cast<std::size_t>(it->second)];
      if (!from_initializer && !from_constant) {
        constant = false;
        break;
      }
    }
    analysis.constant[static_cast<std::size_t>(index)] = constant;
  }

  analysis.produced_by_position.resize(static_cast<std::size_t>(n));
  for (std::size_t position = 0; position < analysis.order.size(); ++position) {
    int index = analysis.order[position];
    for (const auto& o : graph.node(index).output()) {
      if (o.empty()) continue;
      analysis.produced_by_position[position].push_back(analysis.produced.size());
      analysis.produced_index[o] = analysis.produced.size();
      analysis.produced.push_back({o, index});
    }
  }
  return analysis;
}

std::unordered_map<std::string, const TypeProto*> declared_types(const GraphProto& graph) {
  std::unordered_map<std::string, const TypeProto*> types;
  auto add = [&](const ::onnx::ValueInfoProto& v) {
    if (v.has_type()) types.emplace(v.name(), &v.type());
  };
  for (const auto& v : graph.input()) add(v);
  for (const auto& v : graph.output()) add(v);
  for (const auto& v : graph.value_info()) add(v);
  return types;
}

namespace {

// Positions of the nodes a piece holds: the constant nodes before `begin` whose outputs it reads
// (transitively), then [begin, end); all in execution order.
std::vector<std::size_t> piece_positions(const GraphAnalysis& analysis, std::size_t begin,
                                         std::size_t end) {
  std::set<std::size_t> pulled;
  std::vector<std::string> pending;
  for (std::size_t p = begin; p < end; ++p)
    for (const auto& r : analysis.reads[static_cast<std::size_t>(analysis.order[p])])
      pending.push_back(r);
  while (!pending.empty()) {
    std::string name = std::move(pending.back());
    pending.pop_back();
    auto it = analysis.produced_index.find(name);
    if (it == analysis.produced_index.end()) continue;  // an input or an initializer
    auto node = static_cast<std::size_t>(analysis.produced[it->second].node);
    std::size_t position = analysis.position[node];
    if (position >= begin || !analysis.constant[node] || !pulled.insert(position).second) continue;
    for (const auto& r : analysis.reads[node]) pending.push_back(r);
  }
  std::vector<std::size_t> positions(pulled.begin(), pulled.end());
  for (std::size_t p = begin; p < end; ++p) positions.push_back(p);
  return positions;
}

bool is_initializer(const GraphAnalysis& analysis, const std::string& name) {
  return analysis.initializer_index.count(name) || analysis.sparse_initializer_index.count(name);
}

}  // namespace

std::vector<std::string> piece_inputs(const GraphAnalysis& analysis, std::size_t begin,
                                      std::size_t end) {
  std::vector<std::size_t> positions = piece_positions(analysis, begin, end);
  std::unordered_set<std::string> produced, seen;
  for (std::size_t p : positions)
    for (std::size_t index : analysis.produced_by_position[p])
      produced.insert(analysis.produced[index].name);
  std::vector<std::string> names;
  for (std::size_t p : positions)
    for (const auto& r : analysis.reads[static_cast<std::size_t>(analysis.order[p])])
      if (!produced.count(r) && !is_initializer(analysis, r) && seen.insert(r).second)
        names.push_back(r);
  return names;
}

ModelProto build_submodel(const ModelProto& model, const GraphAnalysis& analysis, std::size_t begin,
                          std::size_t end, const std::vector<std::string>& outputs,
                          const std::unordered_map<std::string, const TypeProto*>& types,
                          const std::function<const TypeProto*(const std::string&)>& input_type) {
  ModelProto sub;
  sub.set_ir_version(model.ir_version());
  *sub.mutable_opset_import() = model.opset_import();
  sub.set_producer_name(model.producer_name());
  sub.set_producer_version(model.producer_version());
  sub.set_domain(model.domain());
  sub.set_model_version(model.model_version());
  *sub.mutable_metadata_props() = model.metadata_props();
  *sub.mutable_functions() = model.functions();

  const GraphProto& graph = model.graph();
  GraphProto& g = *sub.mutable_graph();
  g.set_name(graph.name());

  std::vector<std::size_t> positions = piece_positions(analysis, begin, end);
  std::unordered_set<std::string> produced;
  for (std::size_t p : positions) {
    *g.add_node() = graph.node(analysis.order[p]);
    for (std::size_t index : analysis.produced_by_position[p])
      produced.insert(analysis.produced[index].name);
  }

  std::unordered_set<std::string> added_inputs, added_initializers;
  // IR < 4 requires every initializer to be listed among the graph inputs too.
  const bool initializers_are_inputs = model.ir_version() < 4;
  auto add_initializer = [&](const std::string& name) -> bool {
    if (added_initializers.count(name)) return true;
    if (auto it = analysis.initializer_index.find(name); it != analysis.initializer_index.end()) {
      const auto& tensor = graph.initializer(it->second);
      *g.add_initializer() = tensor;
      if (auto overridable = analysis.overridable_index.find(name);
          overridable != analysis.overridable_index.end()) {
        *g.add_input() = graph.input(overridable->second);  // stays overridable, as in the model
      } else if (initializers_are_inputs) {
        auto* input = g.add_input();
        input->set_name(name);
        auto* tensor_type = input->mutable_type()->mutable_tensor_type();
        tensor_type->set_elem_type(tensor.data_type());
        auto* shape = tensor_type->mutable_shape();
        for (int64_t d : tensor.dims()) shape->add_dim()->set_dim_value(d);
      }
    } else if (auto sparse = analysis.sparse_initializer_index.find(name);
               sparse != analysis.sparse_initializer_index.end()) {
      *g.add_sparse_initializer() = graph.sparse_initializer(sparse->second);
      if (auto overridable = analysis.overridable_index.find(name);
          overridable != analysis.overridable_index.end())
        *g.add_input() = graph.input(overridable->second);
    } else {
      return false;
    }
    added_initializers.insert(name);
    return true;
  };
  auto add_input = [&](const std::string& name) {
    if (!added_inputs.insert(name).second) return;
    auto* input = g.add_input();
    input->set_name(name);
    const TypeProto* type = input_type(name);
    if (!type)
      raise<UnsupportedError>(
          "cannot give tensor '{}' a type as an input of a partial model: neither the model nor "
          "shape inference says what it is",
          name);
    *input->mutable_type() = *type;
  };

  for (std::size_t p : positions)
    for (const auto& r : analysis.reads[static_cast<std::size_t>(analysis.order[p])])
      if (!produced.count(r) && !add_initializer(r)) add_input(r);

  std::unordered_set<std::string> added_outputs;
  for (const auto& name : outputs) {
    if (!added_outputs.insert(name).second) continue;
    if (!produced.count(name) && !add_initializer(name)) add_input(name);
    auto* output = g.add_output();
    output->set_name(name);
    auto it = types.find(name);
    set_value_type(*output, it == types.end() ? nullptr : it->second, /*element_type_only=*/true);
  }
  return sub;
}

}  // namespace parity::runtime::onnxrt
