// Back from a Q/DQ model to its float form (`--recalibrate`): every QuantizeLinear ->
// DequantizeLinear pair on an activation is removed (its readers read the float tensor again),
// and every DequantizeLinear of a constant weight becomes the float32 initializer it computes
// ((q - zero point) * scale, per axis).
#pragma once

#include "parity/onnx/model.h"

namespace parity::quantize {

struct QdqRemovalReport {
  int64_t activation_pairs = 0;
  int64_t weights = 0;
};

// Throws InvalidInputError naming a Q/DQ node in any other pattern (a QuantizeLinear read by
// anything but DequantizeLinear, a DequantizeLinear of a computed int8 tensor with no
// QuantizeLinear before it, a Q/DQ output that is a graph output).
QdqRemovalReport remove_qdq(onnx::Model& model);

}  // namespace parity::quantize
