// The reference interpreter's entry in the backend registry (parity/runtime/backend_registry.h).
#include "parity/runtime/backend_registry.h"

namespace parity::runtime {

BackendDescriptor ref_descriptor() {
  BackendDescriptor backend;
  backend.name = "ref";
  backend.label = "the reference interpreter";
  backend.hybrid_fallback = true;
  return backend;
}

}  // namespace parity::runtime
