// Layerwise comparison: every intermediate tensor of two runs compared one by one, the first
// divergence in topological order named with its producing node, and the worst tensors ranked.
//
// Streaming keeps memory bounded: the first runner's tensors go to a TensorSpill (kept in memory up
// to a budget of bytes, the rest in an unlinked temporary file, one record per tensor, read back
// one at a time), then the second runner streams its tensors (Runner::set_tensor_callback) and each
// is compared against its spilled twin as soon as it is produced, then both are dropped. Beyond the
// budget, at most one tensor of each side is in memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "parity/compare/accuracy.h"
#include "parity/onnx/torch_module_pairing.h"

namespace onnx {
class GraphProto;
}  // namespace onnx

namespace parity::compare {

// The first runner's tensors, waiting for their twins: kept in memory while the bytes held stay
// within `memory_budget`, the others written to an anonymous temporary file (created on the first
// tensor that does not fit, so a run that fits makes none; unlinked right after it is created, so
// it goes when the spill is destroyed, or at once if the process dies).
class TensorSpill {
 public:
  struct Record {
    int64_t iteration = 0;
    std::string name, node, op;
    DType dtype = DType::kUndefined;
    Shape shape;
    uint64_t bytes = 0;
    bool held = false;       // in memory; else in the file at `offset`
    uint64_t offset = 0;     // in the file (records not held)
    std::size_t order = 0;   // position among the records (production order)
  };

  // The file goes in `directory` (default: the system's temporary folder, $TMPDIR). With a
  // budget of 0 every tensor goes to the file.
  explicit TensorSpill(const std::filesystem::path& directory = {}, uint64_t memory_budget = 0);
  ~TensorSpill();
  TensorSpill(const TensorSpill&) = delete;
  TensorSpill& operator=(const TensorSpill&) = delete;

  // Appends a copy of `tensor` (not string tensors: those are refused with UnsupportedError): held
  // in memory if it fits in what is left of the budget, else written to the file. A second record
  // of the same name in the same iteration replaces the first in the index (and frees it if held).
  void append(int64_t iteration, const std::string& name, const TensorView& tensor, const std::string& node,
              const std::string& op);
  // As append(), for a tensor whose bytes nobody writes again (runtime::ProducedTensor::immutable):
  // one that fits in the budget is held by sharing `tensor`'s storage, without a copy.
  void append_shared(int64_t iteration, const std::string& name, const Tensor& tensor, const std::string& node,
                     const std::string& op);
  const Record* find(int64_t iteration, const std::string& name) const;
  // The record's tensor: a held one shared without a copy, a filed one read into a fresh tensor.
  // A held record can be read any number of times until it is taken.
  Tensor read(const Record& record) const;
  // The record's tensor for a caller that reads it once: a held one is handed over (the spill
  // keeps no reference, and its bytes no longer count against the budget); a filed one is read as
  // by read(). Reading or taking a held record again after it was taken raises InternalError.
  Tensor take(const Record& record);
  const std::vector<Record>& records() const { return records_; }
  // Where the file ends: the bytes that went through it (with each record's alignment padding).
  uint64_t bytes_written() const { return end_; }
  // The bytes of the records held in memory now (taken ones excluded).
  uint64_t bytes_held() const { return held_bytes_; }

 private:
  class HeldChunk;
  void open_file();
  void write(Record& record, const TensorView& tensor);
  Tensor hold(const TensorView& tensor);  // a copy of `tensor` in the current chunk
  // `shared`, when given, is `tensor`'s own handle, held as it is instead of a copy.
  void add(int64_t iteration, const std::string& name, const TensorView& tensor, const Tensor* shared,
           const std::string& node, const std::string& op);

  std::filesystem::path directory_;
  uint64_t memory_budget_ = 0;
  uint64_t held_bytes_ = 0;
  int fd_ = -1;
  uint64_t end_ = 0;
  std::vector<Record> records_;
  std::vector<Tensor> held_;  // by record order; empty handles for filed and taken records
  std::shared_ptr<HeldChunk> chunk_;  // where the next held tensor goes
  uint64_t chunk_used_ = 0;
  std::unordered_map<std::string, std::size_t> index_;
};

// One compared tensor.
struct LayerwiseEntry {
  std::size_t order = 0;   // topological position (first runner's production order)
  int64_t iteration = 0;
  std::string tensor, node, op;
  // What the engine under test executed to produce the tensor, when the caller knows (OpenVINO's
  // fused layer and the ONNX nodes it covers, with --ov-outputs mark fused); "" otherwise.
  std::string engine_layer;
  // The PyTorch module the producing node was exported from (onnx::torch_module: "m.encoder.layer.0
  // .attention.self.query: Linear"), when the model records it; "" otherwise.
  std::string module;
  // The PyTorch modules whose output the tensor is ("m.conv2: Conv2d"), innermost first, when one
  // runner produced module outputs under ONNX tensor names (--torch with mark all; set by
  // name_module_outputs, layerwise_torch_modules.h); empty otherwise.
  std::vector<std::string> module_outputs;
  OutputComparison comparison;
  // Set by review_layer (parity/compare/layerwise_review.h) for `simple` comparisons with NaN/Inf
  // errors: the largest errors with an infinity both runs produced counted as no error (Polygraphy's
  // arithmetic, behind `comparison`, makes inf - inf a NaN).
  struct Errors {
    double max_abs = 0, max_rel = 0;
  };
  std::optional<Errors> infinities_equal_errors;
  // Why a failing tensor is no divergence a user can act on ("" for one that is): set by
  // review_layer. Such tensors are neither the first divergence nor among the worst.
  std::string not_a_divergence;
  // Sums over the elements of a float32/float64 pair (0 for other types): the first run's squares,
  // the second run's, and the squared differences; sqnr_db() reads them.
  struct Energies {
    double first = 0, second = 0, error = 0;
  };
  std::optional<Energies> energies;
  // 10 log10(sum ref^2 / sum (ref - q)^2) with the first run's tensor as ref (`reference_is_first`)
  // or the second's; +inf for equal tensors, NaN without energies or when both sums are 0.
  double sqnr_db(bool reference_is_first) const;
  // The largest errors the summary reports and ranks by: infinities_equal_errors when set, else
  // the comparison's (NaN without `simple` metrics).
  double max_abs_error() const;
  double max_rel_error() const;
  // How many times over its tolerance the tensor's error is: min(required atol / atol, required
  // rtol / rtol) for `simple` (0 when it passed; infinity for NaN errors, shape mismatches and
  // failing non-simple comparisons); with infinities_equal_errors, those over the tolerances.
  double excess() const;
};

struct LayerwiseResult {
  std::string runner0, runner1;
  std::vector<LayerwiseEntry> entries;          // in comparison order
  std::vector<std::string> only_in_runner0;     // tensors the second run never produced
  std::vector<std::string> only_in_runner1;     // tensors the first run never produced
  std::vector<std::string> skipped;             // not comparable (string, complex)
  // Outputs of QuantizeLinear/DequantizeLinear nodes that only one run produced (an int8 Q/DQ
  // model's against its float model's), left out of the comparison: each stands for the float
  // tensor its QuantizeLinear reads, which both runs produce under its own name and are compared.
  std::vector<std::string> qdq_only;
  // Which run is the quantized one (0 or 1): the one that produced qdq_only; the other is the
  // reference of the SQNRs. Unset without Q/DQ-only tensors.
  std::optional<int> quantized_run;
  uint64_t spilled_bytes = 0;                   // bytes that went through the spill file
  // The pairing behind the entries' module_outputs and the runner whose modules they are.
  struct TorchModules {
    std::string runner;
    onnx::TorchModulePairings pairings;
  };
  std::optional<TorchModules> torch_modules;

  bool passed() const;
  // The failing entry with the smallest (iteration, order) that is a divergence (not_a_divergence
  // empty); nullptr when there is none.
  const LayerwiseEntry* first_divergence() const;
  // Up to `count` entries with the largest error (excess, then max abs error), worst first; failing
  // entries that are no divergence are left out.
  std::vector<const LayerwiseEntry*> worst(std::size_t count) const;
  // The entries as an AccuracyResult pair (one IterationComparison per iteration), for reports
  // and summaries shared with whole-output comparison.
  PairResult as_pair() const;
};

// Compares one tensor pair with `simple` (logging Polygraphy's comparison block) and records it.
void compare_layer(LayerwiseResult& result, std::size_t order, int64_t iteration, const std::string& tensor,
                   const std::string& node, const std::string& op, const TensorView& out0, const TensorView& out1,
                   const SimpleOutputParams& params);

// The sums behind LayerwiseEntry::sqnr_db for a float32/float64 pair of one shape; nullopt otherwise.
std::optional<LayerwiseEntry::Energies> energies(const TensorView& first, const TensorView& second);

// Builds a LayerwiseResult from whole-output comparisons (non-streamed layerwise runs);
// `producer(name)` gives a tensor's (order, node, op); tensors it does not know go last, in the
// order they were compared.
struct TensorProducer {
  std::size_t order = SIZE_MAX;
  std::string node, op;
};
LayerwiseResult layerwise_from_pair(const PairResult& pair,
                                    const std::function<TensorProducer(const std::string&)>& producer);

// For whole-output comparisons (layerwise_from_pair): the outputs of QuantizeLinear/DequantizeLinear
// nodes (by `producer`) that one result holds and the other does not, as qdq_only, with
// quantized_run the result that holds them.
void mark_qdq_only(LayerwiseResult& result, const RunnerResults& first, const RunnerResults& second,
                   const std::function<TensorProducer(const std::string&)>& producer);

// Sets each entry's module from the model's nodes (onnx::torch_modules), for models exported by
// torch.onnx.export(dynamo=True), whose node names do not say it.
void name_torch_modules(std::vector<LayerwiseResult>& results, const ::onnx::GraphProto& graph);

// Logs the first divergence (tensor, producing node and op, its module when known, its errors and
// tolerances) and a table of the `worst_count` worst tensors (with a module column when one is known).
void log_layerwise_summary(const LayerwiseResult& result, std::size_t worst_count = 10);

// {"runner0", "runner1", "passed", "compared", "first_divergence": {...} | null, "worst": [...]}.
nlohmann::ordered_json to_json(const LayerwiseResult& result, std::size_t worst_count = 10);

}  // namespace parity::compare
