// ONNX Runtime's sessions and runner for Python (parity.backend.onnxrt).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "conversion.h"
#include "parity/core/error.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"

namespace parity::python {

using namespace nb::literals;

void bind_onnxrt_runner(nb::module_& m) {
  nb::class_<runtime::OnnxrtSession>(m, "OnnxrtSession")
      .def_prop_ro("input_metadata", [](runtime::OnnxrtSession& s) { return metadata_to_python(s.input_metadata()); })
      .def_prop_ro("output_metadata", [](runtime::OnnxrtSession& s) { return metadata_to_python(s.output_metadata()); })
      .def_prop_ro("providers", &runtime::OnnxrtSession::providers);

  nb::class_<runtime::OnnxrtOptions>(m, "OnnxrtOptions")
      .def("__init__",
           [](runtime::OnnxrtOptions* self, std::optional<std::vector<std::string>> providers, int intra, int inter,
              std::optional<std::string> level, std::string profile_prefix, std::string library,
              std::size_t intermediate_memory_budget) {
             new (self) runtime::OnnxrtOptions();
             if (providers) self->providers = *providers;
             self->intra_op_threads = intra;
             self->inter_op_threads = inter;
             if (level) self->optimization_level = runtime::ort_optimization_level_from_name(*level);
             self->profile_prefix = std::move(profile_prefix);
             self->library_path = std::move(library);
             self->intermediate_memory_budget = intermediate_memory_budget;
           },
           "providers"_a = nb::none(), "intra_op_threads"_a = 0, "inter_op_threads"_a = 0,
           "optimization_level"_a = nb::none(), "profile_prefix"_a = "", "library_path"_a = "",
           "intermediate_memory_budget"_a = std::size_t{64} << 20);  // the CLI's --ort-layerwise-budget default

  m.def("session_from_model",
        [](nb::object model, const runtime::OnnxrtOptions& options) {
          runtime::ModelLoader loader = model_loader_from(std::move(model));
          nb::gil_scoped_release release;
          return runtime::session_from_model(loader, options);
        },
        "model"_a, "options"_a);

  nb::class_<runtime::OnnxrtRunner, runtime::Runner>(m, "OnnxrtRunner")
      .def("__init__",
           [](runtime::OnnxrtRunner* self, nb::object model, const runtime::OnnxrtOptions& options) {
             new (self) runtime::OnnxrtRunner(model_loader_from(std::move(model)), options);
           },
           "model"_a, "options"_a)
      .def_static("from_session",
                  [](nb::object session_loader) {
                    runtime::SessionLoader loader;
                    if (nb::isinstance<runtime::OnnxrtSession>(session_loader)) {
                      auto session = nb::cast<std::shared_ptr<runtime::OnnxrtSession>>(session_loader);
                      loader = [session] { return session; };
                    } else {
                      PythonObject callable(std::move(session_loader));
                      loader = [callable] {
                        nb::gil_scoped_acquire gil;
                        nb::object result = nb::borrow(callable.get())();
                        if (!nb::isinstance<runtime::OnnxrtSession>(result))
                          raise<InvalidInputError>("the session loader returned no parity ONNX Runtime session");
                        return nb::cast<std::shared_ptr<runtime::OnnxrtSession>>(result);
                      };
                    }
                    return new runtime::OnnxrtRunner(std::move(loader));
                  },
                  nb::rv_policy::take_ownership);
}

}  // namespace parity::python
