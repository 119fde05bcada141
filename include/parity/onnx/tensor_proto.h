// TensorProto <-> Tensor, for every element type and every storage field (typed fields,
// raw_data, external data read through a read-only memory map).
#pragma once

#include <filesystem>
#include <string>

#include <onnx/onnx_pb.h>

#include "parity/core/tensor.h"

namespace parity::onnx {

// Where an external tensor's bytes live, after checking the location stays inside base_dir.
struct ExternalLocation {
  std::filesystem::path file;  // canonical path
  uint64_t offset = 0;
  std::optional<uint64_t> length;
};

// Throws InvalidInputError naming the tensor when the location is absolute, contains '..',
// resolves (through symlinks) outside base_dir, does not exist, or the range is out of bounds.
ExternalLocation resolve_external_location(const ::onnx::TensorProto& tensor,
                                           const std::filesystem::path& base_dir);

bool uses_external_data(const ::onnx::TensorProto& tensor);

// Declared element count, checked (negative dims, overflow) — no data touched.
int64_t declared_element_count(const ::onnx::TensorProto& tensor);

// Number of bytes/elements the tensor actually carries; throws when it does not match the dims.
void validate_tensor_data(const ::onnx::TensorProto& tensor, const std::filesystem::path& base_dir);

// Decodes a TensorProto. External data are memory-mapped (no copy).
Tensor tensor_from_proto(const ::onnx::TensorProto& tensor, const std::filesystem::path& base_dir,
                         int64_t element_limit = INT64_MAX);

// Encodes into raw_data (strings into string_data).
::onnx::TensorProto tensor_to_proto(const TensorView& tensor, const std::string& name);

}  // namespace parity::onnx
