// Internal to constant folding: evaluates the foldable nodes of one graph as FoldPartitioning says,
// so that a node that fails to evaluate keeps only what the mode says from being folded.
#pragma once

#include <cstdint>
#include <vector>

#include <onnx/onnx_pb.h>

#include "evaluate_nodes.h"
#include "parity/runtime/passes/fold_constants.h"

namespace parity::runtime::detail {

// `foldable`: indices into graph.node() of the nodes whose reads are all constants or outputs of
// earlier foldable nodes, in topological order. Returns the values of every output that could be
// evaluated; each failed evaluation is logged (Polygraphy's warning) and counted in
// `failed_evaluations`.
ValueTable evaluate_foldable_nodes(const onnx::Model& owner, const ::onnx::GraphProto& graph,
                                   const std::vector<int>& foldable, const ConstantTable& constants,
                                   FoldPartitioning partitioning, int64_t& failed_evaluations);

}  // namespace parity::runtime::detail
