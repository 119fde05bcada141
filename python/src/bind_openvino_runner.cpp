// OpenVINO's runner for Python (parity.backend.openvino).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "parity/core/error.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::python {

using namespace nb::literals;

namespace {

using NamedShapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// OpenVINORunner(min_shapes=..., max_shapes=...) as --ov-min-shapes/--ov-max-shapes give them.
TensorMetadata bounds_metadata(const NamedShapes& shapes) {
  TensorMetadata metadata;
  for (const auto& [name, dims] : shapes) {
    std::vector<Dim> shape;
    for (int64_t dim : dims) shape.push_back(Dim::fixed(dim));
    metadata.add(name, DType::kUndefined, std::move(shape));
  }
  return metadata;
}

}  // namespace

void bind_openvino_runner(nb::module_& m) {
  nb::class_<runtime::OpenvinoRunner, runtime::Runner>(m, "OpenvinoRunner")
      .def("__init__",
           [](runtime::OpenvinoRunner* self, nb::object model, std::optional<std::string> precision,
              std::optional<int> threads, std::optional<std::string> hint, std::optional<std::string> cache_dir,
              std::optional<int> streams, NamedShapes min_shapes, NamedShapes max_shapes) {
             runtime::OpenvinoOptions options;
             if (precision) runtime::check_openvino_precision(*precision);
             options.precision = precision;
             options.threads = threads;
             if (hint) options.performance_hint = runtime::openvino_performance_hint(*hint);
             options.cache_dir = cache_dir;
             if (streams && *streams < 1)
               raise<InvalidInputError>("OpenVINORunner: streams must be at least 1, got {}", *streams);
             options.streams = streams;
             options.min_shapes = bounds_metadata(min_shapes);
             options.max_shapes = bounds_metadata(max_shapes);
             new (self) runtime::OpenvinoRunner(model_loader_from(std::move(model)), std::move(options));
           },
           "model"_a, "precision"_a = nb::none(), "threads"_a = nb::none(), "performance_hint"_a = nb::none(),
           "cache_dir"_a = nb::none(), "streams"_a = nb::none(),
           "min_shapes"_a = NamedShapes(), "max_shapes"_a = NamedShapes())
      .def_prop_ro("inference_precision", &runtime::OpenvinoRunner::inference_precision);
}

}  // namespace parity::python
