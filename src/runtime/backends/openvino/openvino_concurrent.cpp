// OpenvinoRunner::infer_concurrently and backend_properties: performance mode's asynchronous infer
// requests (the module's CompiledModel::run_async) and the compiled model's properties read back.
#include <fmt/format.h>

#include "openvino_backend.h"
#include "openvino_containment.h"
#include "parity/core/error.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::runtime {

ConcurrentInference OpenvinoRunner::infer_concurrently(const std::vector<NamedTensors>& feeds,
                                                       const ConcurrencyRequest& request) {
  if (!compiled_) raise<InternalError>("{}: infer_concurrently() before activation", name());
  std::vector<std::vector<openvino::InputBuffer>> inputs;
  for (const auto& feed : feeds) inputs.push_back(input_buffers(feed));
  if (!inputs.empty()) contain_first_inference(inputs.front());
  openvino::AsyncRunRequest async;
  async.requests = request.requests;
  async.count = request.count;
  async.seconds = request.seconds.value_or(0.0);
  openvino::AsyncRunResult run;
  try {
    run = compiled_->run_async(inputs, async);
  } catch (const openvino::BackendFailure& failure) {
    raise<Error>("{}: OpenVINO's asynchronous infer requests: {}", model_label_, failure.what());
  }
  ConcurrentInference result;
  result.requests = run.requests;
  result.latencies = std::move(run.latencies);
  result.wall_seconds = run.wall_seconds;
  result.how = fmt::format("{} OpenVINO asynchronous infer request(s){}", run.requests,
                           run.optimal ? " (the compiled model's optimal number)" : "");
  return result;
}

std::vector<std::pair<std::string, std::string>> OpenvinoRunner::backend_properties() {
  if (!compiled_) raise<InternalError>("{}: backend_properties() before activation", name());
  return compiled_->properties();
}

}  // namespace parity::runtime
