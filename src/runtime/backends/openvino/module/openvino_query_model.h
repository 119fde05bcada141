// Backend::query_model's work: which parts of an ONNX model OpenVINO can run. Private to the
// module.
#pragma once

#include <openvino/openvino.hpp>

#include "openvino_backend.h"

namespace parity::runtime::openvino {

// Converts request.model_bytes with the ONNX frontend (a refusal is returned with OpenVINO's
// message) and lists the ops ov::Core::query_model says the device cannot run.
QueryResult query_onnx_model(ov::Core& core, const QueryRequest& request);

}  // namespace parity::runtime::openvino
