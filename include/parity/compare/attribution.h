// Error attribution: which node introduces the error between two runs, and which only inherits it.
//
// For every compared tensor of a layerwise run (reference = the first runner, under test = the
// second), besides its total error, the LOCAL error: the producing node (or the ONNX nodes of the
// fused engine layer that wrote it) run alone on the runner under test, fed the reference run's
// values of its inputs, compared with the reference's value of the tensor; and the INHERITED error:
// the largest total error among those inputs (what the node was fed in the run under test).
// amplification = total error / inherited error.
//
// The nodes are run in batches: one model per batch, every node reading its inputs as graph inputs
// (no node of a batch feeds another), so a batch is one session of the backend under test. The
// reference's values wait in a TensorSpill (memory up to a budget, the rest in a temporary file),
// and a batch holds at most a quarter of the budget's bytes of inputs and outputs (a larger unit
// runs alone); a batch the backend refuses is run unit by unit, and a unit that cannot run alone is
// reported with why.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "parity/compare/compare_func.h"
#include "parity/compare/layerwise.h"
#include "parity/onnx/model.h"
#include "parity/runtime/runner.h"

namespace parity::compare {

// One compared tensor's attribution. Errors are the comparison's checked statistic (simple's
// check_error_stat: the max for elemwise) of the absolute and relative error.
struct TensorAttribution {
  std::size_t order = 0;  // position in the layerwise comparison
  std::string tensor, node, op;
  // The ONNX nodes run together to recompute it when the runner under test wrote it from a fused
  // layer covering several (Runner::engine_layer_nodes: OpenVINO's --ov-outputs mark fused), in
  // graph order; empty when its node ran alone.
  std::vector<std::string> covering;
  // The PyTorch modules whose output the tensor is ("conv2: Conv2d", innermost first: the layerwise
  // entry's module_outputs) when a runner of the comparison is a PyTorch runner; empty otherwise.
  std::vector<std::string> modules;
  double total_abs = 0, total_rel = 0;          // the layerwise comparison's
  double local_abs = 0, local_rel = 0;          // node alone on reference inputs
  double inherited_abs = 0, inherited_rel = 0;  // largest total error among its inputs
  // total_abs / inherited_abs: infinity when the inputs match exactly and the output does not,
  // NaN when both match exactly.
  double amplification = 0;
  // How many times over the tolerance the local error is (as LayerwiseEntry::excess()); whether it
  // fails the comparison's rule on its own.
  double local_excess = 0;
  bool local_failed = false;
  bool total_failed = false;
  // An op whose output jumps on tiny input changes (comparisons, ArgMax/ArgMin, TopK indices,
  // Round/Floor/Ceil, Cast to integer types, NonMaxSuppression) that is exact on the reference's
  // inputs but differs in the run under test: it flips on inherited differences. `flipped`: the
  // elements that differ (failing the rule) in the run under test.
  bool discontinuous = false;
  bool flips = false;
  int64_t flipped = 0;
  // Why the node was not run alone ("" when it was); its local error is then unknown.
  std::string not_run;
};

struct AttributionResult {
  std::string reference, under_test;  // runner names
  std::vector<TensorAttribution> tensors;  // in comparison order
  std::size_t batches = 0;                 // sessions of the backend under test (modules run alone)
  // By PyTorch module (module_attribution.h): each entry's `node` is a module's qualified name and
  // `op` its class; false: by ONNX node.
  bool by_module = false;
  // Indices of the tensors whose node introduces an error (run alone, a local error that is not
  // zero), the largest (local excess, then local abs error) first.
  std::vector<std::size_t> ranked() const;
  // The first tensor (comparison order) whose local error fails the tolerance; nullptr if none.
  const TensorAttribution* first_local_failure() const;
  // The first tensor whose total error fails; nullptr if none.
  const TensorAttribution* first_total_failure() const;
};

struct AttributionOptions {
  SimpleOptions simple;                     // the tolerances and checked statistic, per output
  uint64_t memory_budget = 1ull << 30;      // reference values held in memory; also a batch's bytes
  std::filesystem::path spill_directory;    // the spill file's folder (default: $TMPDIR)
  // Applied to each batch model (the float model's nodes) before it runs on the backend under test,
  // when that runs a transformed model: the conversion to float16/bfloat16 that made its model, so
  // each node runs in the precision it has there. Empty: the nodes run as the model has them.
  std::function<void(onnx::Model&)> prepare_batch;
  // The reduced type prepare_batch converts to (kFloat16, kBFloat16). An output the prepared batch
  // computes in it (written under another name and Cast to its declared float32) is compared, element
  // by element, with the reference's value or its rounding to that type, whichever is closer: storing
  // the tensor in that type costs the rounding wherever it is computed, so the local error is what the
  // node adds beyond it. A value beyond the type's range is not rounded: the node's overflow is its
  // own error.
  DType prepared_type = DType::kUndefined;
};

// Runs `reference` again on `feed` with every tensor streamed to the spill, then each batch of
// nodes of `model` on a runner of `under_test`'s backend and settings (Runner::with_model), and
// attributes the tensors of `totals` (the layerwise comparison of the same feed: iteration 0).
// Throws InvalidInputError when `totals` has no `simple` metrics or `under_test` cannot run
// another model.
AttributionResult attribute(const onnx::Model& model, runtime::Runner& reference, const runtime::Runner& under_test,
                            const NamedTensors& feed, const LayerwiseResult& totals, const AttributionOptions& options);

// The entries of `totals`' first iteration (the one attribution explains) by tensor name. Throws
// InvalidInputError for one not compared with `simple`: attribution measures errors as it does.
std::unordered_map<std::string, const LayerwiseEntry*> first_iteration_entries(const LayerwiseResult& totals);

// The local error of `value` (computed alone) against `reference` under the tolerances of
// `tensor.tensor`: sets tensor's local_abs, local_rel, local_failed, local_excess and flips, or not_run
// when the values cannot be compared numerically.
void measure_local(TensorAttribution& tensor, const Tensor& reference, const Tensor& value, const SimpleOptions& simple);

// {abs, rel}: the checked statistic of the absolute and relative error of `value` against
// `reference` under the tolerances of `tensor`. Throws UnsupportedError for non-numeric values.
std::pair<double, double> attribution_error(const std::string& tensor, const Tensor& reference, const Tensor& value,
                                            const SimpleOptions& simple);

// The log: the top `count` introducers (a table), the first node whose local error fails, the
// first total failure when it only inherits or amplifies, and the discontinuous ops that flip.
void log_attribution(const AttributionResult& result, std::size_t count = 10);

// {"reference", "under_test", "batches", "first_local_failure", "top": [...], "flips": [...],
//  "tensors": [...every tensor...]}.
nlohmann::ordered_json to_json(const AttributionResult& result, std::size_t count = 10);

}  // namespace parity::compare
