// Large weights left in the model file: the protobuf wire format is walked (without touching the
// weight bytes), the raw_data of large graph initializers is cut out, and the rest is parsed.
// The loader then points each cut initializer at its bytes in the model file itself through an
// ONNX external-data reference, so the weights are read through memory maps when used instead of
// being held in the parsed model (see LoadOptions::lazy_weights).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parity::onnx::detail {

struct CutWeight {
  int initializer;  // index in the main graph's initializer list
  uint64_t offset;  // of the raw bytes in the file
  uint64_t length;
};

struct CutModel {
  std::string bytes;  // the model without the cut raw_data fields
  std::vector<CutWeight> weights;
};

// Nothing when there is nothing to cut or the bytes are not laid out as expected (one graph
// field; well-formed lengths): the caller then parses the file whole, which reports any damage.
std::optional<CutModel> cut_large_weights(std::string_view file, std::size_t threshold);

}  // namespace parity::onnx::detail
