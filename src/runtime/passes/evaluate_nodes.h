// Internal: runs a handful of nodes of a model in a throwaway model on the reference interpreter
// (used by constant folding and lint).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

#include "parity/onnx/model.h"
#include "parity/ops/value.h"

namespace parity::runtime::detail {

using ConstantTable = std::unordered_map<std::string, const ::onnx::TensorProto*>;
using ValueTable = std::unordered_map<std::string, ops::Value>;

// Runs `nodes` (in order) in a model with `owner`'s opsets and functions. Reads resolve to
// `known` values (fed as graph inputs) or `constants` (copied in as initializers). Returns every
// value the nodes produce. Throws parity::Error when a node fails.
ValueTable evaluate_nodes(const onnx::Model& owner, const std::vector<const ::onnx::NodeProto*>& nodes,
                          const ConstantTable& constants, const ValueTable& known);

}  // namespace parity::runtime::detail
