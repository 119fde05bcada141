#include "parity/runtime/ref/ref_runner.h"

#include "parity/runtime/ref/interpreter.h"
#include "ref_model_check.h"

namespace parity::runtime {

RefRunner::RefRunner(ModelLoader loader, RefOptions options)
    : Runner("ref-runner"), loader_(std::move(loader)), options_(options) {}

RefRunner::~RefRunner() = default;

void RefRunner::activate_impl() {
  onnx::Model model = loader_();
  check_model_for_reference(model);
  interpreter_ = std::make_unique<Interpreter>(std::move(model), InterpreterOptions{options_.fp64, options_.limits});
}

void RefRunner::deactivate_impl() { interpreter_.reset(); }

TensorMetadata RefRunner::input_metadata_impl() { return interpreter_->input_metadata(); }

NamedTensors RefRunner::infer_impl(const NamedTensors& feed) {
  NamedValues values;
  for (const auto& [name, tensor] : feed) values.emplace_back(name, ops::Value::of(tensor));
  NamedValues results = interpreter_->run(values, intermediates_, callback_ ? &callback_ : nullptr);
  NamedTensors outputs;
  for (auto& [name, value] : results) {
    if (value.is_tensor()) outputs.emplace_back(name, value.tensor());
    else if (value.is_optional() && value.optional_value() && value.optional_value()->is_tensor())
      outputs.emplace_back(name, value.optional_value()->tensor());
    // Sequences have no tensor form; runners hand out tensors only.
  }
  return outputs;
}

}  // namespace parity::runtime
