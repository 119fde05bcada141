#include "parity/runtime/backend_registry.h"

#include "parity/core/error.h"

namespace parity::runtime {

// Each backend's descriptor, defined in src/runtime/backends/<name>/<name>_descriptor.cpp.
BackendDescriptor ref_descriptor();
BackendDescriptor onnxrt_descriptor();
BackendDescriptor openvino_descriptor();
BackendDescriptor torch_descriptor();

const std::vector<BackendDescriptor>& backends() {
  static const std::vector<BackendDescriptor> registry{ref_descriptor(), onnxrt_descriptor(), openvino_descriptor(),
                                                          torch_descriptor()};
  return registry;
}

const BackendDescriptor& find_backend(std::string_view name) {
  for (const auto& backend : backends())
    if (backend.name == name) return backend;
  raise<InternalError>("no backend is called '{}'", name);
}

}  // namespace parity::runtime
