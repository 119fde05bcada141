#include "parity/runtime/passes/fallback_shape_inference.h"

#include <memory>
#include <set>

#include "parity/core/logger.h"
#include "parity/runtime/ref/ref_runner.h"

namespace parity::runtime {
namespace {

TensorInfo info_of(const Tensor& tensor) {
  std::vector<Dim> dims;
  for (int64_t dim : tensor.shape()) dims.push_back(Dim::fixed(dim));
  return TensorInfo{tensor.dtype(), std::move(dims)};
}

void write_type(::onnx::ValueInfoProto& value, const TensorInfo& info) {
  auto* tensor_type = value.mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(static_cast<int32_t>(info.dtype));
  auto* shape = tensor_type->mutable_shape();
  shape->clear_dim();
  for (const auto& dim : *info.shape) shape->add_dim()->set_dim_value(*dim.value);
}

}  // namespace

TensorMetadata fallback_shape_inference(const onnx::Model& model, const FeedMaker& make_feed) {
  RefRunner runner([model] { return model; });
  runner.set_intermediate_outputs(IntermediateOutputs::all());
  ActiveRunner active(runner);
  NamedTensors feed = make_feed(runner.input_metadata());
  TensorMetadata fed;
  for (const auto& [name, tensor] : feed) fed.add(name, info_of(tensor));
  log::info("Running fallback shape inference using input metadata:\n{}", fed.to_string());
  NamedTensors outputs = active->infer(feed);
  TensorMetadata metadata = fed;
  for (const auto& [name, tensor] : outputs)
    if (!metadata.contains(name)) metadata.add(name, info_of(tensor));
  return metadata;
}

void set_shapes_from_metadata(::onnx::GraphProto& graph, const TensorMetadata& metadata) {
  std::set<std::string> described;
  for (auto* values : {graph.mutable_input(), graph.mutable_output()})
    for (auto& value : *values)
      if (const TensorInfo* info = metadata.find(value.name())) {
        write_type(value, *info);
        described.insert(value.name());
      }
  std::set<std::string> initializers;
  for (const auto& initializer : graph.initializer()) initializers.insert(initializer.name());
  graph.clear_value_info();
  for (const auto& node : graph.node())
    for (const auto& name : node.output()) {
      const TensorInfo* info = metadata.find(name);
      if (name.empty() || !info || described.count(name) || initializers.count(name)) continue;
      auto* value = graph.add_value_info();
      value->set_name(name);
      write_type(*value, *info);
      described.insert(name);
    }
}

}  // namespace parity::runtime
