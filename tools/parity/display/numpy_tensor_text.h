// An ONNX tensor's values as Polygraphy shows them: str() of the numpy array that
// onnx.numpy_helper.to_array gives for it.
#pragma once

#include <filesystem>
#include <string>

#include "onnx/onnx_pb.h"
#include "parity/onnx/model.h"

namespace parity::cli {

// numpy's str(to_array(tensor)): float/int/bool arrays with numpy's padding and summarisation,
// ml_dtypes' types (bfloat16, float8, float4, int4, uint4, int2, uint2) item by item as "%g",
// strings as their repr in arrays and as themselves when 0-d. Throws parity::Error when the
// values cannot be read (missing external data or data the model was loaded without, invalid UTF-8
// in a string, an unsupported type).
std::string numpy_tensor_text(const ::onnx::TensorProto& tensor, const onnx::Model& model);

}  // namespace parity::cli
