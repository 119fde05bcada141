// Polygraphy's text for an ONNX model (what `polygraphy inspect model` prints after
// "==== ONNX Model ===="), byte for byte: the header line, graph inputs/outputs/initializers as
// TensorMetadata, nodes as Polygraphy lays out layers, attributes as Python prints them, weights as
// numpy prints them, and subgraphs (If/Loop/Scan bodies) as attributes, indented.
#pragma once

#include <string>

#include "parity/onnx/model.h"

namespace parity::cli {

struct OnnxTextOptions {
  bool show_layers = false;   // --show layers: one entry per node, and the initializer metadata
  bool show_attrs = false;    // --show attrs: node attributes (subgraphs among them); needs layers
  bool show_weights = false;  // --show weights: initializer values, and tensor attribute values
};

// The text, without surrounding whitespace (Python's str.strip()). Warnings and errors Polygraphy
// logs while building it (unsupported attribute types, unloadable weights, unknown data types)
// are logged here, in the same order.
std::string polygraphy_onnx_text(const onnx::Model& model, const OnnxTextOptions& options);

}  // namespace parity::cli
