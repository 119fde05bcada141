// OpenVINO's entry in the backend registry (parity/runtime/backend_registry.h).
#include "parity/runtime/backend_registry.h"
#include "parity/runtime/openvino/openvino_support_query.h"

namespace parity::runtime {

BackendDescriptor openvino_descriptor() {
  BackendDescriptor backend;
  backend.name = "openvino";
  backend.label = "OpenVINO";
  backend.make_support_query = [] { return std::make_unique<OpenvinoSupportQuery>(); };
  backend.support_query_help = "Ask OpenVINO (its ONNX frontend and the CPU device's query_model)";
  backend.runs_compiled_files = true;
  backend.hybrid_primary = true;
  return backend;
}

}  // namespace parity::runtime
