// OnnxrtRunner::infer_concurrently: N threads calling Run on the runner's one session at once
// (ONNX Runtime's OrtApi::Run may be called concurrently on one session), each thread on its own
// feed, feeds[thread % feeds.size()].
#include <algorithm>

#include <fmt/format.h>

#include "ort_session.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"

namespace parity::runtime {

ConcurrentInference OnnxrtRunner::infer_concurrently(const std::vector<NamedTensors>& feeds,
                                                     const ConcurrencyRequest& request) {
  int requests = request.requests > 0 ? request.requests : 1;
  if (!request.seconds) requests = std::min(requests, request.count);  // no more threads than requests
  const onnxrt::Session& session = *session_->impl().session;
  ConcurrentInference result = run_on_threads(requests, request, [&](std::size_t index) {
    session.run(feeds[index % feeds.size()]);
  });
  result.how = fmt::format("{} concurrent Run call(s) on one ONNX Runtime session, one thread each{}", requests,
                           request.requests > 0 ? "" : " (one: ONNX Runtime has no preferred number)");
  return result;
}

}  // namespace parity::runtime
