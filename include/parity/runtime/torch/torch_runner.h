// `--torch`: a PyTorch model as a runner. The model runs in a Python worker (python_worker.h) whose
// commands are python/parity/backend/pyt/_torch_model.py, built into Parity, so any interpreter with
// torch runs it ($PARITY_PYTHON, else python3 on PATH, or TorchOptions::python); the Python API's
// PytRunner runs the same file in-process. Feeds and outputs cross in the worker's shared memory.
//
// The model is an nn.Module from a script's function, a TorchScript file or a torch.export program.
// With an ONNX model (the module's export), its graph inputs are the runner's input metadata and its
// graph outputs name the module's flattened outputs; without one, the inputs come from
// TorchOptions::input_shapes (float32) or the script's example_inputs() function, and the outputs
// keep the module's own names ("output", "output_<i>", a dict's keys).
//
// What ran is logged at activation: torch and Python versions, device, precision mode, TF32 state,
// torch.compile mode. eval() and torch.inference_mode() always.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "parity/runtime/loader.h"
#include "parity/runtime/runner.h"

namespace parity::runtime {

class PythonWorker;

struct TorchModelSource {
  enum class Kind {
    kScript,       // an nn.Module returned by `function` of the Python file `path`
    kTorchScript,  // torch.jit.load(path)
    kExport,       // torch.export.load(path).module() (a .pt2 file)
  };
  Kind kind = Kind::kScript;
  std::string path;
  std::string function;  // kScript: the function; empty: "load_model"

  // kExport for a .pt2 file, else kTorchScript.
  static TorchModelSource from_model_file(std::string path);
  // "net.py" or "net.py:build".
  static TorchModelSource from_script(const std::string& path_and_function);
  // "net.py:build", "model.pt": for messages.
  std::string describe() const;
  bool operator==(const TorchModelSource&) const = default;
};

// One forward pass's calls of chosen modules (TorchRunner::capture_module_calls): each kept module's
// positional arguments and output, for running the module alone elsewhere.
struct TorchModuleCalls {
  // input_name(module, i) for argument i, output_name(module) for its output (float16/bfloat16
  // widened to float32).
  NamedTensors tensors;
  std::unordered_map<std::string, std::size_t> argument_counts;  // the kept modules
  std::unordered_map<std::string, std::string> not_captured;     // the others, with why
  // Where each kept module's arguments came from, one per argument: the watched module whose output
  // it is (the same tensor, unchanged), the model input it is, or neither (computed elsewhere).
  struct Source {
    enum class Kind { kUnknown, kModule, kInput } kind = Kind::kUnknown;
    std::string name;  // the module's qualified name, or the input's name
  };
  std::unordered_map<std::string, std::vector<Source>> sources;
  static std::string input_name(const std::string& module, std::size_t index);
  static std::string output_name(const std::string& module);
};

struct TorchOptions {
  TorchModelSource model;
  std::string device = "cpu";     // cpu, cuda, cuda:N
  std::string dtype = "fp32";     // fp32, fp16, bf16
  std::string dtype_mode = "cast";  // cast: a cast copy of the module; autocast: torch.autocast
  std::optional<bool> tf32;       // CUDA only; nullopt: torch's defaults
  std::optional<std::string> compile_mode;  // torch.compile's mode ("default", "max-autotune", ...); nullopt: eager
  std::string python;             // the worker's interpreter; empty: configured_python()
  // Without an ONNX model: the inputs (float32, these shapes), in order; empty: the script's
  // example_inputs().
  std::vector<std::pair<std::string, std::vector<int64_t>>> input_shapes;
};

class TorchRunner : public Runner {
 public:
  // `onnx_model`: the ONNX model the module was exported to, whose inputs and output names the runner
  // takes; an empty loader when the run has none.
  TorchRunner(ModelLoader onnx_model, TorchOptions options);
  ~TorchRunner() override;

  const TorchOptions& options() const { return options_; }

  // With an ONNX model, the module's submodules are paired with the tensors of that export at
  // activation (onnx/torch_module_pairing.h); when intermediate tensors are asked of the runner (mark
  // all, a layerwise stream), it returns the paired modules' outputs under those tensors' names, each
  // streamed with the ONNX node that produces it, in the graph's order. Without an ONNX model, each
  // submodule's output is named by its qualified name, for another PyTorch run to compare. The
  // pairing, once used, with the modules the run could not capture (called twice, a tuple returned,
  // a hook that did not run) unpaired; nullptr before.
  const onnx::TorchModulePairings* torch_module_pairings() const override;
  // The ONNX model that names its inputs and outputs, when one was given.
  ModelLoader source_model() const override { return onnx_model_; }
  // The worker process's peak resident set and, on a CUDA device, torch.cuda.max_memory_allocated().
  std::optional<WorkerMemory> worker_memory() override;
  // Performance mode's --requests (torch_concurrent.cpp): N requests at once in the worker, each a
  // thread with a copy of its feed and output buffers of its own (the outputs stay there); on a CUDA
  // device each also has a CUDA stream of its own and pinned host memory.
  ConcurrentInference infer_concurrently(const std::vector<NamedTensors>& feeds,
                                         const ConcurrencyRequest& request) override;

  // Performance mode's per-layer time (torch_layer_profile.cpp): PyTorch's profiler in the worker, each
  // module a layer (its calls less its submodules'), or the operators where no module hook runs
  // (torch.compile, TorchScript); on a CUDA device the kernels' device time.
  LayerProfile profile_layers(const NamedTensors& feed, int inferences) override;

  // Error attribution by module (compare/module_attribution.h); the runner must be active.
  // One forward pass on `feed` with forward pre-hooks and hooks on `modules` (qualified names): each
  // module called once with positional tensor arguments only, returning one tensor, is kept; the
  // others are not_captured with why (keyword or non-tensor arguments, called twice, a tuple returned,
  // hooks that did not run under torch.compile or TorchScript).
  TorchModuleCalls capture_module_calls(const NamedTensors& feed, const std::vector<std::string>& modules);
  // `module` run alone in this runner's configuration (device, dtype and mode, torch.compile of the
  // module alone), fed `arguments`; each submodule of `substitutes` (qualified name -> value) returns
  // that value instead of computing it. Throws PythonCommandError when it cannot run alone.
  Tensor run_module(const std::string& module, const std::vector<Tensor>& arguments, const NamedTensors& substitutes);

 protected:
  void activate_impl() override;
  void deactivate_impl() override;
  TensorMetadata input_metadata_impl() override;
  NamedTensors infer_impl(const NamedTensors& feed) override;

 private:
  std::string worker_name() const;
  NamedTensors ordered_feed(const NamedTensors& feed) const;
  void pair_modules();
  bool captures_modules() const;
  NamedTensors module_outputs(NamedTensors tensors, const std::unordered_set<std::string>& captured);

  ModelLoader onnx_model_;
  TorchOptions options_;
  std::unique_ptr<PythonWorker> worker_;
  std::size_t plain_infer_ = 0;  // the PythonWorker::Binding of `infer` without module capture
  TensorMetadata inputs_;
  std::vector<std::string> output_names_;  // from the ONNX model; empty without one
  std::optional<onnx::TorchModulePairings> pairings_;
  bool pairings_used_ = false;
  struct Producer {
    std::size_t position;
    std::string node, op;
  };
  std::unordered_map<std::string, Producer> producers_;  // the ONNX model's tensors by name
};

}  // namespace parity::runtime
