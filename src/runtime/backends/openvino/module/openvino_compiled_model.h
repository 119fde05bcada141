// The module's CompiledModel: an ONNX model read by OpenVINO's ONNX frontend, reshaped to the
// requested bounds, with extra outputs marked, compiled for a device, and one infer request that
// runs it. Private to the module.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <openvino/openvino.hpp>

#include "openvino_backend.h"

namespace parity::runtime::openvino {

// The converted ov::Model for a request: read from the serialized ONNX bytes (external data
// relative to request.model_path), reshaped to request.input_bounds. Reusable by anything that
// needs OpenVINO's view of the model before compiling (marking, inspection).
std::shared_ptr<ov::Model> read_onnx_model(const CompileRequest& request);

// The compile-time properties a request asks for (unset ones left to OpenVINO).
ov::AnyMap compile_properties(const CompileRequest& request);

class OpenvinoCompiledModel : public CompiledModel {
 public:
  // `model`: request's model as read_onnx_model converts it (marked and compiled here).
  OpenvinoCompiledModel(ov::Core& core, const CompileRequest& request, std::shared_ptr<ov::Model> model,
                        const LogFunction& log);
  // An exported model imported again; its outputs take request.output_names in order.
  OpenvinoCompiledModel(ov::Core& core, const ImportRequest& request);

  std::vector<InputDescription> inputs() const override;
  std::string inference_precision() const override;
  std::vector<std::string> output_names() const override;
  std::vector<std::string> unmarkable_tensors() const override { return unmarkable_; }
  std::vector<OutputBuffer> infer(const std::vector<InputBuffer>& inputs, bool cancellable) override;
  void cancel() override;
  std::vector<TensorDescription> outputs() const override;
  std::string export_model() const override;
  std::vector<ExecutedLayer> executed_layers() const override;
  std::vector<LayerTiming> layer_timings() const override;
  AsyncRunResult run_async(const std::vector<std::vector<InputBuffer>>& inputs,
                           const AsyncRunRequest& request) override;  // openvino_async_requests.cpp
  std::vector<std::pair<std::string, std::string>> properties() const override;

  // The compiled model itself (its runtime model describes the executed layers).
  const ov::CompiledModel& compiled() const { return compiled_; }

 private:
  // Marks request.marked_outputs on `model` (in the type request.marked_output_precisions gives,
  // where it gives one); returns (name, index among the model's results).
  std::vector<std::pair<std::string, std::size_t>> mark_outputs(ov::Model& model, const CompileRequest& request);
  // Sets `inputs` as `request`'s input tensors, wrapping their bytes (checked against the compiled
  // inputs' types and shapes; names that are not inputs are ignored).
  void set_inputs(ov::InferRequest& request, const std::vector<InputBuffer>& inputs) const;

  ov::CompiledModel compiled_;
  ov::InferRequest request_;
  std::vector<std::pair<std::string, std::size_t>> outputs_;  // (ONNX name, compiled output index)
  std::vector<std::string> unmarkable_;
};

}  // namespace parity::runtime::openvino
