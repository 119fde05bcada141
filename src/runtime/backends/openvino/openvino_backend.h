// The boundary between Parity's OpenvinoRunner (in parity_runtime) and the OpenVINO backend
// module (libparity_openvino.so, src/runtime/backends/openvino/module/), which alone links against
// OpenVINO's C++ runtime. The runner dlopens the module at activation and calls its one C entry
// point, parity_openvino_backend(), for a Backend; everything else goes through the abstract
// classes below. Both sides are built by the same compiler in the same build, so a C++ vtable
// across the boundary is safe; only standard-library types cross it (the module links no Parity
// library, so it has no second copy of Parity's logger or error types). Failures come back as
// BackendFailure, which the runner turns into parity::Error subclasses.
//
// Tensors cross as plain buffers: element types are ONNX TensorProto element types (Parity's
// DType values), shapes are int64 dims, data are dense C-order bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace parity::runtime::openvino {

// Bumped whenever anything in this header changes: a module from another build is refused.
// 4: Backend::query_model (which parts of a model OpenVINO can run).
// 5: CompileRequest::marked_output_precisions (marked tensors in the type their layer writes).
// 6: CompileRequest::keep_conversion, Backend::drop_kept_conversion (one model compiled with
//    several sets of marks).
// 7: CompiledModel::run_async (concurrent infer requests), CompiledModel::properties,
//    CompileRequest::streams and ImportRequest::streams.
// 8: CompiledModel::infer's `cancellable`, CompiledModel::cancel, BackendFailure::Kind::kCancelled.
inline constexpr int kBackendInterfaceVersion = 8;

struct BackendFailure : std::runtime_error {
  enum class Kind { kInvalidInput, kUnsupported, kOther, kCancelled };
  BackendFailure(Kind kind, const std::string& message) : std::runtime_error(message), kind(kind) {}
  Kind kind;
};

// Severities as Parity's logger counts them (a subset).
enum class LogLevel { kVerbose, kInfo, kWarning };
using LogFunction = std::function<void(LogLevel, const std::string&)>;

// [min, max] bounds of one dimension of one input; max < 0: unbounded.
struct DimensionBounds {
  int64_t min = 0;
  int64_t max = -1;
};

// A shape for one input given by --ov-min/opt/max-shapes.
struct InputShapeBounds {
  std::string name;
  std::vector<DimensionBounds> dims;
};

struct CompileRequest {
  std::string model_bytes;      // a serialized ONNX ModelProto
  std::string model_path;       // where external data are relative to (a file in the model's folder)
  std::string device = "CPU";
  // Properties; unset ones are left to OpenVINO.
  std::optional<std::string> inference_precision;  // "f32", "bf16", "f16"
  std::optional<int> threads;                      // ov::inference_num_threads
  std::optional<std::string> performance_hint;     // "LATENCY", "THROUGHPUT"
  std::optional<int> streams;                      // ov::num_streams
  std::optional<std::string> cache_dir;            // ov::cache_dir
  bool profiling = false;                          // ov::enable_profiling: per-layer timings
  // Inputs reshaped before compiling (others keep the model's shapes).
  std::vector<InputShapeBounds> input_bounds;
  // The ONNX graph's outputs, in order: the compiled model's outputs are named after them.
  std::vector<std::string> graph_outputs;
  // Tensors added as model outputs (ONNX tensor names), in order. Those OpenVINO's conversion
  // no longer has (constants folded away) are skipped and listed by unmarkable_tensors().
  std::vector<std::string> marked_outputs;
  // Empty, or one per marked_outputs entry: "bf16" or "f16" returns that float32 tensor in this
  // type (an exact copy of what its layer writes) instead of float32, whose Result would make the
  // layer write float32 where the plain model writes the reduced type; "" keeps the model's type.
  std::vector<std::string> marked_output_precisions;
  // True: the caller compiles this model again (other marks): the backend keeps OpenVINO's
  // conversion of it and a later request with the same model_bytes, model_path and input_bounds
  // starts from a copy instead of converting again. A request without it drops what was kept.
  bool keep_conversion = false;
};

struct InputDescription {
  std::string name;
  int32_t element_type = 0;          // ONNX element type
  std::vector<int64_t> dims;         // -1: dynamic
  std::vector<DimensionBounds> bounds;  // per dim, as the compiled model sees them
};

// An output described like an input (OpenVINO's shapes of compiled outputs may be dynamic too).
using TensorDescription = InputDescription;

// A compiled model exported by CompiledModel::export_model(), imported again (Backend::import_model).
struct ImportRequest {
  std::string exported;  // the bytes export_model() wrote
  std::string device = "CPU";
  // The precision it was compiled for: OpenVINO's CPU plugin compiles the exported model again on
  // import, with its own default precision unless told.
  std::optional<std::string> inference_precision;  // "f32", "bf16", "f16"
  std::optional<int> threads;                   // ov::inference_num_threads
  std::optional<std::string> performance_hint;  // "LATENCY", "THROUGHPUT"
  std::optional<int> streams;                   // ov::num_streams
  bool profiling = false;                       // ov::enable_profiling
  // The ONNX names of the compiled model's outputs, in order (as output_names() gave them).
  std::vector<std::string> output_names;
};

// One layer of the compiled model's runtime model (ov::CompiledModel::get_runtime_model()), in
// execution order, from its rt_info.
struct ExecutedLayer {
  std::string name;                            // the runtime op's friendly name
  std::string layer_type;                      // layerType: "Convolution", "Reorder", ...
  std::string primitive_type;                  // primitiveType: the kernel, "brgconv_avx512_amx_bf16"
  std::string runtime_precision;               // runtimePrecision
  std::string output_precisions;               // outputPrecisions
  std::vector<std::string> output_shapes;      // one per output, OpenVINO's notation
  std::vector<std::string> original_layers;    // originalLayersNames: OpenVINO names of the fused ops
};

// One executed layer's time in the last inference (ov::ProfilingInfo, status EXECUTED only).
struct LayerTiming {
  std::string name;         // the runtime model's op name
  std::string layer_type;   // node_type
  std::string kernel;       // exec_type
  int64_t real_time_us = 0;
};

struct InputBuffer {
  std::string name;
  int32_t element_type = 0;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // must stay valid during infer(); read, never written
  std::size_t bytes = 0;
};

struct OutputBuffer {
  std::string name;  // the ONNX tensor name
  int32_t element_type = 0;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  std::size_t bytes = 0;
  std::shared_ptr<const void> owner;  // keeps `data` alive (an OpenVINO tensor)
};

// A model to ask OpenVINO about (Backend::query_model): converted by the ONNX frontend, then
// ov::Core::query_model for the device.
// Asynchronous infer requests run by CompiledModel::run_async.
struct AsyncRunRequest {
  // Requests in flight at once; 0: the compiled model's ov::optimal_number_of_infer_requests.
  int requests = 0;
  // Requests to complete in all; with seconds > 0, requests are started until then instead (at
  // least one per infer request).
  int count = 1;
  double seconds = 0;
};

struct AsyncRunResult {
  int requests = 0;               // infer requests that ran at once
  bool optimal = false;           // `requests` is the compiled model's optimal number
  std::vector<double> latencies;  // seconds from each start_async to its completion, in completion order
  double wall_seconds = 0;        // from the first start to the last completion
};

struct QueryRequest {
  std::string model_bytes;  // a serialized ONNX ModelProto
  std::string model_path;   // where external data are relative to
  std::string device = "CPU";
};

struct QueryResult {
  // False when OpenVINO's ONNX frontend refused the model; `conversion_error` then says why.
  bool converted = false;
  std::string conversion_error;
  // The converted model's ops the device does not support (ov::Core::query_model leaves them
  // out), Parameters, Results and Constants excepted: their ONNX tensor names (the names OpenVINO
  // keeps on their outputs) and "name (Type)" for messages. query_model also leaves out ops its
  // transformations replace (a lone Negative), so these are only reported when compiling the
  // model for the device fails too, with that error.
  std::vector<std::string> unsupported_tensors;
  std::vector<std::string> unsupported_ops;
  std::string compile_error;
};

class CompiledModel {
 public:
  virtual ~CompiledModel() = default;
  virtual std::vector<InputDescription> inputs() const = 0;
  // The element type OpenVINO picked for inference ("f32", "bf16", "f16").
  virtual std::string inference_precision() const = 0;
  // Output names in order: the graph outputs first, then the marked tensors.
  virtual std::vector<std::string> output_names() const = 0;
  // Requested tensors that could not be marked because OpenVINO folded them away while
  // converting the model.
  virtual std::vector<std::string> unmarkable_tensors() const = 0;
  // `cancellable`: the request is started asynchronously and waited for, so that cancel() from
  // another thread ends it (BackendFailure kCancelled); otherwise it runs synchronously.
  virtual std::vector<OutputBuffer> infer(const std::vector<InputBuffer>& inputs, bool cancellable) = 0;
  // Cancels the inference in progress in infer(..., true); callable from any thread.
  virtual void cancel() = 0;
  // The compiled outputs, in output_names() order.
  virtual std::vector<TensorDescription> outputs() const = 0;
  // ov::CompiledModel::export_model's bytes (for Backend::import_model in a later process).
  virtual std::string export_model() const = 0;
  // The runtime model's ops in execution order (Parameters, Results and Constants included).
  virtual std::vector<ExecutedLayer> executed_layers() const = 0;
  // The last inference's per-layer times; needs profiling in the request.
  virtual std::vector<LayerTiming> layer_timings() const = 0;
  // Runs infer requests of their own asynchronously (ov::InferRequest::start_async), request i on
  // inputs[i % inputs.size()], each started again from its completion callback until the request
  // says stop. The outputs stay in the requests' tensors.
  virtual AsyncRunResult run_async(const std::vector<std::vector<InputBuffer>>& inputs,
                                   const AsyncRunRequest& request) = 0;
  // The compiled model's properties (name, value as OpenVINO prints it): PERFORMANCE_HINT,
  // NUM_STREAMS, INFERENCE_PRECISION_HINT, INFERENCE_NUM_THREADS, OPTIMAL_NUMBER_OF_INFER_REQUESTS.
  virtual std::vector<std::pair<std::string, std::string>> properties() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual int interface_version() const = 0;
  virtual std::string openvino_version() const = 0;  // "2026.4.1-..."
  virtual std::vector<std::string> available_devices() = 0;
  virtual void set_log_function(LogFunction log) = 0;
  virtual std::unique_ptr<CompiledModel> compile(const CompileRequest& request) = 0;
  // Drops the conversion a request with keep_conversion left kept (nothing when none is).
  virtual void drop_kept_conversion() = 0;
  // Imports an exported compiled model; BackendFailure when OpenVINO cannot read it.
  virtual std::unique_ptr<CompiledModel> import_model(const ImportRequest& request) = 0;
  // Converts the model and asks the device which of its ops it supports. A frontend refusal is an
  // answer (QueryResult::converted false), not a BackendFailure.
  virtual QueryResult query_model(const QueryRequest& request) = 0;
};

}  // namespace parity::runtime::openvino

// The module's entry point: a process-wide Backend (never freed), or nullptr when OpenVINO could
// not be initialized (then `error` says why).
extern "C" parity::runtime::openvino::Backend* parity_openvino_backend(std::string* error);
