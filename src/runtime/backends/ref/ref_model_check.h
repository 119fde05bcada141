// What the reference interpreter refuses before it runs a model, where it would otherwise run
// something the model does not say: graph inputs declared twice, element types ONNX does not
// define, an IR version or opset newer than this build's ONNX, and attributes whose type is not
// the one the operator's schema gives.
#pragma once

#include "parity/onnx/model.h"

namespace parity::runtime {

// Throws InvalidInputError naming the model file and the input, node or opset at fault.
void check_model_for_reference(const onnx::Model& model);

}  // namespace parity::runtime
