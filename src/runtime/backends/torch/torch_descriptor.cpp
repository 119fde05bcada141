// The PyTorch runner's entry in the backend registry (parity/runtime/backend_registry.h).
#include "parity/runtime/backend_registry.h"

namespace parity::runtime {

BackendDescriptor torch_descriptor() {
  BackendDescriptor backend;
  backend.name = "torch";
  backend.label = "PyTorch";
  backend.runs_without_onnx_model = true;
  return backend;
}

}  // namespace parity::runtime
