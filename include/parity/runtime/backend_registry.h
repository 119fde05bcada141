// The backends Parity runs models on (`--ref`, `--onnxrt`, `--openvino`, `--torch`), each described once by
// a BackendDescriptor: its name, what it can do, and how to ask it which nodes it supports. Each
// backend's descriptor is defined in its folder (src/runtime/backends/<name>/<name>_descriptor.cpp)
// and listed once in src/runtime/backend_registry.cpp; the CLI (tools/parity/args/backend_args.h)
// and the Python bindings (python/src/bindings.h) keep one list each of their own parts.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "parity/runtime/capability.h"

namespace parity::runtime {

struct BackendDescriptor {
  // "onnxrt": the flag that selects it (--onnxrt) and its Python module (parity.backend.onnxrt).
  std::string name;
  // "ONNX Runtime": its name in messages.
  std::string label;
  // Asks the backend which nodes it can run (`inspect capability`, a hybrid run's partitioning);
  // empty for a backend without such a query.
  std::function<std::unique_ptr<SupportQuery>()> make_support_query;
  // What its support query asks, for the help of `inspect capability --<name>`.
  std::string support_query_help;
  // It runs model files it compiled itself (OpenVINO's compiled model files) besides ONNX models.
  bool runs_compiled_files = false;
  // It can be the primary of a hybrid run (`--fallback`): it runs the subgraphs its support query
  // accepts and hands the others to the fallback.
  bool hybrid_primary = false;
  // It can be a hybrid run's fallback, running the subgraphs the primary refuses.
  bool hybrid_fallback = false;
  // It loads a model of its own (PyTorch's module): a run may give it no ONNX model, which then
  // only tells it the inputs and output names when given.
  bool runs_without_onnx_model = false;
};

// Every backend, in the order their flags are listed (--ref, --onnxrt, --openvino, --torch).
const std::vector<BackendDescriptor>& backends();
// The backend called `name`; InternalError when there is none.
const BackendDescriptor& find_backend(std::string_view name);

}  // namespace parity::runtime
