// Writes a model with its main graph's external initializers inlined, streaming their bytes
// (protobuf wire format: ModelProto.graph = 7, GraphProto.initializer = 5, TensorProto.raw_data = 9).
// Protobuf serializes known fields in field-number order and unknown fields after them, so each
// message is serialized without the field streamed here and the field is written where protobuf
// would have put it: before the first field with a higher number.
#include "inlined_save.h"

#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/onnx/tensor_proto.h"

namespace parity::onnx::detail {
namespace {

using ::onnx::TensorProto;
using WireFormat = google::protobuf::internal::WireFormatLite;

constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kTensorRawData = 9;

std::string length_delimited_header(uint32_t field, uint64_t length) {
  std::string header;
  auto put = [&header](uint64_t value) {
    while (value >= 0x80) {
      header.push_back(static_cast<char>((value & 0x7F) | 0x80));
      value >>= 7;
    }
    header.push_back(static_cast<char>(value));
  };
  put((static_cast<uint64_t>(field) << 3) | WireFormat::WIRETYPE_LENGTH_DELIMITED);
  put(length);
  return header;
}

// A serialized message cut where field `field` goes: before the first field with a higher number.
struct Split {
  std::string bytes;
  std::size_t at = 0;
  std::string_view before() const { return std::string_view(bytes).substr(0, at); }
  std::string_view after() const { return std::string_view(bytes).substr(at); }
};

Split split_at_field(std::string bytes, uint32_t field) {
  Split split{std::move(bytes), 0};
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(split.bytes.data()),
                                               static_cast<int>(split.bytes.size()));
  while (true) {
    const int position = input.CurrentPosition();
    const uint32_t tag = input.ReadTag();
    if (tag == 0 || static_cast<uint32_t>(WireFormat::GetTagFieldNumber(tag)) > field) {
      split.at = tag == 0 ? split.bytes.size() : static_cast<std::size_t>(position);
      return split;
    }
    if (!WireFormat::SkipField(&input, tag))
      raise<InternalError>("saving the model: protobuf's own serialization could not be read back");
  }
}

std::string serialize(const google::protobuf::MessageLite& message) {
  std::string bytes;
  if (!message.SerializeToString(&bytes)) raise<InternalError>("saving the model: protobuf serialization failed");
  return bytes;
}

// One initializer: serialized whole, or, when its data is external, without the data, the bytes of
// raw_data to be streamed in between.
struct Initializer {
  Split message;
  const TensorProto* external = nullptr;  // the tensor as given (external data), or nullptr
  uint64_t raw_bytes = 0;
  uint64_t size() const {
    uint64_t size = message.bytes.size();
    if (external) size += length_delimited_header(kTensorRawData, raw_bytes).size() + raw_bytes;
    return size;
  }
};

}  // namespace

void write_model_inlined(::onnx::ModelProto model, const std::filesystem::path& base_dir,
                         const std::filesystem::path& path) {
  if (!model.has_graph()) {
    write_file_atomic(path, serialize(model));
    return;
  }
  ::onnx::GraphProto graph;
  graph.Swap(model.mutable_graph());
  model.clear_graph();
  google::protobuf::RepeatedPtrField<TensorProto> tensors;
  tensors.Swap(graph.mutable_initializer());

  std::vector<Initializer> initializers;
  initializers.reserve(static_cast<std::size_t>(tensors.size()));
  uint64_t graph_size = 0;
  for (const auto& tensor : tensors) {
    Initializer& initializer = initializers.emplace_back();
    if (uses_external_data(tensor)) {
      TensorProto stripped = tensor;
      stripped.clear_external_data();
      stripped.clear_data_location();
      stripped.clear_raw_data();
      initializer.message = split_at_field(serialize(stripped), kTensorRawData);
      initializer.external = &tensor;
      initializer.raw_bytes = storage_bytes(dtype_from_onnx(tensor.data_type()), declared_element_count(tensor));
    } else {
      initializer.message = split_at_field(serialize(tensor), ~0u);
    }
    graph_size += length_delimited_header(kGraphInitializer, initializer.size()).size() + initializer.size();
  }
  const Split graph_bytes = split_at_field(serialize(graph), kGraphInitializer);
  graph_size += graph_bytes.bytes.size();
  const Split model_bytes = split_at_field(serialize(model), kModelGraph);

  AtomicFileWriter file(path);
  file.write(model_bytes.before());
  file.write(length_delimited_header(kModelGraph, graph_size));
  file.write(graph_bytes.before());
  for (const auto& initializer : initializers) {
    file.write(length_delimited_header(kGraphInitializer, initializer.size()));
    file.write(initializer.message.before());
    if (initializer.external) {
      // Read one tensor at a time (borrowed from the file's mapping where aligned).
      Tensor data = tensor_from_proto(*initializer.external, base_dir);
      if (data.byte_size() != initializer.raw_bytes)
        raise<InvalidInputError>("initializer '{}': its external data holds {} bytes, its shape declares {}",
                                 initializer.external->name(), data.byte_size(), initializer.raw_bytes);
      file.write(length_delimited_header(kTensorRawData, initializer.raw_bytes));
      file.write(data.raw(), data.byte_size());
    }
    file.write(initializer.message.after());
  }
  file.write(graph_bytes.after());
  file.write(model_bytes.after());
  file.commit();
}

}  // namespace parity::onnx::detail
