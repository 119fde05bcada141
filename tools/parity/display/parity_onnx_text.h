// Parity's own text for an ONNX model (`parity inspect model --style parity`): Polygraphy's layout
// plus the IR version and producer, other opsets and functions, sparse initializers, weights as
// min/max/mean summaries (values up to 16 elements), and subgraphs always shown under their node.
#pragma once

#include <string>

#include "display/polygraphy_onnx_text.h"
#include "parity/onnx/model.h"

namespace parity::cli {

// The text that follows the "==== ONNX Model ====" banner.
std::string parity_onnx_text(const onnx::Model& model, const OnnxTextOptions& options);

}  // namespace parity::cli
