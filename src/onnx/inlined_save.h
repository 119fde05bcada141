// A model written to one file with its external tensors inlined, without holding the inlined model
// in memory: the main graph's external initializers (weights left in the model file, or in external
// data files) are read and written one at a time, the rest of the model serialized as protobuf does.
// The bytes are those of serializing the model with every tensor's raw_data set (unknown fields
// aside, which may come out in another place).
#pragma once

#include <filesystem>

#include <onnx/onnx_pb.h>

namespace parity::onnx::detail {

// `model` is consumed (its graph's initializers are taken apart). Tensors that use external data
// elsewhere (subgraphs, attributes, functions) must already be inlined by the caller. The file is
// written atomically.
void write_model_inlined(::onnx::ModelProto model, const std::filesystem::path& base_dir,
                         const std::filesystem::path& path);

}  // namespace parity::onnx::detail
