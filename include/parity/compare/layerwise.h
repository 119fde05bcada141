// Layerwise comparison: every intermediate tensor of two runs compared one by one, the first
// divergence in topological order named with its producing node, and the worst tensors ranked.
//
// Streaming keeps memory bounded: the first runner's tensors go to a TensorSpill (an unlinked
// temporary file, one record per tensor, read back one at a time), then the second runner streams
// its tensors (Runner::set_tensor_callback) and each is compared against its spilled twin as soon
// as it is produced, then both are dropped. At most one tensor of each side is in memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "parity/compare/accuracy.h"

namespace parity::compare {

// Tensors written to an anonymous temporary file (deleted when the spill is destroyed, or at once
// if the process dies: the file is unlinked right after it is created).
class TensorSpill {
 public:
  struct Record {
    int64_t iteration = 0;
    std::string name, node, op;
    DType dtype = DType::kUndefined;
    Shape shape;
    uint64_t offset = 0, bytes = 0;
    std::size_t order = 0;  // position among the records (production order)
  };

  // The file goes in `directory` (default: the system's temporary folder, $TMPDIR).
  explicit TensorSpill(const std::filesystem::path& directory = {});
  ~TensorSpill();
  TensorSpill(const TensorSpill&) = delete;
  TensorSpill& operator=(const TensorSpill&) = delete;

  // Appends a copy of `tensor` (not string tensors: those are refused with UnsupportedError).
  // A second record of the same name in the same iteration replaces the first in the index.
  void append(int64_t iteration, const std::string& name, const TensorView& tensor, const std::string& node,
              const std::string& op);
  const Record* find(int64_t iteration, const std::string& name) const;
  // Reads one record back into a fresh tensor.
  Tensor read(const Record& record) const;
  const std::vector<Record>& records() const { return records_; }
  uint64_t bytes_written() const { return end_; }

 private:
  int fd_ = -1;
  uint64_t end_ = 0;
  std::vector<Record> records_;
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
  OutputComparison comparison;
  // How many times over its tolerance the tensor's error is: min(required atol / atol, required
  // rtol / rtol) for `simple` (0 when it passed; infinity for NaN errors, shape mismatches and
  // failing non-simple comparisons).
  double excess() const;
};

struct LayerwiseResult {
  std::string runner0, runner1;
  std::vector<LayerwiseEntry> entries;          // in comparison order
  std::vector<std::string> only_in_runner0;     // tensors the second run never produced
  std::vector<std::string> only_in_runner1;     // tensors the first run never produced
  std::vector<std::string> skipped;             // not comparable (string, complex)
  uint64_t spilled_bytes = 0;                   // bytes that went through the spill file

  bool passed() const;
  // The failing entry with the smallest (iteration, order); nullptr when everything passed.
  const LayerwiseEntry* first_divergence() const;
  // Up to `count` entries with the largest error (excess, then max abs error), worst first.
  std::vector<const LayerwiseEntry*> worst(std::size_t count) const;
  // The entries as an AccuracyResult pair (one IterationComparison per iteration), for reports
  // and summaries shared with whole-output comparison.
  PairResult as_pair() const;
};

// Compares one tensor pair with `simple` (logging Polygraphy's comparison block) and records it.
void compare_layer(LayerwiseResult& result, std::size_t order, int64_t iteration, const std::string& tensor,
                   const std::string& node, const std::string& op, const TensorView& out0, const TensorView& out1,
                   const SimpleOutputParams& params);

// Builds a LayerwiseResult from whole-output comparisons (non-streamed layerwise runs);
// `producer(name)` gives a tensor's (order, node, op); tensors it does not know go last, in the
// order they were compared.
struct TensorProducer {
  std::size_t order = SIZE_MAX;
  std::string node, op;
};
LayerwiseResult layerwise_from_pair(const PairResult& pair,
                                    const std::function<TensorProducer(const std::string&)>& producer);

// Logs the first divergence (tensor, producing node and op, its errors and tolerances) and a table
// of the `worst_count` worst tensors.
void log_layerwise_summary(const LayerwiseResult& result, std::size_t worst_count = 10);

// {"runner0", "runner1", "passed", "compared", "first_divergence": {...} | null, "worst": [...]}.
nlohmann::ordered_json to_json(const LayerwiseResult& result, std::size_t worst_count = 10);

}  // namespace parity::compare
