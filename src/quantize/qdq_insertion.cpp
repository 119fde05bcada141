#include "parity/quantize/qdq_insertion.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/passes.h"
#include "parity/onnx/tensor_proto.h"

namespace parity::quantize {
namespace {

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// The inputs of a quantized node that are quantized (biases are not).
std::vector<int> quantized_inputs(const ::onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  if (op == "Conv" || op == "ConvTranspose" || op == "MatMul" || op == "Gemm") return {0, 1};
  return {0};  // the pooling ops
}

int64_t int_attribute(const ::onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  for (const auto& attribute : node.attribute())
    if (attribute.name() == name) return attribute.i();
  return fallback;
}

// The per-channel axis of a weight input, or -1 for per tensor.
int64_t weight_axis(const ::onnx::NodeProto& node, int input, int64_t rank) {
  const std::string& op = node.op_type();
  if (op == "Conv" && input == 1) return 0;
  if (op == "ConvTranspose" && input == 1) return int_attribute(node, "group", 1) == 1 ? 1 : -1;
  if (op == "Gemm" && input == 1) return int_attribute(node, "transB", 0) ? 0 : 1;
  if (op == "MatMul" && input == 1 && rank >= 2) return rank - 1;
  return -1;
}

class NameMaker {
 public:
  explicit NameMaker(const ::onnx::GraphProto& graph) {
    for (const auto& node : graph.node()) {
      taken_.insert(node.name());
      for (const auto& output : node.output()) taken_.insert(output);
    }
    for (const auto& input : graph.input()) taken_.insert(input.name());
    for (const auto& init : graph.initializer()) taken_.insert(init.name());
  }
  std::string make(const std::string& base) {
    std::string name = base;
    for (int i = 1; taken_.count(name); ++i) name = fmt::format("{}_{}", base, i);
    taken_.insert(name);
    return name;
  }

 private:
  std::set<std::string> taken_;
};

::onnx::TensorProto scalar_or_vector(const std::string& name, const std::vector<float>& values, bool vector) {
  Shape shape;
  if (vector) shape.push_back(static_cast<int64_t>(values.size()));
  return onnx::tensor_to_proto(Tensor::from_bytes(DType::kFloat32, shape, values.data(), values.size() * sizeof(float)),
                               name);
}

::onnx::TensorProto int8_zeros(const std::string& name, std::size_t count, bool vector) {
  Shape shape;
  if (vector) shape.push_back(static_cast<int64_t>(count));
  return onnx::tensor_to_proto(Tensor::zeros(DType::kInt8, shape), name);
}

::onnx::NodeProto qdq_node(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                           const std::string& output, int64_t axis) {
  ::onnx::NodeProto node;
  node.set_op_type(op);
  node.set_name(name);
  for (auto& input : inputs) node.add_input(input);
  node.add_output(output);
  if (axis >= 0) {
    auto* attribute = node.add_attribute();
    attribute->set_name("axis");
    attribute->set_type(::onnx::AttributeProto::INT);
    attribute->set_i(axis);
  }
  return node;
}

// Whether every input that the plan may quantize (the quantized inputs of each node of a quantized
// op type) has a known element type: an initializer's, or a value info's, a graph input's or output's.
bool quantized_inputs_typed(const ::onnx::GraphProto& graph, const std::vector<std::string>& types) {
  const auto infos = onnx::known_value_infos(graph);
  for (const auto& node : graph.node()) {
    if (!is_default_domain(node.domain()) || std::find(types.begin(), types.end(), node.op_type()) == types.end())
      continue;
    for (int input : quantized_inputs(node)) {
      if (input >= node.input_size() || node.input(input).empty()) continue;
      auto it = infos.find(node.input(input));
      if (it == infos.end() || it->second.dtype == DType::kUndefined) return false;
    }
  }
  return true;
}

}  // namespace

const std::vector<std::string>& quantized_op_types() {
  static const std::vector<std::string> types = {"Conv",    "ConvTranspose", "MatMul",           "Gemm",
                                                 "MaxPool", "AveragePool",   "GlobalAveragePool"};
  return types;
}

std::vector<const ::onnx::NodeProto*> qdq_nodes(const ::onnx::GraphProto& graph) {
  std::vector<const ::onnx::NodeProto*> nodes;
  for (const auto& node : graph.node())
    if ((node.op_type() == "QuantizeLinear" || node.op_type() == "DequantizeLinear") &&
        (is_default_domain(node.domain()) || node.domain() == "com.microsoft"))
      nodes.push_back(&node);
  return nodes;
}

QuantizationPlan plan_quantization(onnx::Model& model, onnx::PrecisionKeepList keep) {
  auto& graph = *model->mutable_graph();
  if (auto existing = qdq_nodes(graph); !existing.empty())
    raise<InvalidInputError>(
        "{} already has {} QuantizeLinear/DequantizeLinear node(s) (first: {}): it is quantized. Run it as it is, "
        "or pass --recalibrate to remove them and calibrate the float model again",
        model.path.empty() ? std::string("the model") : model.path.string(), existing.size(),
        onnx::describe_node(*existing.front()));
  if (const int64_t opset = onnx::default_opset(*model); opset < 10)
    raise<InvalidInputError>("int8 quantization needs opset 10 or later (QuantizeLinear/DequantizeLinear); {} has "
                             "opset {}",
                             model.path.empty() ? std::string("the model") : model.path.string(), opset);
  else if (opset < 13)
    log::info("int8: opset {} has no per-channel DequantizeLinear (opset 13): weights are quantized per tensor",
              opset);
  onnx::lower_constant_nodes(graph);
  const auto& types = quantized_op_types();
  // Shape inference types the tensors the plan reads; where the model's loader ran it already (as
  // `parity convert` and `run` load models), every quantizable input is typed and it is not run again.
  if (quantized_inputs_typed(graph, types))
    log::verbose("int8: the inputs of the quantizable nodes have their types already; no shape inference");
  else if (auto inference = onnx::infer_shapes(*model); !inference.ok)
    log::warning("ONNX shape inference stopped early; tensors of unknown type are not quantized.\nNote: error was: {}",
                 inference.error);
  const auto infos = onnx::known_value_infos(graph);
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) initializers.insert(init.name());
  auto is_float32 = [&](const std::string& name) {
    auto it = infos.find(name);
    return it != infos.end() && it->second.dtype == DType::kFloat32;
  };

  QuantizationPlan plan;
  std::set<std::string> planned;
  for (int index = 0; index < graph.node_size(); ++index) {
    const auto& node = graph.node(index);
    if (!is_default_domain(node.domain()) ||
        std::find(types.begin(), types.end(), node.op_type()) == types.end())
      continue;
    if (keep.matches(node)) {
      ++plan.nodes_kept;
      continue;
    }
    bool any = false;
    for (int input : quantized_inputs(node)) {
      if (input >= node.input_size() || node.input(input).empty()) continue;
      const std::string& name = node.input(input);
      if (!is_float32(name)) continue;
      any = true;
      if (!initializers.count(name) && planned.insert(name).second) plan.activations.push_back(name);
    }
    if (any) {
      plan.nodes.push_back(node.name());
      plan.node_indices.push_back(index);
    }
  }
  if (auto unmatched = keep.unmatched(); !unmatched.empty()) {
    std::vector<std::string> names;
    for (const auto* entry : unmatched) names.push_back(onnx::PrecisionKeepList::describe(*entry));
    raise<InvalidInputError>("--keep-fp32: {} matches no node", fmt::join(names, ", "));
  }
  return plan;
}

QdqReport insert_qdq(onnx::Model& model, const QuantizationPlan& plan, const std::map<std::string, float>& scales) {
  auto& graph = *model->mutable_graph();
  const bool per_channel = onnx::default_opset(*model) >= 13;
  NameMaker names(graph);
  QdqReport report;
  std::map<std::string, int> initializer_index;
  for (int i = 0; i < graph.initializer_size(); ++i) initializer_index[graph.initializer(i).name()] = i;

  std::vector<::onnx::NodeProto> added;
  // Activations: one pair each.
  std::map<std::string, std::string> dequantized;
  for (const auto& tensor : plan.activations) {
    auto it = scales.find(tensor);
    if (it == scales.end()) raise<InvalidInputError>("no int8 scale for tensor '{}' (not in the calibration cache)", tensor);
    const std::string scale = names.make(tensor + "_scale"), zero = names.make(tensor + "_zero_point");
    const std::string q = names.make(tensor + "_quantized"), dq = names.make(tensor + "_dequantized");
    *graph.add_initializer() = scalar_or_vector(scale, {it->second}, false);
    *graph.add_initializer() = int8_zeros(zero, 1, false);
    added.push_back(qdq_node("QuantizeLinear", names.make(tensor + "_QuantizeLinear"), {tensor, scale, zero}, q, -1));
    added.push_back(qdq_node("DequantizeLinear", names.make(tensor + "_DequantizeLinear"), {q, scale, zero}, dq, -1));
    dequantized[tensor] = dq;
    ++report.activation_pairs;
  }
  // Weights: int8 initializers, one per (weight, axis).
  std::map<std::pair<std::string, int64_t>, std::string> weights;
  for (int index : plan.node_indices) {
    auto& node = *graph.mutable_node(index);
    for (int input : quantized_inputs(node)) {
      if (input >= node.input_size() || node.input(input).empty()) continue;
      const std::string name = node.input(input);
      if (auto d = dequantized.find(name); d != dequantized.end()) {
        node.set_input(input, d->second);
        continue;
      }
      auto init = initializer_index.find(name);
      if (init == initializer_index.end()) continue;
      const auto& proto = graph.initializer(init->second);
      if (proto.data_type() != ::onnx::TensorProto::FLOAT) continue;
      const int64_t axis = per_channel ? weight_axis(node, input, proto.dims_size()) : -1;
      auto& made = weights[{name, axis}];
      if (made.empty()) {
        const Tensor w = onnx::tensor_from_proto(proto, model.base_dir);
        const auto& shape = w.shape();
        const int64_t channels = axis >= 0 ? shape[axis] : 1;
        int64_t inner = 1;
        for (std::size_t d = axis >= 0 ? axis + 1 : shape.size(); d < shape.size(); ++d) inner *= shape[d];
        const float* values = w.data<float>();
        std::vector<float> amax(channels, 0.0f);
        auto channel_of = [&](int64_t i) { return axis >= 0 ? (i / inner) % channels : 0; };
        for (int64_t i = 0; i < w.size(); ++i)
          if (std::isfinite(values[i])) amax[channel_of(i)] = std::max(amax[channel_of(i)], std::fabs(values[i]));
        std::vector<float> scale(channels);
        for (int64_t c = 0; c < channels; ++c) scale[c] = amax[c] > 0 ? amax[c] / 127.0f : 1.0f;
        Tensor q = Tensor::uninitialized(DType::kInt8, shape);
        auto* out = q.mutable_data<int8_t>();
        for (int64_t i = 0; i < w.size(); ++i) {
          const float r = std::nearbyint(values[i] / scale[channel_of(i)]);
          out[i] = static_cast<int8_t>(std::clamp(std::isfinite(r) ? r : 0.0f, -127.0f, 127.0f));
        }
        const std::string qname = names.make(name + "_quantized"), sname = names.make(name + "_scale"),
                          zname = names.make(name + "_zero_point");
        made = names.make(name + "_dequantized");
        *graph.add_initializer() = onnx::tensor_to_proto(q, qname);
        *graph.add_initializer() = scalar_or_vector(sname, scale, axis >= 0);
        *graph.add_initializer() = int8_zeros(zname, channels, axis >= 0);
        added.push_back(qdq_node("DequantizeLinear", names.make(name + "_DequantizeLinear"), {qname, sname, zname},
                                 made, axis));
        ++report.weights;
      }
      node.set_input(input, made);
    }
  }
  for (auto& node : added) *graph.add_node() = std::move(node);
  onnx::clear_value_info(graph);
  onnx::cleanup(graph);
  onnx::toposort(graph);
  return report;
}

}  // namespace parity::quantize
