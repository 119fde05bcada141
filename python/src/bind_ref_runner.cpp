// The reference interpreter's runner for Python (parity.backend.ref).
#include "bindings.h"
#include "parity/runtime/ref/ref_runner.h"

namespace parity::python {

using namespace nb::literals;

void bind_ref_runner(nb::module_& m) {
  nb::class_<runtime::RefRunner, runtime::Runner>(m, "RefRunner")
      .def("__init__",
           [](runtime::RefRunner* self, nb::object model, bool fp64) {
             runtime::RefOptions options;
             options.fp64 = fp64;
             new (self) runtime::RefRunner(model_loader_from(std::move(model)), options);
           },
           "model"_a, "fp64"_a = false);
}

}  // namespace parity::python
