// Internal to `check lint`: its node checks on ONNX Runtime, as Polygraphy's lint makes them: each
// node alone in a one-node model fed the values its producers gave, and ONNX Runtime's error text
// pruned to the part that names the problem, the way Polygraphy prunes it.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "evaluate_nodes.h"
#include "parity/onnx/model.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"

namespace parity::runtime::detail {

// Runs `node` alone on ONNX Runtime: a model with `owner`'s IR version, opsets and functions whose
// inputs are the node's reads found in `known` (typed and shaped like those values), whose
// initializers are the reads found in `constants`, and whose outputs are the node's outputs (typed
// as `owner` declares them, where it does). Returns the tensors it produced. Throws parity::Error
// when ONNX Runtime refuses the model or fails to run it, or when a read is a value ONNX Runtime
// cannot be fed (a sequence or map).
ValueTable run_node_on_onnxrt(const onnx::Model& owner, const ::onnx::NodeProto& node, const ConstantTable& constants,
                              const ValueTable& known, const OnnxrtOptions& options);

// ONNX Runtime's message in the form Polygraphy reports it. Polygraphy gets
// "[ONNXRuntimeError] : <code> : <CODE NAME> : <message>" from ONNX Runtime's Python binding and
// keeps <message> with its " : " separators, newlines and filler phrases ("This is an invalid
// model. ", "Error: ", ...) removed and '"' turned into '`'; then strips, in order, a leading log
// colour, log timestamps, "Node (n) Op (o) [ShapeInferenceError]", "path.cc:N onnxruntime::f(...)",
// "In Node, ..., Error " and "...Status Message: ".
std::string polygraphy_onnxrt_message(const std::string& onnxrt_message);

}  // namespace parity::runtime::detail
