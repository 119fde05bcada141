// Tensors with unbounded data-dependent shapes (`inspect model --list-unbounded-dds`): inputs
// that make a Range/Pad/Resize/Tile/Expand output's size depend on runtime values with no upper
// bound, as Polygraphy finds them (its get_unbounded_dds_tensors).
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

namespace parity::cli {

// The main graph's tensors as Polygraphy lists them: "[Variable (cast_out_6): (shape=[],
// dtype=int64)]". Nodes are visited in topological order (by depth, stable); a node is checked
// when one of its outputs has no known shape or introduces a new named dimension; the tensor
// feeding its size input is reported when it is computed at runtime (not an initializer) by a
// node other than Min. Logs the warnings Polygraphy's graph import (ONNX-GraphSurgeon) gives on
// the way: no default-domain opset, element types numpy lacks (bfloat16, float8), once each.
std::string unbounded_dds_text(const ::onnx::ModelProto& model);

}  // namespace parity::cli
