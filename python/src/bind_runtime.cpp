// Runners, model loaders and the data loader for Python (parity._parity): the Runner interface, each
// backend's runner classes (bind_<name>_runner.cpp, for every backend of the registry), and an
// adapter that lets a runner written in Python take part in Comparator::run.
#include <signal.h>

#include <map>
#include <thread>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "conversion.h"
#include "parity/core/error.h"
#include "parity/core/interrupt.h"
#include "parity/runtime/backend_registry.h"
#include "parity/runtime/data_loader.h"
#include "parity/runtime/loader.h"

namespace parity::python {

using namespace nb::literals;

runtime::ModelLoader model_loader_from(nb::object source) {
  if (nb::isinstance<nb::str>(source)) return runtime::ModelFromPath(nb::cast<std::string>(source));
  if (nb::isinstance<nb::tuple>(source)) {
    auto [path, external_data_dir] = nb::cast<std::pair<std::string, std::string>>(source);
    onnx::LoadOptions options;
    options.external_data_dir = external_data_dir;
    return runtime::ModelFromPath(std::move(path), options);
  }
  if (nb::isinstance<nb::bytes>(source)) {
    auto bytes = std::make_shared<std::string>(bytes_of(source));
    return [bytes] { return onnx::load_model_from_bytes(*bytes, {}, {}, "<bytes>"); };
  }
  if (!PyCallable_Check(source.ptr())) raise<InvalidInputError>("a model must be a path, bytes or a callable");
  PythonObject callable(std::move(source));
  return [callable]() -> onnx::Model {
    std::string path, bytes;
    {
      nb::gil_scoped_acquire gil;
      nb::object result = nb::borrow(callable.get())();
      if (nb::isinstance<nb::str>(result)) path = nb::cast<std::string>(result);
      else if (nb::isinstance<nb::bytes>(result)) bytes = bytes_of(result);
      else raise<InvalidInputError>("the model loader returned neither a path nor serialized model bytes");
    }
    if (!path.empty()) return onnx::load_model(path);
    return onnx::load_model_from_bytes(bytes, {}, {}, "<bytes>");
  };
}

namespace {

// A Python runner (parity.backend.base.BaseRunner subclass) as a C++ runner, for Comparator::run.
// BaseRunner makes one when it names itself (prefix "Runner" -> "Runner-N0-<time>", the C++
// runners' naming), owned by the Python runner and holding it without a reference (no cycle).
// Comparator.run makes a temporary one, holding a reference, for a runner that has none (a
// user-given name, or a subclass that skipped BaseRunner.__init__): its C++ name is then
// "<python name>-N<k>-<time>" in the log lines, and the results get the Python name.
class PythonRunner final : public runtime::Runner {
 public:
  PythonRunner(nb::object runner, const std::string& prefix)
      : Runner(prefix), runner_(runner), owner_(std::move(runner)) {}
  PythonRunner(nb::handle runner, const std::string& prefix, bool /*borrowed*/) : Runner(prefix), runner_(runner) {}

 protected:
  void activate_impl() override {
    nb::gil_scoped_acquire gil;
    call("activate");
  }
  void deactivate_impl() override {
    nb::gil_scoped_acquire gil;
    call("deactivate");
  }
  TensorMetadata input_metadata_impl() override {
    nb::gil_scoped_acquire gil;
    nb::object metadata = call("get_input_metadata");
    return metadata_from_python(nb::module_::import_("parity.common").attr("_metadata_entries")(metadata));
  }
  NamedTensors infer_impl(const NamedTensors& feed) override {
    nb::gil_scoped_acquire gil;
    nb::object outputs = nb::borrow(runner_).attr("infer")(dict_from_tensors(feed), "check_inputs"_a = false);
    return feed_from_dict(outputs, "output");
  }

 private:
  // A Python exception raised by the runner reaches the caller of Comparator.run unchanged.
  nb::object call(const char* method) { return nb::borrow(runner_).attr(method)(); }
  nb::handle runner_;
  PythonObject owner_;  // empty when the Python runner owns this adapter
};

// An output that points into a feed's memory (an Identity, a reshape the backend did in place) is
// copied, so that an array Parity returned never changes when the caller later writes its inputs.
void copy_outputs_aliasing_feed(NamedTensors& outputs, const NamedTensors& feed) {
  for (auto& [name, output] : outputs) {
    auto* begin = static_cast<const std::byte*>(output.raw());
    if (begin == nullptr || output.dtype() == DType::kString) continue;
    const std::byte* end = begin + output.byte_size();
    for (const auto& [input_name, input] : feed) {
      auto* input_begin = static_cast<const std::byte*>(input.raw());
      if (input_begin == nullptr) continue;
      if (begin < input_begin + input.byte_size() && input_begin < end) {
        output = Tensor::copy_of(output.view());
        break;
      }
    }
  }
}

// (name, address, bytes) of the buffers the last Runner.infer returned (parity's tests check with
// them that the arrays are those buffers, not copies).
std::vector<std::tuple<std::string, uintptr_t, std::size_t>>& last_output_buffers() {
  static std::vector<std::tuple<std::string, uintptr_t, std::size_t>> buffers;
  return buffers;
}

void record_output_buffers(const NamedTensors& outputs) {
  auto& buffers = last_output_buffers();
  buffers.clear();
  for (const auto& [name, tensor] : outputs)
    buffers.emplace_back(name, reinterpret_cast<uintptr_t>(tensor.raw()), tensor.byte_size());
}

}  // namespace

runtime::Runner* python_runner_adapter(nb::object runner, const std::string& name) {
  return new PythonRunner(std::move(runner), name);
}

namespace {

// While a Runner.infer runs with the GIL released, Python's own SIGINT handler only marks the
// signal for later. On the main thread (where Python runs signal handlers), this puts a handler
// in front of it for the inference: it requests an interrupt (the reference interpreter stops
// before its next node) and calls Python's handler, whose KeyboardInterrupt is raised when infer
// returns. A SIGINT disposition that is not a plain handler (SIG_DFL, SIG_IGN) is left alone.
struct sigaction python_sigint{};

void interrupt_then_python_handler(int signal_number) {
  request_interrupt();
  python_sigint.sa_handler(signal_number);
}

// Modules are imported on the main thread, where Python handles signals.
std::thread::id python_main_thread;

}  // namespace

SigintInterruptsInference::SigintInterruptsInference() {
  if (std::this_thread::get_id() != python_main_thread) return;
  struct sigaction current {};
  if (::sigaction(SIGINT, nullptr, &current) != 0 || (current.sa_flags & SA_SIGINFO) ||
      current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN)
    return;
  python_sigint = current;
  clear_interrupt();
  struct sigaction action = current;
  action.sa_handler = interrupt_then_python_handler;
  installed_ = ::sigaction(SIGINT, &action, nullptr) == 0;
}

// Restores Python's handler; a request this inference did not act on (a backend that does not
// check) must not stop a later computation.
SigintInterruptsInference::~SigintInterruptsInference() {
  if (!installed_) return;
  ::sigaction(SIGINT, &python_sigint, nullptr);
  clear_interrupt();
}

void bind_runtime(nb::module_& m) {
  python_main_thread = std::this_thread::get_id();
  enable_interrupt_watches();
  m.def("last_output_buffers", [] { return last_output_buffers(); });
  nb::class_<runtime::Runner>(m, "Runner")
      .def_prop_rw("name", &runtime::Runner::name,
                   [](runtime::Runner& runner, std::string name) { runner.set_name(std::move(name)); })
      .def("activate", &runtime::Runner::activate, nb::call_guard<nb::gil_scoped_release>())
      .def("deactivate", &runtime::Runner::deactivate, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("is_active", &runtime::Runner::is_active)
      .def("input_metadata",
           [](runtime::Runner& runner) {
             TensorMetadata metadata;
             {
               nb::gil_scoped_release release;
               metadata = runner.input_metadata();
             }
             return metadata_to_python(metadata);
           })
      .def("infer",
           [](runtime::Runner& runner, nb::handle feed_dict) {
             NamedTensors feed = feed_from_dict(feed_dict, "input");
             NamedTensors outputs;
             try {
               SigintInterruptsInference sigint;
               nb::gil_scoped_release release;
               outputs = runner.infer(feed);
               copy_outputs_aliasing_feed(outputs, feed);
               feed.clear();  // the feed's arrays are released under the GIL by their storages
             } catch (const InterruptedError&) {
               // Python's handler raises KeyboardInterrupt (or what the user's handler raises).
               if (PyErr_CheckSignals() != 0) throw nb::python_error();
               throw;
             }
             record_output_buffers(outputs);
             return dict_from_tensors(outputs);
           },
           "feed_dict"_a)
      .def_prop_ro("last_inference_time", &runtime::Runner::last_inference_time)
      .def("set_intermediate_outputs",
           [](runtime::Runner& runner, std::optional<std::vector<std::string>> names, bool all) {
             runner.set_intermediate_outputs(all ? runtime::IntermediateOutputs::all()
                                                 : names ? runtime::IntermediateOutputs::list(*names)
                                                         : runtime::IntermediateOutputs::none());
           },
           "names"_a = nb::none(), "all"_a = false);

  nb::class_<PythonRunner, runtime::Runner>(m, "PythonRunnerAdapter")
      .def("__init__",
           [](PythonRunner* self, nb::handle runner, const std::string& prefix) {
             new (self) PythonRunner(runner, prefix, true);
           },
           "runner"_a, "prefix"_a);

  // Each backend's runner classes (python/src/bind_<name>_runner.cpp), by its registry name.
  const std::map<std::string, void (*)(nb::module_&)> bind_backend{
      {"ref", bind_ref_runner},
      {"onnxrt", bind_onnxrt_runner},
      {"openvino", bind_openvino_runner},
      {"torch", bind_torch_runner}};
  for (const auto& backend : runtime::backends()) {
    auto bind = bind_backend.find(backend.name);
    if (bind == bind_backend.end()) raise<InternalError>("the backend '{}' has no Python bindings", backend.name);
    bind->second(m);
  }

  nb::class_<runtime::DataLoader>(m, "DataLoader")
      .def("__init__",
           [](runtime::DataLoader* self, uint32_t seed, int iterations,
              std::vector<std::pair<std::string, std::pair<double, double>>> val_ranges,
              std::vector<std::pair<std::string, std::vector<int64_t>>> input_shapes, std::string backend_module) {
             runtime::DataLoaderOptions options;
             options.backend_module = std::move(backend_module);
             options.seed = seed;
             options.iterations = iterations;
             options.val_ranges = std::move(val_ranges);
             options.input_shapes = std::move(input_shapes);
             new (self) runtime::DataLoader(std::move(options));
           },
           "seed"_a, "iterations"_a, "val_ranges"_a, "input_shapes"_a, "backend_module"_a = "numpy")
      .def("generate",
           [](const runtime::DataLoader& loader, nb::handle metadata_entries, int iteration) {
             TensorMetadata metadata = metadata_from_python(metadata_entries);
             NamedTensors feed;
             {
               nb::gil_scoped_release release;
               feed = loader.generate(metadata, iteration);
             }
             return dict_from_tensors(feed);
           },
           "metadata"_a, "iteration"_a);
}

}  // namespace parity::python
