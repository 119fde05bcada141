// Cuts the large raw_data fields of the main graph's initializers out of a serialized ModelProto
// (protobuf wire format: ModelProto.graph = 7, GraphProto.initializer = 5, TensorProto.raw_data = 9,
// .external_data = 13, .data_location = 14).
#include "lazy_weights.h"

#include <optional>

namespace parity::onnx::detail {
namespace {

constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kTensorRawData = 9;
constexpr uint32_t kTensorExternalData = 13;
constexpr uint32_t kTensorDataLocation = 14;
constexpr uint32_t kLengthDelimited = 2;

class Reader {
 public:
  Reader(std::string_view bytes, std::size_t begin, std::size_t end) : bytes_(bytes), pos_(begin), end_(end) {}
  bool done() const { return pos_ >= end_; }
  std::size_t pos() const { return pos_; }

  // One field: its number, wire type and, for length-delimited fields, the payload's range.
  // False on malformed input.
  bool next(uint32_t& field, uint32_t& wire_type, std::size_t& payload, std::size_t& payload_length) {
    uint64_t tag = 0;
    if (!varint(tag) || tag == 0) return false;
    field = static_cast<uint32_t>(tag >> 3);
    wire_type = static_cast<uint32_t>(tag & 7);
    payload = pos_;
    payload_length = 0;
    switch (wire_type) {
      case 0: {
        uint64_t ignored = 0;
        return varint(ignored);
      }
      case 1: return skip(8);
      case 5: return skip(4);
      case kLengthDelimited: {
        uint64_t length = 0;
        if (!varint(length) || length > end_ - pos_) return false;
        payload = pos_;
        payload_length = static_cast<std::size_t>(length);
        pos_ += payload_length;
        return true;
      }
      default: return false;  // groups are not used by ONNX
    }
  }

 private:
  bool varint(uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= end_) return false;
      auto byte = static_cast<uint8_t>(bytes_[pos_++]);
      value |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) return true;
    }
    return false;
  }
  bool skip(std::size_t n) {
    if (n > end_ - pos_) return false;
    pos_ += n;
    return true;
  }

  std::string_view bytes_;
  std::size_t pos_, end_;
};

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_message(std::string& out, uint32_t field, const std::string& payload) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | kLengthDelimited);
  put_varint(out, payload.size());
  out += payload;
}

// The tensor without its raw_data when that is large and the tensor is not already external.
bool cut_tensor(std::string_view file, std::size_t begin, std::size_t end, std::size_t threshold,
                std::string& out, std::optional<CutWeight>& cut) {
  Reader reader(file, begin, end);
  std::size_t raw = 0, raw_length = 0, raw_field_start = 0, raw_field_end = 0;
  bool external = false;
  int found = 0;
  while (!reader.done()) {
    std::size_t start = reader.pos();
    uint32_t field = 0, wire_type = 0;
    std::size_t payload = 0, length = 0;
    if (!reader.next(field, wire_type, payload, length)) return false;
    if (field == kTensorExternalData || field == kTensorDataLocation) external = true;
    if (field == kTensorRawData && wire_type == kLengthDelimited) {
      ++found;
      raw = payload;
      raw_length = length;
      raw_field_start = start;
      raw_field_end = reader.pos();
    }
  }
  // Repeated raw_data fields (protobuf keeps the last) are rare enough to leave alone.
  if (found != 1 || external || raw_length < threshold) {
    out.append(file.substr(begin, end - begin));
    return true;
  }
  out.append(file.substr(begin, raw_field_start - begin));
  out.append(file.substr(raw_field_end, end - raw_field_end));
  cut = CutWeight{0, raw, raw_length};
  return true;
}

bool cut_graph(std::string_view file, std::size_t begin, std::size_t end, std::size_t threshold,
               std::string& out, std::vector<CutWeight>& weights) {
  Reader reader(file, begin, end);
  int initializer = 0;
  while (!reader.done()) {
    std::size_t start = reader.pos();
    uint32_t field = 0, wire_type = 0;
    std::size_t payload = 0, length = 0;
    if (!reader.next(field, wire_type, payload, length)) return false;
    if (field == kGraphInitializer && wire_type == kLengthDelimited) {
      std::string tensor;
      std::optional<CutWeight> cut;
      if (!cut_tensor(file, payload, payload + length, threshold, tensor, cut)) return false;
      if (cut) {
        cut->initializer = initializer;
        weights.push_back(*cut);
      }
      ++initializer;
      put_message(out, kGraphInitializer, tensor);
    } else {
      out.append(file.substr(start, reader.pos() - start));
    }
  }
  return true;
}

}  // namespace

std::optional<CutModel> cut_large_weights(std::string_view file, std::size_t threshold) {
  CutModel model;
  model.bytes.reserve(1 << 20);
  Reader reader(file, 0, file.size());
  int graphs = 0;
  while (!reader.done()) {
    std::size_t start = reader.pos();
    uint32_t field = 0, wire_type = 0;
    std::size_t payload = 0, length = 0;
    if (!reader.next(field, wire_type, payload, length)) return std::nullopt;
    if (field == kModelGraph && wire_type == kLengthDelimited) {
      if (++graphs > 1) return std::nullopt;  // protobuf would merge them; not worth following
      std::string graph;
      if (!cut_graph(file, payload, payload + length, threshold, graph, model.weights)) return std::nullopt;
      put_message(model.bytes, kModelGraph, graph);
    } else {
      model.bytes.append(file.substr(start, reader.pos() - start));
    }
  }
  if (model.weights.empty()) return std::nullopt;
  return model;
}

}  // namespace parity::onnx::detail
