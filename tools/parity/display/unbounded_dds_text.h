// The text of `inspect model --list-unbounded-dds`: the tensors parity/onnx/unbounded_dds.h finds,
// in Polygraphy's words.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

namespace parity::cli {

// The main graph's tensors (onnx::find_unbounded_dds_tensors) as Polygraphy lists them:
// "[Variable (cast_out_6): (shape=[], dtype=int64)]". Logs the warnings Polygraphy's graph import
// (ONNX-GraphSurgeon) gives on the way: no default-domain opset, element types numpy lacks
// (bfloat16, float8), once each.
std::string unbounded_dds_text(const ::onnx::ModelProto& model);

}  // namespace parity::cli
