// ONNX Runtime's symbolic shape inference through its Python tool, and Polygraphy's fallback to
// ONNX's shape inference.
#include "parity/runtime/onnxrt/symbolic_shape_inference.h"

#include <stdlib.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <fmt/ranges.h>

#include "ort_library_search.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/core/process.h"
#include "parity/core/python_interpreter.h"
#include "parity/core/temporary_folder.h"
#include "parity/runtime/python_worker.h"

namespace parity::runtime {
namespace {

namespace fs = std::filesystem;

// The command of the Python worker (parity/runtime/python_worker.h) that serves every inference of
// a command: "infer_shapes" with the model, where to write the result, and the working folder (the
// tool saves "sym_shape_infer_temp.onnx" there when inference stays incomplete); a failure's
// traceback is the one reported. The result keeps its tensors in an external file, which is never
// read back: only its types are. The tool's own prints go to the worker's standard error.
// The tool's file is loaded by its path inside the onnxruntime package, not imported as
// onnxruntime.tools.symbolic_shape_infer: that import runs onnxruntime/__init__.py (the runtime
// itself) and onnxruntime/tools/__init__.py, which imports torch when it is installed, about 1.5 s
// of the 2 s a start took; the tool needs only onnx, numpy, sympy and packaging.
constexpr const char* kSymbolicShapeInferenceCommands = R"PY(
try:
    import importlib.util
    package = importlib.util.find_spec("onnxruntime")
    if package is None or not package.submodule_search_locations:
        raise ImportError("this Python has no onnxruntime package")
    tool = os.path.join(list(package.submodule_search_locations)[0], "tools", "symbolic_shape_infer.py")
    spec = importlib.util.spec_from_file_location("symbolic_shape_infer", tool)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    SymbolicShapeInference = module.SymbolicShapeInference
    import onnx
    setup_error = None
except BaseException:
    setup_error = traceback.format_exc()

@command("infer_shapes")
def infer_shapes(arguments, tensors):
    if setup_error is not None:
        raise CommandFailed(setup_error)
    try:
        os.chdir(arguments["folder"])
        inferred = SymbolicShapeInference.infer_shapes(onnx.load(arguments["model"]), auto_merge=True)
        if inferred is None:
            raise RuntimeError("SymbolicShapeInference.infer_shapes returned no model")
        onnx.save_model(inferred, arguments["output"], save_as_external_data=True, all_tensors_to_one_file=True,
                        location="inferred.onnx.data", size_threshold=0)
    finally:
        os.chdir("/")
)PY";

// One worker per interpreter for the life of the process; a worker that ended stays as its reason,
// so a Python that cannot serve is not started again for every inference.
class Workers {
 public:
  static Workers& instance() {
    static Workers workers;
    return workers;
  }

  // Starts the worker of `python` unless it runs or could not serve: its interpreter and imports
  // then get going while the caller goes on (the worker's constructor does not wait for it).
  void start(const std::string& python) {
    std::lock_guard lock(mutex_);
    started(python);
  }

  // "" when the model was inferred, else why not (a failure's traceback).
  std::string infer(const std::string& python, const nlohmann::json& request) {
    std::lock_guard lock(mutex_);
    try {
      PythonWorker* worker = started(python);
      if (!worker) return failures_[python];
      worker->call("infer_shapes", request);
    } catch (const PythonCommandError& error) {
      return error.traceback();
    } catch (const Error& error) {
      return failures_[python] = error.what();
    }
    return "";
  }

 private:
  // The running worker of `python`; nullptr when it could not be started or has ended (the reason
  // in failures_).
  PythonWorker* started(const std::string& python) {
    if (failures_.contains(python)) return nullptr;
    auto& worker = workers_[python];
    if (!worker) {
      try {
        worker = std::make_unique<PythonWorker>(PythonWorkerOptions{"ONNX Runtime's symbolic shape inference",
                                                                    python, kSymbolicShapeInferenceCommands, {}});
      } catch (const ProcessStartError& error) {
        failures_[python] = fmt::format("could not start that Python: {}", std::strerror(error.error_number()));
        return nullptr;
      } catch (const Error& error) {
        failures_[python] = error.what();
        return nullptr;
      }
    }
    return worker.get();
  }

  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<PythonWorker>> workers_;
  std::map<std::string, std::string> failures_;
};

// The interpreter whose onnxruntime package has the library, else nullopt with every Python looked
// at and why it did not do in `outcome`.
std::optional<std::string> python_with_onnxruntime(std::string& outcome) {
  std::vector<std::string> looked_at;
  for (const auto& step : onnxrt::search_onnxruntime_python()) {
    if (step.found.library) return step.found.interpreter;
    looked_at.push_back(fmt::format("{} ({})", step.where, step.found.outcome));
  }
  outcome = fmt::format("no Python with the onnxruntime package; looked at: {}", fmt::join(looked_at, "; "));
  return std::nullopt;
}

// Whether `inferred` (what the tool wrote) is `target`'s graph: the same inputs, outputs and
// nodes (op types and subgraph attributes), subgraphs included.
bool same_graph(const ::onnx::GraphProto& target, const ::onnx::GraphProto& inferred) {
  if (target.node_size() != inferred.node_size() || target.input_size() != inferred.input_size() ||
      target.output_size() != inferred.output_size())
    return false;
  for (int i = 0; i < target.input_size(); ++i)
    if (target.input(i).name() != inferred.input(i).name()) return false;
  for (int i = 0; i < target.output_size(); ++i)
    if (target.output(i).name() != inferred.output(i).name()) return false;
  for (int i = 0; i < target.node_size(); ++i) {
    const auto& node = target.node(i);
    const auto& inferred_node = inferred.node(i);
    if (node.op_type() != inferred_node.op_type() || node.attribute_size() != inferred_node.attribute_size())
      return false;
    for (int a = 0; a < node.attribute_size(); ++a) {
      const auto& attribute = node.attribute(a);
      const auto& inferred_attribute = inferred_node.attribute(a);
      if (attribute.has_g() != inferred_attribute.has_g() ||
          attribute.graphs_size() != inferred_attribute.graphs_size())
        return false;
      if (attribute.has_g() && !same_graph(attribute.g(), inferred_attribute.g())) return false;
      for (int g = 0; g < attribute.graphs_size(); ++g)
        if (!same_graph(attribute.graphs(g), inferred_attribute.graphs(g))) return false;
    }
  }
  return true;
}

// Copies the inferred types of `inferred` (same_graph as `target`) into `target`: value_info
// replaced, graph inputs' and outputs' types, and the same in every subgraph.
void copy_inferred_types(::onnx::GraphProto& target, const ::onnx::GraphProto& inferred) {
  *target.mutable_value_info() = inferred.value_info();
  for (int i = 0; i < target.input_size(); ++i) *target.mutable_input(i)->mutable_type() = inferred.input(i).type();
  for (int i = 0; i < target.output_size(); ++i)
    *target.mutable_output(i)->mutable_type() = inferred.output(i).type();
  for (int i = 0; i < target.node_size(); ++i) {
    auto& node = *target.mutable_node(i);
    for (int a = 0; a < node.attribute_size(); ++a) {
      auto& attribute = *node.mutable_attribute(a);
      const auto& inferred_attribute = inferred.node(i).attribute(a);
      if (attribute.has_g()) copy_inferred_types(*attribute.mutable_g(), inferred_attribute.g());
      for (int g = 0; g < attribute.graphs_size(); ++g)
        copy_inferred_types(*attribute.mutable_graphs(g), inferred_attribute.graphs(g));
    }
  }
}

}  // namespace

std::string infer_shapes_with_onnxruntime(onnx::Model& model) {
  if (model.external_data_ignored) return "the model was loaded without its external data";
  std::string outcome;
  auto python = python_with_onnxruntime(outcome);
  if (!python) return outcome;
  try {
    Workers::instance().start(*python);  // its start overlaps the writing of the model
    TemporaryFolder folder("parity-symbolic-shapes", "ONNX Runtime's symbolic shape inference");
    fs::path input = folder.path() / "model.onnx", output = folder.path() / "inferred.onnx";
    onnx::save_model(model, input);
    log::verbose("Running ONNX Runtime's symbolic shape inference (onnxruntime.tools.symbolic_shape_infer, "
                 "auto_merge=True) with {}",
                 *python);
    outcome = Workers::instance().infer(*python, {{"model", input.string()},
                                                  {"output", output.string()},
                                                  {"folder", folder.path().string()}});
    if (!outcome.empty()) return outcome;
    onnx::LoadOptions options;
    options.ignore_external_data = true;  // only the types are read back
    options.check_dims_and_data = false;
    onnx::Model inferred = onnx::load_model(output, options);
    if (!same_graph(model->graph(), inferred->graph()))
      return "the model the tool wrote is not the graph it was given";
    copy_inferred_types(*model->mutable_graph(), inferred->graph());
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

onnx::ShapeInferenceResult infer_shapes(onnx::Model& model, bool allow_onnxruntime) {
  if (allow_onnxruntime) {
    std::string failure = infer_shapes_with_onnxruntime(model);
    if (failure.empty()) {
      static std::atomic<bool> logged{false};
      if (!logged.exchange(true))
        log::verbose("Inferred shapes in the model with `onnxruntime.tools.symbolic_shape_infer`.\n"
                     "Note: To force Parity to use `onnx.shape_inference` instead, use the "
                     "`--no-onnxruntime-shape-inference` command-line option.");
      return {};
    }
    log::extra_verbose("Error while running `onnxruntime.tools.symbolic_shape_infer`:\n{}", failure);
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      log::warning("Falling back to `onnx.shape_inference` because `onnxruntime.tools.symbolic_shape_infer` either "
                   "could not be loaded or did not run successfully.\n"
                   "Note that using ONNX-Runtime for shape inference may be faster and require less memory.\n"
                   "Consider installing ONNX-Runtime and sympy in the Python Parity uses (${}, else python3 on "
                   "PATH, else the one scripts/setup.sh recorded), or pass --no-onnxruntime-shape-inference.",
                   kPythonEnvironmentVariable);
  }
  return onnx::infer_shapes(*model);
}

}  // namespace parity::runtime
