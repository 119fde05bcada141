// OpenVINO's runner for Python (parity.backend.openvino).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "parity/core/error.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::python {

using namespace nb::literals;

void bind_openvino_runner(nb::module_& m) {
  nb::class_<runtime::OpenvinoRunner, runtime::Runner>(m, "OpenvinoRunner")
      .def("__init__",
           [](runtime::OpenvinoRunner* self, nb::object model, std::optional<std::string> precision,
              std::optional<int> threads, std::optional<std::string> hint, std::optional<std::string> cache_dir,
              std::optional<int> streams) {
             runtime::OpenvinoOptions options;
             if (precision) runtime::check_openvino_precision(*precision);
             options.precision = precision;
             options.threads = threads;
             if (hint) options.performance_hint = runtime::openvino_performance_hint(*hint);
             options.cache_dir = cache_dir;
             if (streams && *streams < 1)
               raise<InvalidInputError>("OpenVINORunner: streams must be at least 1, got {}", *streams);
             options.streams = streams;
             new (self) runtime::OpenvinoRunner(model_loader_from(std::move(model)), std::move(options));
           },
           "model"_a, "precision"_a = nb::none(), "threads"_a = nb::none(), "performance_hint"_a = nb::none(),
           "cache_dir"_a = nb::none(), "streams"_a = nb::none())
      .def_prop_ro("inference_precision", &runtime::OpenvinoRunner::inference_precision);
}

}  // namespace parity::python
