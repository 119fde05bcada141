#include "display/parity_onnx_text.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "parity/core/values.h"
#include "parity/onnx/tensor_proto.h"
#include "parity/onnx/torch_module.h"

namespace parity::cli {
namespace {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::NodeProto;

using ValueTable = std::map<std::string, TensorInfo>;

std::string indent_lines(const std::string& text, int levels) {
  std::string pad(static_cast<std::size_t>(levels) * 4, ' ');
  std::string out = pad;
  for (char c : text) {
    out += c;
    if (c == '\n') out += pad;
  }
  return out;
}

TensorInfo info_of_initializer(const ::onnx::TensorProto& t) {
  TensorInfo info;
  info.dtype = (t.data_type() > 0 && t.data_type() <= 28) ? dtype_from_onnx(t.data_type()) : DType::kUndefined;
  std::vector<Dim> dims;
  for (int64_t d : t.dims()) dims.push_back(Dim::fixed(d));
  info.shape = std::move(dims);
  return info;
}

class ParityOnnxText {
 public:
  ParityOnnxText(const onnx::Model& model, bool layers, bool attrs, bool weights)
      : model_(model), layers_(layers), attrs_(attrs), weights_(weights) {}

  std::string model_summary() {
    const auto& proto = *model_.proto;
    std::string out;
    std::string name = proto.graph().name().empty() ? "<unnamed>" : proto.graph().name();
    out += fmt::format("Name: {} | ONNX Opset: {} | IR Version: {}", name, onnx::default_opset(proto),
                       proto.ir_version());
    if (!proto.producer_name().empty())
      out += fmt::format(" | Producer: {}{}", proto.producer_name(),
                         proto.producer_version().empty() ? "" : " " + proto.producer_version());
    std::vector<std::string> others;
    for (const auto& opset : proto.opset_import())
      if (!opset.domain().empty() && opset.domain() != "ai.onnx")
        others.push_back(fmt::format("{}: {}", opset.domain(), opset.version()));
    if (!others.empty()) out += fmt::format("\nOther Opsets: {}", fmt::join(others, ", "));
    out += "\n\n" + graph_body(proto.graph(), {}, "Graph");
    if (proto.functions_size() > 0) {
      out += fmt::format("\n\n---- {} Function(s) ----", proto.functions_size());
      for (const auto& f : proto.functions())
        out += fmt::format("\n{}.{} ({} node(s), inputs: [{}], outputs: [{}])", f.domain(), f.name(), f.node_size(),
                           fmt::join(f.input(), ", "), fmt::join(f.output(), ", "));
    }
    return out;
  }

 private:
  std::string describe(const std::string& name, const ValueTable& values) const {
    if (name.empty()) return "'' [omitted optional input]";
    auto it = values.find(name);
    return name + " " + (it == values.end() ? TensorInfo{}.to_string() : it->second.to_string());
  }

  std::string describe_list(const google::protobuf::RepeatedPtrField<std::string>& names,
                            const ValueTable& values) const {
    std::string out = "{";
    for (int i = 0; i < names.size(); ++i) {
      if (i) out += ",\n ";
      out += describe(names[i], values);
    }
    return out + "}";
  }

  // Inputs, outputs, initializers and nodes of a graph; `outer` holds outer-scope values.
  std::string graph_body(const GraphProto& graph, const ValueTable& outer, const char* kind) {
    ValueTable values = outer;
    for (const auto& t : graph.initializer()) values[t.name()] = info_of_initializer(t);
    for (const auto& v : graph.input()) values[v.name()] = onnx::tensor_info_from_type(v.type());
    for (const auto& v : graph.value_info()) values[v.name()] = onnx::tensor_info_from_type(v.type());
    for (const auto& v : graph.output()) values[v.name()] = onnx::tensor_info_from_type(v.type());

    auto inputs = onnx::graph_inputs(graph);
    auto outputs = onnx::graph_outputs(graph);
    std::string out;
    out += fmt::format("---- {} {} Input(s) ----\n{}\n\n", inputs.size(), kind, inputs.to_string());
    out += fmt::format("---- {} {} Output(s) ----\n{}\n\n", outputs.size(), kind, outputs.to_string());
    out += fmt::format("---- {} Initializer(s) ----", graph.initializer_size() + graph.sparse_initializer_size());
    if (weights_) {
      for (const auto& t : graph.initializer()) out += "\n" + weight_summary(t);
      for (const auto& s : graph.sparse_initializer())
        out += fmt::format("\nSparse Initializer | {} [dtype={}, dense shape=({})] | {} non-zero values",
                           s.values().name(), dtype_name(info_of_initializer(s.values()).dtype),
                           fmt::join(s.dims(), ", "), s.values().dims_size() ? s.values().dims(0) : 0);
    }
    out += fmt::format("\n\n---- {} Node(s) ----", graph.node_size());
    if (layers_) {
      for (int i = 0; i < graph.node_size(); ++i) out += "\n" + node_entry(i, graph.node(i), values);
    }
    return out;
  }

  std::string weight_summary(const ::onnx::TensorProto& t) const {
    auto info = info_of_initializer(t);
    std::string head = fmt::format("Initializer | {} {}", t.name(), info.to_string());
    Tensor tensor;
    try {
      tensor = onnx::tensor_values(model_, t);
    } catch (const Error& e) {
      return head + fmt::format(" | <unreadable: {}>", e.message());
    }
    if (tensor.size() == 0) return head + " | <empty>";
    if (tensor.size() <= 16) return head + " | Values: " + format_values(tensor.view(), 16);
    if (!has_numeric_values(tensor.dtype())) return head;
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    int64_t finite = 0, nan = 0, inf = 0;
    for (int64_t i = 0; i < tensor.size(); ++i) {
      double v = element_as_double(tensor.view(), i);
      if (std::isnan(v)) { ++nan; continue; }
      if (std::isinf(v)) { ++inf; continue; }
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
      ++finite;
    }
    std::string stats = finite ? fmt::format("min={:.5g}, max={:.5g}, mean={:.5g}", lo, hi, sum / finite)
                               : std::string("no finite values");
    if (nan || inf) stats += fmt::format(", {} NaN, {} Inf", nan, inf);
    return head + " | " + stats;
  }

  std::string attribute_value(const AttributeProto& a, const ValueTable& values, const std::string& owner) {
    switch (a.type()) {
      case AttributeProto::FLOAT: return fmt::format("{}", a.f());
      case AttributeProto::INT: return std::to_string(a.i());
      case AttributeProto::STRING: return fmt::format("'{}'", a.s());
      case AttributeProto::INTS: return fmt::format("[{}]", fmt::join(a.ints(), ", "));
      case AttributeProto::FLOATS: return fmt::format("[{}]", fmt::join(a.floats(), ", "));
      case AttributeProto::STRINGS: {
        std::vector<std::string> quoted;
        for (const auto& s : a.strings()) quoted.push_back("'" + s + "'");
        return fmt::format("[{}]", fmt::join(quoted, ", "));
      }
      case AttributeProto::TENSOR: {
        auto info = info_of_initializer(a.t());
        std::string text = "Tensor " + info.to_string();
        try {
          Tensor t = onnx::tensor_values(model_, a.t());
          if (t.size() <= 16) text += " | Values: " + format_values(t.view(), 16);
        } catch (const Error& e) {
          text += fmt::format(" | <unreadable: {}>", e.message());
        }
        return text;
      }
      case AttributeProto::TENSORS: return fmt::format("<{} tensors>", a.tensors_size());
      case AttributeProto::SPARSE_TENSOR: return "Sparse Tensor";
      case AttributeProto::SPARSE_TENSORS: return fmt::format("<{} sparse tensors>", a.sparse_tensors_size());
      case AttributeProto::TYPE_PROTO: return "Type " + onnx::tensor_info_from_type(a.tp()).to_string();
      case AttributeProto::TYPE_PROTOS: return fmt::format("<{} types>", a.type_protos_size());
      case AttributeProto::GRAPH: return fmt::format("<graph '{}'>", a.g().name());
      case AttributeProto::GRAPHS: return fmt::format("<{} graphs>", a.graphs_size());
      default:
        if (!a.ref_attr_name().empty()) return fmt::format("<ref to function attribute '{}'>", a.ref_attr_name());
        return "<undefined>";
    }
  }

  std::string node_entry(int index, const NodeProto& node, const ValueTable& values) {
    std::string op = node.domain().empty() || node.domain() == "ai.onnx" ? node.op_type()
                                                                          : node.domain() + "." + node.op_type();
    const auto module = onnx::torch_module(node);
    std::string out = fmt::format("Node {:<4} | {} [Op: {}]{}\n", index, node.name(), op,
                                  module ? " (module " + *module + ")" : std::string());
    std::string io = describe_list(node.input(), values) + "\n -> " + describe_list(node.output(), values);
    out += indent_lines(io, 1);
    const std::string owner = node.name().empty() ? node.op_type() : node.name();
    bool has_plain_attrs = std::any_of(node.attribute().begin(), node.attribute().end(), [](const auto& a) {
      return a.type() != AttributeProto::GRAPH && a.type() != AttributeProto::GRAPHS;
    });
    if (attrs_ && has_plain_attrs) {
      std::string block = "---- Attributes ----";
      for (const auto& a : node.attribute()) {
        if (a.type() == AttributeProto::GRAPH || a.type() == AttributeProto::GRAPHS) continue;
        block += fmt::format("\n{}.{} = {}", owner, a.name(), attribute_value(a, values, owner));
      }
      out += "\n" + indent_lines(block, 1);
    }
    for (const auto& a : node.attribute()) {  // subgraphs, always shown under their node
      std::vector<const GraphProto*> graphs;
      if (a.has_g()) graphs.push_back(&a.g());
      for (const auto& g : a.graphs()) graphs.push_back(&g);
      for (const auto* g : graphs) {
        std::string header = fmt::format("---- Subgraph: {}.{} ({}) ----", owner, a.name(),
                                         g->name().empty() ? "<unnamed>" : g->name());
        out += "\n" + indent_lines(header, 1) + "\n" + indent_lines(graph_body(*g, values, "Subgraph"), 2);
      }
    }
    return out;
  }

  const onnx::Model& model_;
  bool layers_, attrs_, weights_;
};

}  // namespace

std::string parity_onnx_text(const onnx::Model& model, const OnnxTextOptions& options) {
  return ParityOnnxText(model, options.show_layers, options.show_attrs, options.show_weights).model_summary();
}

}  // namespace parity::cli
