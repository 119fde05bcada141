// The reference interpreter's runner for Python (parity.backend.ref).
#include <optional>

#include <nanobind/stl/optional.h>

#include "bindings.h"
#include "parity/core/error.h"
#include "parity/runtime/ref/ref_runner.h"

namespace parity::python {

using namespace nb::literals;

void bind_ref_runner(nb::module_& m) {
  nb::class_<runtime::RefRunner, runtime::Runner>(m, "RefRunner")
      .def("__init__",
           [](runtime::RefRunner* self, nb::object model, bool fp64, std::optional<int64_t> max_loop_iterations) {
             runtime::RefOptions options;
             options.fp64 = fp64;
             if (max_loop_iterations) {
               if (*max_loop_iterations < 1)
                 raise<InvalidInputError>("max_loop_iterations must be 1 or more, got {}", *max_loop_iterations);
               options.limits.max_loop_iterations = *max_loop_iterations;
             }
             new (self) runtime::RefRunner(model_loader_from(std::move(model)), options);
           },
           "model"_a, "fp64"_a = false, "max_loop_iterations"_a = nb::none());
}

}  // namespace parity::python
