// `--onnxrt`: ONNX Runtime as a runner, through its C API. The shared library is loaded with
// dlopen when a session is first created (never linked), so Parity runs its other backends where
// ONNX Runtime is absent. Where the library is looked for, in order:
//   1. OnnxrtOptions::library_path (--ort-library PATH; a file or a folder holding one);
//   2. the PARITY_ORT_LIBRARY environment variable (same forms);
//   3. the library inside the `onnxruntime` Python package of $PARITY_PYTHON (else python3 on
//      PATH);
//   4. when no $PARITY_PYTHON is set and 3 found nothing: the same for the interpreter of the venv
//      scripts/setup.sh made, which it records in ${XDG_CACHE_HOME:-$HOME/.cache}/parity/setup-python
//      (nothing about the source tree is built into the binary);
//   5. the system's library path (libonnxruntime.so.1, libonnxruntime.so).
// An explicit choice (1 or 2) is the only place looked. 3 and 4 start no Python process once an
// interpreter has been asked: its answer (found or not) is remembered in
// ${XDG_CACHE_HOME:-$HOME/.cache}/parity/onnxruntime-library.cache, keyed by the interpreter's
// path and valid while the interpreter file, $PYTHONPATH/$PYTHONHOME, its sys.path folders and the
// library file are unchanged (a venv's interpreter is answered from its site-packages without
// starting it even the first time). When nothing is found, one FileError says where Parity looked
// (the cache included) and how to point it at a library.
//
// Loaders follow Polygraphy's SessionFromOnnx: SessionFromModel(ModelFromPath("m.onnx"), options)
// is a lazy callable; OnnxrtRunner(session_loader) activates it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parity/core/error.h"
#include "parity/runtime/loader.h"
#include "parity/runtime/runner.h"

namespace parity::runtime {

// --ort-opt-level: ONNX Runtime's GraphOptimizationLevel.
enum class OrtOptimizationLevel { kDisable, kBasic, kExtended, kAll };
// "disable", "basic", "extended", "all" (case-insensitive); InvalidInputError otherwise.
OrtOptimizationLevel ort_optimization_level_from_name(std::string_view name);
std::string_view ort_optimization_level_name(OrtOptimizationLevel level);

struct OnnxrtOptions {
  // --providers: execution providers in priority order. Each is matched against the library's
  // available providers like Polygraphy does: exactly, else as a case-insensitive substring
  // ("cpu" -> CPUExecutionProvider, "cuda" -> CUDAExecutionProvider).
  std::vector<std::string> providers{"cpu"};
  int intra_op_threads = 0;  // --ort-intra-op-threads; 0: ONNX Runtime's default (one per core)
  int inter_op_threads = 0;  // --ort-inter-op-threads; 0: ONNX Runtime's default
  // false: the intra-op threads sleep between parallel sections instead of spinning
  // (session.intra_op.allow_spinning = 0; results are the same). Int8 calibration sessions.
  bool intra_op_spinning = true;
  OrtOptimizationLevel optimization_level = OrtOptimizationLevel::kAll;  // ONNX Runtime's default
  // --ort-profile PREFIX: ONNX Runtime writes a Chrome-trace JSON "<PREFIX>_<date>.json" when the
  // session ends (runner deactivation); OnnxrtRunner::profile_path() says where.
  std::string profile_prefix;
  std::string library_path;  // --ort-library
  // Layerwise ("mark all" / streamed) runs: most bytes of intermediate tensors one partial run may
  // produce. The graph is split into consecutive pieces that each fit (tensor sizes from ONNX
  // shape inference on the actual input shapes), run one after another; each tensor is a graph
  // output of exactly one piece. 0: half of the memory available when the plan is made.
  // Up to the "extended" optimization level any budget gives the same tensors bit for bit; at
  // "all", ONNX Runtime's layout rewrites (NCHWc) depend on what produced a tensor, so tensors
  // right after a piece boundary may differ from the one-piece run in the last bits.
  // Each piece keeps its own session (about 1 MB of ONNX Runtime state) for later runs with the
  // same input shapes, so very small budgets trade tensor memory for session memory.
  std::size_t intermediate_memory_budget = 0;
};

// What the library search found.
struct OnnxrtLibraryInfo {
  std::string path;     // the loaded file
  std::string version;  // "1.30.0"
  std::string
      found_by;  // "--ort-library", "PARITY_ORT_LIBRARY", "the onnxruntime Python package of ..."
  uint32_t api_version;  // the C API version requested (that of the headers Parity was built with)
  std::vector<std::string> available_providers;
};
// Finds and loads the library (see the top of this file); throws FileError when none is found.
OnnxrtLibraryInfo load_onnxrt_library(const std::string& library_path = {});

// An ONNX Runtime inference session plus what it needs to make derived sessions (with extra
// graph outputs, or over part of the graph) for intermediate tensors.
class OnnxrtSession {
 public:
  ~OnnxrtSession();
  OnnxrtSession(const OnnxrtSession&) = delete;
  OnnxrtSession& operator=(const OnnxrtSession&) = delete;

  // The model's inputs (initializers excluded) and outputs, as the model declares them.
  const TensorMetadata& input_metadata() const;
  const TensorMetadata& output_metadata() const;
  const OnnxrtOptions& options() const;
  const OnnxrtLibraryInfo& library() const;
  // The providers the session was created with (full names).
  const std::vector<std::string>& providers() const;
  // "model.onnx" (or "<model>" when loaded from bytes), for error context.
  const std::string& model_label() const;

  // Runs the model on `feed` (names not among the inputs are ignored) and returns the graph
  // outputs that are tensors, in order, sharing ONNX Runtime's buffers (no copy).
  NamedTensors run(const NamedTensors& feed);
  // Frees the whole-model ONNX Runtime session while layerwise pieces hold the model's weights (the
  // next run() makes it again). Not done when profiling (the profile belongs to that session).
  bool release_full_session();

  // Backend internals (defined in src/runtime/backends/onnxrt; opaque elsewhere).
  struct Impl;
  explicit OnnxrtSession(std::unique_ptr<Impl> impl);
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// For benchmarks (bench/onnxrt_overhead): mean seconds of one bare OrtApi::Run of `session` on
// `feed` over `calls` calls, input values made once and outputs released unread: the floor under
// any binding's per-call overhead (Parity's or onnxruntime's Python one).
double measure_onnxrt_run_floor(OnnxrtSession& session, const NamedTensors& feed, int calls);

// Loads the library (FileError when none is found) and matches options.providers against its
// providers as sessions do; returns their full names, InvalidInputError for one it does not have.
std::vector<std::string> resolve_onnxrt_providers(const OnnxrtOptions& options);

// ONNX Runtime's own text in an error Parity raised from an ONNX Runtime status ("ONNX Runtime
// error while creating the session: [FAIL] <text>" gives "<text>"); nullopt for other errors.
std::optional<std::string> onnxrt_error_message(const Error& error);

// While alive, ONNX Runtime's warning and error log messages (from any thread) are collected
// instead of being logged: `check lint` reports them, as Polygraphy reports what ONNX Runtime
// prints to stderr. One at a time per process (a second throws InternalError).
class OnnxrtLogCapture {
 public:
  OnnxrtLogCapture();
  ~OnnxrtLogCapture();
  OnnxrtLogCapture(const OnnxrtLogCapture&) = delete;
  OnnxrtLogCapture& operator=(const OnnxrtLogCapture&) = delete;
  // The messages collected since construction or the last take(), oldest first.
  std::vector<std::string> take();
};

using SessionLoader = std::function<std::shared_ptr<OnnxrtSession>()>;

// Lazy: calls `model` and creates the session when called. The model is not kept: when
// intermediate outputs need a modified model, `model` is called again.
SessionLoader SessionFromModel(ModelLoader model, OnnxrtOptions options = {});
// Eager twins.
std::shared_ptr<OnnxrtSession> session_from_model(ModelLoader model,
                                                  const OnnxrtOptions& options = {});
std::shared_ptr<OnnxrtSession> session_from_model(const onnx::Model& model,
                                                  const OnnxrtOptions& options = {});

class OnnxrtRunner : public Runner {
 public:
  explicit OnnxrtRunner(SessionLoader loader);
  OnnxrtRunner(ModelLoader model, OnnxrtOptions options);
  ~OnnxrtRunner() override;

  ModelLoader source_model() const override { return model_; }
  // The same options, without profiling or layerwise pieces; nullptr for a runner given a session loader.
  std::unique_ptr<Runner> with_model(ModelLoader model) const override;

  // ONNX Runtime runs the last infer() took: 1, or the number of graph pieces of a layerwise run.
  std::size_t last_run_count() const { return last_run_count_; }
  // The profile ONNX Runtime wrote at the last deactivation (empty without --ort-profile).
  const std::string& profile_path() const { return profile_path_; }
  // Per-layer times from ONNX Runtime's profiler, in a profiled twin of the session
  // (onnxrt_layer_profile.cpp).
  LayerProfile profile_layers(const NamedTensors& feed, int inferences) override;
  // Concurrent Run calls on the one session from request.requests threads (one when 0)
  // (onnxrt_concurrent.cpp).
  ConcurrentInference infer_concurrently(const std::vector<NamedTensors>& feeds,
                                         const ConcurrencyRequest& request) override;

 protected:
  void activate_impl() override;
  void deactivate_impl() override;
  TensorMetadata input_metadata_impl() override;
  NamedTensors infer_impl(const NamedTensors& feed) override;

 private:
  struct Layerwise;
  NamedTensors infer_marked(const NamedTensors& feed);
  NamedTensors infer_layerwise(const NamedTensors& feed);

  SessionLoader loader_;
  ModelLoader model_;  // empty for a runner given a session loader
  OnnxrtOptions options_;  // those of a runner given a model
  std::shared_ptr<OnnxrtSession> session_;
  std::unique_ptr<Layerwise> layerwise_;
  std::size_t last_run_count_ = 0;
  std::string profile_path_;
};

}  // namespace parity::runtime
