#include "parity/quantize/qdq_removal.h"

#include <map>
#include <optional>
#include <set>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/passes.h"
#include "parity/onnx/tensor_proto.h"
#include "parity/quantize/qdq_insertion.h"

namespace parity::quantize {
namespace {

int64_t axis_of(const ::onnx::NodeProto& node, int64_t rank) {
  int64_t axis = 1;  // DequantizeLinear's default
  for (const auto& attribute : node.attribute())
    if (attribute.name() == "axis") axis = attribute.i();
  return axis < 0 ? axis + rank : axis;
}

double element(const Tensor& tensor, int64_t i) {
  switch (tensor.dtype()) {
    case DType::kInt8: return tensor.data<int8_t>()[i];
    case DType::kUInt8: return tensor.data<uint8_t>()[i];
    case DType::kInt32: return tensor.data<int32_t>()[i];
    case DType::kFloat32: return tensor.data<float>()[i];
    default: raise<InvalidInputError>("--recalibrate: cannot dequantize a {} tensor", dtype_name(tensor.dtype()));
  }
}

Tensor dequantize(const Tensor& q, const Tensor& scale, const Tensor* zero, int64_t axis) {
  Tensor out = Tensor::uninitialized(DType::kFloat32, q.shape());
  const bool per_axis = scale.size() > 1 || scale.rank() == 1;
  int64_t inner = 1, channels = 1;
  if (per_axis) {
    channels = q.shape()[axis];
    for (std::size_t d = axis + 1; d < q.shape().size(); ++d) inner *= q.shape()[d];
  }
  auto* values = out.mutable_data<float>();
  for (int64_t i = 0; i < q.size(); ++i) {
    const int64_t c = per_axis ? (i / inner) % channels : 0;
    const double zp = zero ? element(*zero, c) : 0.0;
    values[i] = static_cast<float>((element(q, i) - zp) * element(scale, c));
  }
  return out;
}

}  // namespace

QdqRemovalReport remove_qdq(onnx::Model& model) {
  auto& graph = *model->mutable_graph();
  onnx::toposort(graph);  // each QuantizeLinear before the DequantizeLinear reading it
  std::map<std::string, int> initializers;
  for (int i = 0; i < graph.initializer_size(); ++i) initializers[graph.initializer(i).name()] = i;
  std::map<std::string, std::vector<const ::onnx::NodeProto*>> readers;
  for (const auto& node : graph.node())
    for (const auto& input : node.input()) readers[input].push_back(&node);
  std::set<std::string> outputs;
  for (const auto& output : graph.output()) outputs.insert(output.name());

  QdqRemovalReport report;
  std::set<const ::onnx::NodeProto*> removed;
  std::map<std::string, std::string> renamed;  // DQ output -> the float tensor it stands for
  std::vector<::onnx::TensorProto> weights;
  for (const ::onnx::NodeProto* node : qdq_nodes(graph)) {
    if (removed.count(node)) continue;
    for (const auto& output : node->output())
      if (outputs.count(output))
        raise<InvalidInputError>("--recalibrate: {} writes the graph output '{}'; cannot remove it",
                                 onnx::describe_node(*node), output);
    if (node->op_type() == "DequantizeLinear" && initializers.count(node->input(0))) {
      auto load = [&](int input) -> std::optional<Tensor> {
        if (input >= node->input_size() || node->input(input).empty()) return std::nullopt;
        auto it = initializers.find(node->input(input));
        if (it == initializers.end())
          raise<InvalidInputError>("--recalibrate: {} reads the computed tensor '{}'", onnx::describe_node(*node),
                                   node->input(input));
        return onnx::tensor_from_proto(graph.initializer(it->second), model.base_dir);
      };
      const Tensor q = *load(0);
      const Tensor scale = *load(1);
      const auto zero = load(2);
      weights.push_back(onnx::tensor_to_proto(dequantize(q, scale, zero ? &*zero : nullptr, axis_of(*node, q.rank())),
                                              node->output(0)));
      removed.insert(node);
      ++report.weights;
      continue;
    }
    if (node->op_type() == "QuantizeLinear") {
      for (const auto* reader : readers[node->output(0)]) {
        if (reader->op_type() != "DequantizeLinear")
          raise<InvalidInputError>("--recalibrate: {} is read by {}, not by a DequantizeLinear; cannot remove it",
                                   onnx::describe_node(*node), onnx::describe_node(*reader));
        renamed[reader->output(0)] = node->input(0);
        removed.insert(reader);
      }
      removed.insert(node);
      ++report.activation_pairs;
      continue;
    }
    raise<InvalidInputError>("--recalibrate: {} dequantizes the computed tensor '{}' with no QuantizeLinear before "
                             "it; cannot remove it",
                             onnx::describe_node(*node), node->input(0));
  }
  ::google::protobuf::RepeatedPtrField<::onnx::NodeProto> kept;
  for (const auto& node : graph.node())
    if (!removed.count(&node)) *kept.Add() = node;
  graph.mutable_node()->Swap(&kept);
  for (auto& node : *graph.mutable_node())
    for (int i = 0; i < node.input_size(); ++i)
      if (auto it = renamed.find(node.input(i)); it != renamed.end()) node.set_input(i, it->second);
  for (auto& weight : weights) *graph.add_initializer() = std::move(weight);
  onnx::clear_value_info(graph);
  onnx::cleanup(graph);
  log::info("--recalibrate: removed {} activation Q/DQ pair(s) and dequantized {} weight(s) to float32",
            report.activation_pairs, report.weights);
  return report;
}

}  // namespace parity::quantize
