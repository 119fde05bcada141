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

namespace {

// The calibration feeds taken from a Python iterator one at a time, the GIL held for each (the
// calibration's threads ask for them while the calling thread has released it), so a generator's
// feeds are never all held.
class PythonFeedStream final : public FeedStream {
 public:
  explicit PythonFeedStream(PythonObject iterator) : iterator_(std::move(iterator)) {}

  std::optional<NamedTensors> next() override {
    nb::gil_scoped_acquire gil;
    PyObject* item = PyIter_Next(iterator_.get().ptr());
    if (item == nullptr) {
      if (PyErr_Occurred()) throw nb::python_error();
      return std::nullopt;
    }
    nb::object feed = nb::steal(item);
    return feed_from_python(feed);
  }

 private:
  PythonObject iterator_;
};

}  // namespace

void bind_quantize(nb::module_& m) {
  // feeds: called with the model's input metadata (as metadata_to_python gives it), returns an
  // iterable of the calibration feeds as native items, taken one at a time; called only when the
  // cache does not give the scales.
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
          auto batches = [&loader](const TensorMetadata& metadata) -> std::unique_ptr<FeedStream> {
            nb::gil_scoped_acquire gil;
            nb::object generated = nb::borrow(loader.get())(metadata_to_python(metadata));
            return std::make_unique<PythonFeedStream>(PythonObject(nb::iter(generated)));
          };
          quantize::quantize_model(model, options, make_runner, batches);
          result = onnx::serialize_model(*model);
        }
        return nb::bytes(result.data(), result.size());
      },
      "model"_a, "algo"_a, "percentile"_a, "keep_fp32"_a, "cache"_a, "feeds"_a);
}

}  // namespace parity::python
