// int8 quantization for the Python API (parity.quantization: Calibrator, QuantizeOnnx): a
// serialized float model in, the Q/DQ model out, through quantize::quantize_model (docs/int8.md).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "conversion.h"
#include "parity/onnx/model.h"
#include "parity/quantize/quantize_model.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"

namespace parity::python {

using namespace nb::literals;

void bind_quantize(nb::module_& m) {
  // feeds: called with the model's input metadata (as metadata_to_python gives it), returns every
  // calibration feed as native items; called only when the cache does not give the scales.
  m.def(
      "quantize_model",
      [](nb::bytes model_bytes, const std::string& algo, double percentile, std::vector<std::string> keep_fp32,
         const std::string& cache, nb::object feeds) {
        std::string bytes(model_bytes.c_str(), model_bytes.size());
        PythonObject loader(std::move(feeds));
        std::string result;
        {
          nb::gil_scoped_release release;
          onnx::Model model = onnx::load_model_from_bytes(bytes, {}, {}, "<model>");
          quantize::QuantizeOptions options;
          options.settings.algo = quantize::parse_calibration_algo(algo);
          options.settings.percentile = percentile;
          options.keep_fp32 = std::move(keep_fp32);
          options.cache = cache;
          auto make_runner = [](const onnx::Model& prepared, int intra_op_threads) -> std::unique_ptr<runtime::Runner> {
            runtime::OnnxrtOptions options;
            options.intra_op_spinning = false;  // spinning costs the calibration CPU time, changes no value
            options.intra_op_threads = intra_op_threads;
            return std::make_unique<runtime::OnnxrtRunner>([prepared] { return prepared; }, options);
          };
          auto batches = [&loader](const TensorMetadata& metadata) {
            nb::gil_scoped_acquire gil;
            nb::object generated = nb::borrow(loader.get())(metadata_to_python(metadata));
            std::vector<NamedTensors> list;
            for (nb::handle feed : generated) list.push_back(feed_from_python(feed));
            return list;
          };
          quantize::quantize_model(model, options, make_runner, batches);
          result = onnx::serialize_model(*model);
        }
        return nb::bytes(result.data(), result.size());
      },
      "model"_a, "algo"_a, "percentile"_a, "keep_fp32"_a, "cache"_a, "feeds"_a);
}

}  // namespace parity::python
