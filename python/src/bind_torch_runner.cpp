// The PyTorch runner for Python: the C++ runner whose model runs in a Python worker of another
// interpreter (parity.backend.pyt.PytWorkerRunner); PytRunner runs the same module in-process.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "parity/core/error.h"
#include "parity/runtime/torch/torch_runner.h"

namespace parity::python {

using namespace nb::literals;

void bind_torch_runner(nb::module_& m) {
  nb::class_<runtime::TorchRunner, runtime::Runner>(m, "TorchRunner")
      .def("__init__",
           [](runtime::TorchRunner* self, const std::string& kind, std::string path, std::string function,
              nb::object onnx_model, std::string device, std::string dtype, std::string dtype_mode,
              std::optional<bool> tf32, std::optional<std::string> compile_mode, std::string python,
              std::vector<std::pair<std::string, std::vector<int64_t>>> input_shapes) {
             runtime::TorchOptions options;
             if (kind == "script") {
               options.model.kind = runtime::TorchModelSource::Kind::kScript;
               options.model.function = std::move(function);
             } else if (kind == "torchscript") {
               options.model.kind = runtime::TorchModelSource::Kind::kTorchScript;
             } else if (kind == "export") {
               options.model.kind = runtime::TorchModelSource::Kind::kExport;
             } else {
               raise<InvalidInputError>("PyTorch model kind '{}': script, torchscript or export", kind);
             }
             options.model.path = std::move(path);
             options.device = std::move(device);
             options.dtype = std::move(dtype);
             options.dtype_mode = std::move(dtype_mode);
             options.tf32 = tf32;
             options.compile_mode = std::move(compile_mode);
             options.python = std::move(python);
             options.input_shapes = std::move(input_shapes);
             runtime::ModelLoader loader;
             if (!onnx_model.is_none()) loader = model_loader_from(std::move(onnx_model));
             new (self) runtime::TorchRunner(std::move(loader), std::move(options));
           },
           "kind"_a, "path"_a, "function"_a, "onnx_model"_a.none(), "device"_a, "dtype"_a, "dtype_mode"_a,
           "tf32"_a.none(), "compile_mode"_a.none(), "python"_a, "input_shapes"_a);
}

}  // namespace parity::python
