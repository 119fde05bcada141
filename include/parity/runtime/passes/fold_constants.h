// Constant folding evaluated by the reference interpreter (Polygraphy's `surgeon sanitize
// --fold-constants`): every node whose inputs are all constants is computed once and replaced by
// an initializer; Shape/Size of tensors whose shape is static after shape inference, and
// Gather/Slice of such shapes picking only static dims, become constants too; If nodes with a
// constant condition are replaced by the branch taken. Passes repeat (with shape inference in
// between) until nothing changes. Subgraphs are folded with the enclosing graphs' constants.
// A node that fails to evaluate stops the folding of what FoldPartitioning says.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "parity/onnx/model.h"

namespace parity::runtime {

// What one failing evaluation keeps from being folded (Polygraphy's --partitioning).
enum class FoldPartitioning {
  // All foldable nodes of a graph are evaluated together: one failure folds none of them (in that
  // graph, in that pass), with Polygraphy's warning.
  kNone,
  // One partition per foldable result (a foldable node whose output is read by a node that stays, or
  // by nothing else): the node and its foldable ancestors, evaluated on their own. A failing
  // partition is not folded; the others are.
  kBasic,
  // As kBasic, and a failing partition drops its result node and evaluates, as partitions of their
  // own, the foldable nodes that compute the dropped node's inputs (again and again on failure), so
  // everything that can be folded is.
  kRecursive,
};

// "basic" / "recursive" (the --partitioning values); throws InvalidInputError on anything else.
FoldPartitioning parse_fold_partitioning(const std::string& text);

struct FoldOptions {
  int num_passes = 0;                     // 0: until nothing changes (at most 100 passes)
  std::optional<int64_t> size_threshold;  // bytes; larger results stay computed at run time
  bool fold_shapes = true;                // --no-fold-shapes turns shape folding off
  bool shape_inference = true;           // false: never run it (shape folding uses the value_info present)
  bool per_pass_shape_inference = true;
  // The model's shapes are what shape inference (as allow_onnxruntime_shape_inference says) gives
  // for its graph as it is (the caller inferred them after loading it): the first pass folds with
  // them, as Polygraphy's first pass does, instead of inferring them again. Either way, the
  // inference after the last pass is left out when the graph has not changed since shapes were last
  // inferred.
  bool shapes_inferred = false;
  // Infer shapes as Polygraphy does by default: ONNX Runtime's symbolic shape inference, falling
  // back to ONNX's (runtime::infer_shapes); false: ONNX's only (--no-onnxruntime-shape-inference).
  bool allow_onnxruntime_shape_inference = false;
  bool flatten_subgraphs = true;          // inline If nodes whose condition is constant
  FoldPartitioning partitioning = FoldPartitioning::kNone;
  // Log each pass as Polygraphy does: "Folding Constants | Pass N", then its "Total Nodes" line.
  bool log_passes = false;
};

struct FoldReport {
  int passes = 0;
  int64_t nodes_before = 0;  // all graphs, subgraphs included
  int64_t nodes_after = 0;
  int64_t tensors_folded = 0;
  int64_t shapes_folded = 0;
  int64_t ifs_inlined = 0;
  int64_t skipped_over_threshold = 0;
  int64_t failed_evaluations = 0;  // evaluations (all nodes together, or one partition) that failed
};

FoldReport fold_constants(onnx::Model& model, const FoldOptions& options = {});

}  // namespace parity::runtime
