// The runner lifecycle shared by every backend (Polygraphy's BaseRunner): construct (cheap) ->
// activate (load, allocate, dlopen) -> infer(feed) many times -> deactivate. ActiveRunner does
// activation RAII-style. Feeds are validated against input_metadata() before every inference.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parity/core/array_io.h"
#include "parity/core/tensor_metadata.h"
#include "parity/onnx/torch_module_pairing.h"
#include "parity/runtime/concurrent_inference.h"
#include "parity/runtime/layer_profile.h"
#include "parity/runtime/loader.h"

namespace parity::runtime {

// Which intermediate tensors a runner returns besides the graph outputs (Polygraphy's
// --onnx-outputs): none, a list of names, or every tensor in the graph ("mark all").
struct IntermediateOutputs {
  enum class Mode { kNone, kList, kAll };
  Mode mode = Mode::kNone;
  std::vector<std::string> names;

  static IntermediateOutputs none() { return {}; }
  static IntermediateOutputs all() { return {Mode::kAll, {}}; }
  static IntermediateOutputs list(std::vector<std::string> names) { return {Mode::kList, std::move(names)}; }
};

// Called for each tensor as it is produced, in execution (topological) order: the tensor's name,
// its value, and the producing node's name and op type. The tensor may be freed right after.
struct ProducedTensor {
  const std::string& name;
  const Tensor& tensor;
  const std::string& node_name;
  const std::string& op_type;
  // The runner never writes these bytes again (not in a later node, not in a later iteration): a
  // consumer that wants the tensor later may keep the handle instead of copying the bytes.
  bool immutable = false;
};
using TensorCallback = std::function<void(const ProducedTensor&)>;

class Runner {
 public:
  virtual ~Runner() = default;
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // "ref-runner-N0-11/21/26-18:06:00", like Polygraphy's names.
  const std::string& name() const { return name_; }
  // Renames the runner (a name the user gave, e.g. through the Python API's name=): later log lines
  // and results carry it.
  void set_name(std::string name) { name_ = std::move(name); }

  // Threads: activate(), deactivate(), input_metadata() and infer() of one runner hold one lock for
  // their whole call, the same for every backend: a second infer() waits for the first, and a
  // deactivate() racing an infer() waits for it to end; an infer() after it raises the
  // inactive-runner error. Different runners run at the same time.
  void activate();
  void deactivate();
  bool is_active() const { return active_; }

  // Inputs (names, dtypes, shapes with dynamic dims). Requires an active runner.
  TensorMetadata input_metadata();

  // Validates `feed` (unknown or missing names, dtype, rank, static dims) then runs. Returns the
  // graph outputs, then requested intermediates, in order.
  NamedTensors infer(const NamedTensors& feed);
  // Seconds taken by the last infer() (the backend's run, excluding validation).
  double last_inference_time() const { return last_inference_time_; }

  void set_intermediate_outputs(IntermediateOutputs outputs) { intermediates_ = std::move(outputs); }
  // Streams intermediates (and outputs) to `callback` instead of holding them; nullptr to stop.
  void set_tensor_callback(TensorCallback callback) { callback_ = std::move(callback); }

  // What a runner can tell beyond its outputs (the defaults: nothing), so commands need not know
  // which backend it is.
  // The engine layer that wrote a tensor ("OpenVINO <layer> ..."), for a runner that marks the
  // outputs of the layers its engine fused (OpenVINO's --ov-outputs mark fused); nullopt otherwise.
  virtual std::optional<std::string> engine_layer(const std::string& /*tensor*/) const { return std::nullopt; }
  // The ONNX nodes of that engine layer (the fused layer's original nodes), in graph order; empty
  // for a tensor engine_layer() does not describe.
  virtual std::vector<std::string> engine_layer_nodes(const std::string& /*tensor*/) const { return {}; }
  // The ONNX model the runner runs, as a loader (the judge names each compared tensor's PyTorch
  // module from its nodes when the caller gave no model, as the Python API does); empty for a
  // runner that runs no ONNX model it can give back (a compiled model file, a session made
  // elsewhere).
  virtual ModelLoader source_model() const { return {}; }
  // Whether the model's element types decide what the runner computes in (a float16 node computes
  // in float16). False for a runner whose precision is one setting for the whole model (OpenVINO's
  // inference precision hint): debug precision cuts the model into subgraphs for it instead.
  virtual bool precision_follows_model() const { return true; }
  // The PyTorch modules whose outputs the runner returns under the ONNX tensor names holding them
  // (onnx/torch_module_pairing.h), for a PyTorch runner asked for the intermediates of its model's
  // ONNX export; nullptr otherwise.
  virtual const onnx::TorchModulePairings* torch_module_pairings() const { return nullptr; }
  // A runner of the same backend and settings for another model, returning only that model's graph
  // outputs (error attribution runs single nodes on it: compare/attribution.h); nullptr for a runner
  // that cannot make one (a compiled model file, a session made elsewhere).
  virtual std::unique_ptr<Runner> with_model(ModelLoader /*model*/) const { return nullptr; }
  // Performance mode (compare/perf.h): runs `feed` `inferences` times with the backend's profiler
  // and returns each layer's time; LayerProfile::unavailable says why for a backend that cannot
  // report layers. Requires an active runner; called after the timed inferences, so profiling
  // never slows them.
  virtual LayerProfile profile_layers(const NamedTensors& /*feed*/, int /*inferences*/) {
    LayerProfile profile;
    profile.unavailable = "this backend reports no per-layer times";
    return profile;
  }
  // Performance mode, before the runner's first inference (and only without a shape sweep): where
  // the backend runs inputs of dynamic dimensions slower than static ones and the user set no
  // bounds, compiles the model again for the static shapes of `feeds` (all of one shape set), as
  // benchmark_app -shape does; returns what it did, in words, or empty when it did nothing.
  // Requires an active runner; deactivation undoes it.
  virtual std::string compile_for_feed_shapes(const std::vector<NamedTensors>& /*feeds*/) { return {}; }
  // The memory of the worker process the runner infers in; nullopt when it infers in this process.
  // Requires an active runner.
  virtual std::optional<WorkerMemory> worker_memory() { return std::nullopt; }
  // Performance mode's concurrency (runtime/concurrent_inference.h): runs requests concurrently,
  // request i on feeds[i % feeds.size()] (feeds already validated by infer()), and returns each
  // one's latency; ConcurrentInference::unavailable says why for a backend that runs one inference
  // at a time. Requires an active runner.
  virtual ConcurrentInference infer_concurrently(const std::vector<NamedTensors>& /*feeds*/,
                                                 const ConcurrencyRequest& /*request*/) {
    ConcurrentInference result;
    result.unavailable = "this backend runs one inference at a time";
    return result;
  }
  // The settings the backend runs with as it reports them itself (OpenVINO's compiled-model
  // properties: PERFORMANCE_HINT, NUM_STREAMS, INFERENCE_PRECISION_HINT, ...), name and value, for
  // performance mode's log and report; empty for a backend that reports none. Requires an active
  // runner.
  virtual std::vector<std::pair<std::string, std::string>> backend_properties() { return {}; }

 protected:
  explicit Runner(std::string_view prefix);
  virtual void activate_impl() = 0;
  virtual void deactivate_impl() = 0;
  virtual TensorMetadata input_metadata_impl() = 0;
  virtual NamedTensors infer_impl(const NamedTensors& feed) = 0;

  IntermediateOutputs intermediates_;
  TensorCallback callback_;

 private:
  std::string name_;
  // Recursive: a backend's infer_impl may ask the runner for its input metadata.
  std::recursive_mutex lifecycle_;
  std::atomic<bool> active_ = false;
  double last_inference_time_ = 0;
};

// Activates on construction, deactivates on destruction.
class ActiveRunner {
 public:
  explicit ActiveRunner(Runner& runner) : runner_(runner) { runner_.activate(); }
  ~ActiveRunner() {
    if (runner_.is_active()) runner_.deactivate();
  }
  ActiveRunner(const ActiveRunner&) = delete;
  ActiveRunner& operator=(const ActiveRunner&) = delete;
  Runner* operator->() { return &runner_; }
  Runner& operator*() { return runner_; }

 private:
  Runner& runner_;
};

// Throws InvalidInputError naming the input (with a "did you mean" hint for unknown names).
void validate_feed(const TensorMetadata& metadata, const NamedTensors& feed, const std::string& runner_name);

// Builds the feed the model asks for as Polygraphy's data loader cache does (util.find_str_in_iterable):
// each input of the model, in order, takes the feed entry of its name; else the first entry whose
// name contains it or is contained in it, ignoring case (`x` for the model's `X`); else the entry at
// its own position. A taken entry of another name draws Polygraphy's warning ("Input tensor: X |
// Buffer name (x) does not match expected input name (X)."). Entries no input takes are dropped, each
// with a warning (Polygraphy drops them silently); an input nothing matches stays missing, for
// validate_feed to refuse.
void match_feed_names(const TensorMetadata& metadata, NamedTensors& feed);

// The name in `candidates` nearest to `name` by edit distance, when it is close enough to be a
// likely misspelling (at most max(2, |name| / 3) edits); nullopt otherwise. For "did you mean"
// hints about input and output names.
std::optional<std::string> closest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace parity::runtime
