// What a runner can measure about itself for performance mode (compare/perf.h) beyond its
// outputs: where its inference time goes layer by layer, and the memory of a worker process it
// runs in. Backends that cannot say leave Runner's defaults (nothing).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parity::runtime {

// The median of `samples` (the mean of the middle two for an even count); 0 for none.
double median_of(std::vector<double> samples);
// The mean of `samples`; 0 for none.
double mean_of(const std::vector<double>& samples);

// One layer (a kernel the backend ran) and its time per inference over the profiled inferences.
struct LayerTime {
  std::string name;        // the backend's name for it (an ONNX node, or a fused layer's name)
  std::string layer_type;  // its operator or layer type ("Conv", "Convolution", "FusedConv")
  std::string kernel;      // the implementation that ran ("jit_avx512_FP32", "CPUExecutionProvider")
  std::string precision;   // the precision it computed in ("FP32", "BF16"), empty when unknown
  // Its time in one inference: the mean over the profiled inferences (so the layers' times add up
  // to the layers' share of the mean latency of the same inferences).
  double seconds = 0;
  // The ONNX nodes it ran: the node of the same name, or the nodes the backend fused into it;
  // empty for a layer of the backend's own (a reorder, a layout conversion).
  std::vector<std::string> onnx_nodes;
};

// Time of the profiled inferences that lies in no layer, measured as a part of its own: a named
// row of the per-layer table beside the layers.
struct OutsideTime {
  std::string name;     // "between the kernels, inside ONNX Runtime's run"
  std::string what;     // what runs in it, in words ("executor scheduling, output allocation")
  double seconds = 0;   // per inference, the mean over the profiled inferences
};

struct LayerProfile {
  std::string source;       // where the times come from ("ONNX Runtime's profiler node events")
  int inferences = 0;       // how many inferences were profiled
  std::vector<LayerTime> layers;  // in execution order
  // Each profiled inference's latency on Parity's clock (the same clock as the timed inferences),
  // around the call that ran it: the inferences the layers' times come from.
  std::vector<double> latencies;
  // The backend's own time of a whole inference, the mean over the profiled inferences, when it
  // reports one (ONNX Runtime's model_run events); 0 otherwise.
  double run_seconds = 0;
  // Where the backend's profiler has a cost of its own measured beside it: the latencies of as
  // many unprofiled inferences of the same model and feed, run after the profiled ones (ONNX
  // Runtime: the runner's own session), so the profiler's cost per inference is the median of
  // `latencies` less theirs; empty otherwise.
  std::vector<double> unprofiled_latencies;
  // The events the profiler recorded per profiled inference (ONNX Runtime 1.30: one per node), 0
  // when it does not say.
  int events_per_inference = 0;
  // The rest of the profiled inferences' latency, in parts: together with the layers they make up
  // the mean of `latencies` (each part measured, the last one the remainder).
  std::vector<OutsideTime> outside_times;
  // What the per-layer times leave out, in words (for the report).
  std::string outside;
  // What the table's ONNX nodes column says for a layer without ONNX nodes.
  std::string without_onnx_nodes = "(none: the backend's own)";
  // Why there are no layers (the backend cannot report them); empty when it could.
  std::string unavailable;
};

// The memory of the process a runner infers in, when that is not the caller's (a Python worker).
struct WorkerMemory {
  int64_t peak_rss_bytes = 0;  // the worker's peak resident set (it starts at activation)
  std::optional<int64_t> gpu_peak_bytes;  // torch.cuda.max_memory_allocated() on a CUDA device
  std::string gpu_note;                   // why there is no GPU figure (no CUDA device in use)
};

}  // namespace parity::runtime
