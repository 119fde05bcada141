// `--openvino`: OpenVINO as a runner, the optimizing backend under test (fused layers, reduced
// precision, kernels chosen for the machine). OpenVINO's C++ runtime is used only by a backend
// module, libparity_openvino.so, built beside the `parity` binary and dlopen-ed at activation, so
// Parity starts and runs its other backends where OpenVINO is absent.
//
// Activation first loads OpenVINO's own library (libopenvino.so.*) from a folder found, in order:
//   1. the PARITY_OPENVINO_LIBRARY_DIR environment variable (then the only place looked);
//   2. the `openvino` Python package (openvino/libs) of the virtual environment of $PARITY_PYTHON,
//      else of python3 on PATH, else of the interpreter scripts/setup.sh recorded in
//      ${XDG_CACHE_HOME:-$HOME/.cache}/parity/setup-python (read from the venv's site-packages;
//      no Python process is started);
//   3. the system's library path (libopenvino.so).
// then the module, from PARITY_OPENVINO_MODULE (a file) when set, else the folder of the running
// executable. When either is missing, one FileError lists every place looked and how to fix it.
//
// The model: the parsed ONNX model of the loader, serialized and read by OpenVINO's ONNX frontend
// (external data relative to the model's folder), optionally reshaped to bounded dynamic shapes,
// compiled for the CPU with the options below.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "parity/core/tensor_metadata.h"
#include "parity/runtime/openvino/openvino_compiled_file.h"
#include "parity/runtime/openvino/openvino_fused_outputs.h"
#include "parity/runtime/loader.h"
#include "parity/runtime/runner.h"

namespace parity::runtime {

namespace openvino {
class Backend;
class CompiledModel;
struct ExecutedLayer;
struct InputBuffer;
}  // namespace openvino
class ContainedModel;

struct OpenvinoOptions {
  // --ov-precision: ov::hint::inference_precision ("f32", "bf16", "f16"); unset: OpenVINO's
  // choice for this machine (bf16 on CPUs with AMX/AVX512-BF16, else f32).
  std::optional<std::string> precision;
  std::optional<int> threads;                   // --ov-threads: ov::inference_num_threads
  std::optional<std::string> performance_hint;  // --ov-perf-hint: "latency" or "throughput"
  std::optional<int> streams;                   // --ov-streams: ov::num_streams (at least 1)
  std::optional<std::string> cache_dir;         // --ov-cache-dir: ov::cache_dir
  // --ov-min/opt/max-shapes: bounds of dynamic inputs. Each input named in `min_shapes` must be
  // in `max_shapes` with the same rank (and in `opt_shapes` when that is given). The model is
  // compiled once with ov::Dimension(min, max) per dim; any shape within the bounds runs without
  // compiling again. OpenVINO's CPU plugin has no optimization profile, so `opt_shapes` only
  // has to lie within the bounds (checked).
  TensorMetadata min_shapes, opt_shapes, max_shapes;
  // --ov-outputs: tensors added as model outputs besides the graph outputs (ONNX tensor names, or
  // every tensor with "mark all"). Overrides the runner's intermediate outputs when set.
  IntermediateOutputs outputs;
  // --ov-outputs mark fused: the fusion-preserving layerwise mode (parity/runtime/openvino/openvino_fused_outputs.h):
  // activation compiles the plain model, then marks only the tensors its executed layers write out,
  // so the marked model runs the same fused kernels. `outputs` must be none.
  bool fused_outputs = false;
  // --ov-exclude-outputs: tensors never marked (with "mark all" or a list).
  std::vector<std::string> exclude_outputs;
  // A compiled model file (parity/runtime/openvino/openvino_compiled_file.h) to import instead of compiling
  // the loader's model (never called then). Its precision and shapes were fixed when it was
  // written, so precision, shape bounds, cache folder and marked outputs must be unset.
  std::string compiled_file;
  // --ov-profile-layers N: compile with ov::enable_profiling and, at deactivation, log the N
  // layers that took the most time, summed over every inference (share of the total, kernel,
  // precision). 0: no profiling.
  int profile_layers = 0;
};

// "f32", "bf16", "f16"; InvalidInputError naming the flag otherwise.
void check_openvino_precision(const std::string& precision);
// "latency", "throughput" (case-insensitive) -> "LATENCY", "THROUGHPUT"; InvalidInputError otherwise.
std::string openvino_performance_hint(const std::string& hint);

// What activation found and loaded.
struct OpenvinoLibraryInfo {
  std::string library_dir;  // the folder of libopenvino.so.* ("" when the system's path found it)
  std::string found_by;     // "PARITY_OPENVINO_LIBRARY_DIR", "the openvino Python package of ..."
  std::string module_path;  // libparity_openvino.so
  std::string version;      // OpenVINO's build number, "2026.4.1-..."
};

// Loads OpenVINO and the backend module once per process (see the top of this file); throws
// FileError listing where it looked when either is missing.
struct OpenvinoBackendHandle {
  openvino::Backend* backend;
  OpenvinoLibraryInfo info;
};
OpenvinoBackendHandle load_openvino_backend();

class OpenvinoRunner : public Runner {
 public:
  OpenvinoRunner(ModelLoader model, OpenvinoOptions options);
  ~OpenvinoRunner() override;

  ModelLoader source_model() const override { return options_.compiled_file.empty() ? loader_ : ModelLoader{}; }

  // After activation: the precision OpenVINO infers in ("f32", "bf16", "f16").
  const std::string& inference_precision() const { return inference_precision_; }
  // After activation: the requested tensors OpenVINO folded away and that could not be returned.
  const std::vector<std::string>& unmarkable_tensors() const { return unmarkable_; }
  const OpenvinoLibraryInfo& library() const { return library_; }
  // After activation: the model file it runs (the ONNX model or the compiled model file).
  const std::string& model_label() const { return model_label_; }
  // After activation: the compiled model as a compiled model file (header and exported bytes),
  // ready for write_openvino_compiled_file. Only for a runner with no marked tensors.
  OpenvinoCompiledFile compiled_file() const;
  // After activation: the runtime model's ops in execution order (what OpenVINO executes).
  std::vector<openvino::ExecutedLayer> executed_layers() const;
  // With OpenvinoOptions::fused_outputs, after activation (kept after deactivation): the tensors the
  // plain model's layers write out, each with its layer (marked or not), in execution order.
  const std::vector<FusedLayerOutput>& fused_outputs() const { return fused_outputs_; }
  // The entry of fused_outputs() for a marked tensor, or nullptr.
  const FusedLayerOutput* fused_output(const std::string& tensor) const;
  // "OpenVINO <layer description>" for a tensor of fused_outputs().
  std::optional<std::string> engine_layer(const std::string& tensor) const override;
  std::vector<std::string> engine_layer_nodes(const std::string& tensor) const override;
  // One precision hint for the whole model.
  bool precision_follows_model() const override { return false; }
  // The same compile settings (precision, threads, hint), nothing marked, no shape ranges (the
  // model's inputs are static), no profile; nullptr for a runner of a compiled model file.
  std::unique_ptr<Runner> with_model(ModelLoader model) const override;
  // Per-layer times from OpenVINO's performance counters (openvino_layer_profile.cpp); compiles the
  // model again with profiling when it was compiled without.
  LayerProfile profile_layers(const NamedTensors& feed, int inferences) override;
  // An input with a dynamic dimension and no --ov-min/max-shapes: compiles the model again with the
  // feeds' shapes as its bounds (openvino_feed_shapes.cpp); nothing for a compiled model file.
  std::string compile_for_feed_shapes(const std::vector<NamedTensors>& feeds) override;
  // Asynchronous infer requests (openvino_concurrent.cpp): request.requests of them, or the
  // compiled model's optimal number when 0.
  ConcurrentInference infer_concurrently(const std::vector<NamedTensors>& feeds,
                                         const ConcurrencyRequest& request) override;
  // The compiled model's PERFORMANCE_HINT, NUM_STREAMS, INFERENCE_PRECISION_HINT,
  // INFERENCE_NUM_THREADS and OPTIMAL_NUMBER_OF_INFER_REQUESTS, read back from it.
  std::vector<std::pair<std::string, std::string>> backend_properties() override;

 protected:
  void activate_impl() override;
  void deactivate_impl() override;
  TensorMetadata input_metadata_impl() override;
  NamedTensors infer_impl(const NamedTensors& feed) override;

 private:
  // The tensors to mark, from the options, the runner's intermediates or (when a tensor callback
  // is set) every tensor.
  IntermediateOutputs marked_outputs() const;
  // With `announce`, logs one info line naming the model, the precision and the tensors marked.
  void compile(const IntermediateOutputs& marked, bool announce = true);
  // The info line compile() announces: "OpenVINO <version> compiled <model> for CPU | inference precision: ...".
  std::string compiled_line() const;
  // OpenvinoOptions::fused_outputs: compiles the plain model, reads its layers, marks their output
  // tensors and compiles again, dropping marks around layers that marking changed; one info line
  // sums up the compiles.
  void compile_fusion_preserving();
  // Imports options_.compiled_file, read by activation (its OpenVINO version checked against the loaded one).
  void import_compiled_file(OpenvinoCompiledFile file);
  // The compiled model's inputs (dynamic dims with the bounds OpenVINO reports).
  TensorMetadata compiled_inputs() const;
  void check_bounds(const NamedTensors& feed) const;
  // The feed as the module's input buffers (its bytes, not copied), its shapes checked against the bounds.
  std::vector<openvino::InputBuffer> input_buffers(const NamedTensors& feed) const;

  ModelLoader loader_;
  OpenvinoOptions options_;
  OpenvinoLibraryInfo library_;
  openvino::Backend* backend_ = nullptr;
  std::unique_ptr<openvino::CompiledModel> compiled_;
  std::size_t graph_output_count_ = 0;
  std::string compiled_for_;  // the marked tensors compiled_ was built with
  TensorMetadata inputs_;
  std::string model_label_;
  std::string inference_precision_;
  std::string source_model_hash_;  // of an imported compiled model file (its header's)
  std::string compiled_onnx_map_;  // of an imported compiled model file: its header's onnx-map (may be empty)
  bool profiling_ = false;         // compiled with ov::enable_profiling for profile_layers()
  bool feed_shapes_ = false;       // min/max_shapes set by compile_for_feed_shapes, cleared at deactivation
  // This activation's model was compiled once, contained where OpenVINO's calls are
  // (openvino_containment.h): later compiles of it (other marks) run in this process only.
  bool compile_contained_ = false;
  // The child that compiled the model first, kept for the first inference; null after it.
  std::unique_ptr<ContainedModel> contained_model_;
  // The contained inference crashed: the next inference compiles the model again, contained, so
  // that it is contained too (the same inputs again do not take the process down).
  bool contain_again_ = false;
  // Runs the first inference since the contained compile in its child (a crash there is an
  // InvalidInputError naming the node) before this process infers `inputs`.
  void contain_first_inference(const std::vector<openvino::InputBuffer>& inputs);
  std::vector<std::string> unmarkable_;
  // The tensors compiled_ returns besides the graph outputs; unset where none were asked for.
  std::optional<std::size_t> marked_count_;
  std::vector<FusedLayerOutput> fused_outputs_;  // OpenvinoOptions::fused_outputs: see fused_outputs()
  // While compile_fusion_preserving compiles one model again and again: the model serialized once
  // (compile() serializes it itself when empty), its conversion kept by the backend.
  std::string fused_model_bytes_;
  std::vector<std::string> fused_marks_;         // the tensors of fused_outputs_ marked, in order
  std::set<std::string> fused_unmarked_;         // tensors of fused_outputs_ not marked (dropped, excluded, unknown)
  // Marked tensors returned in their layer's reduced type (bf16/f16) and widened to float32 here.
  std::unordered_map<std::string, std::string> marked_precisions_;
  // Producer (node name, op type) of each ONNX tensor, for streamed tensors.
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> tensor_order_;
  // --ov-profile-layers: microseconds per runtime layer (name, type, kernel): OpenVINO's mean over
  // the inferences since compilation, read after each inference.
  struct LayerTime {
    std::string name, layer_type, kernel;
    int64_t microseconds = 0;
  };
  std::vector<LayerTime> layer_times_;
  std::size_t profiled_inferences_ = 0;
  void log_slowest_layers();
};

}  // namespace parity::runtime
