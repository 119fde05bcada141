// ONNX Runtime's entry in the backend registry (parity/runtime/backend_registry.h).
#include "parity/runtime/backend_registry.h"
#include "parity/runtime/onnxrt/onnxrt_support_query.h"

namespace parity::runtime {

BackendDescriptor onnxrt_descriptor() {
  BackendDescriptor backend;
  backend.name = "onnxrt";
  backend.label = "ONNX Runtime";
  backend.make_support_query = [] { return std::make_unique<OnnxrtSupportQuery>(); };
  backend.support_query_help =
      "Ask ONNX Runtime (CPU provider): a part is supported when a session can be created for it; the node a "
      "missing kernel is reported for is named";
  backend.hybrid_fallback = true;
  return backend;
}

}  // namespace parity::runtime
