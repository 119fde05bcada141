#include "ort_values.h"

#include <cstring>
#include <string>
#include <vector>

#include "parity/core/error.h"

namespace parity::runtime::onnxrt {
namespace {

// Releases a type-and-shape info on scope exit.
struct ShapeInfo {
  const OrtApi& api;
  OrtTensorTypeAndShapeInfo* info = nullptr;
  ~ShapeInfo() {
    if (info) api.ReleaseTensorTypeAndShapeInfo(info);
  }
};

}  // namespace

ONNXTensorElementDataType to_ort_type(DType dtype) {
  int value = static_cast<int>(dtype);
  // ONNX Runtime's enum follows ONNX's TensorProto numbering (newer versions add 23 float4e2m1,
  // 24 float8e8m0, 25/26 2-bit ints beyond the headers' list); whether the loaded library
  // supports a type is its own call, reported with its own error.
  if (value <= 0 || value > static_cast<int>(DType::kInt2))
    raise<UnsupportedError>("dtype {} has no ONNX Runtime equivalent", dtype_name(dtype));
  return static_cast<ONNXTensorElementDataType>(value);
}

DType from_ort_type(ONNXTensorElementDataType type) {
  int value = static_cast<int>(type);
  if (value <= 0 || value > static_cast<int>(DType::kFloat6E3M2))
    raise<UnsupportedError>("ONNX Runtime returned element type {}, which Parity does not know",
                            value);
  return static_cast<DType>(value);
}

Value::~Value() {
  if (value_) library_->api().ReleaseValue(value_);
}

OrtValue* make_input_value(const Library& library, const Tensor& tensor) {
  const OrtApi& api = library.api();
  const Shape& shape = tensor.shape();
  OrtValue* value = nullptr;
  if (tensor.dtype() == DType::kString) {
    library.check(
        api.CreateTensorAsOrtValue(library.default_allocator(), shape.data(), shape.size(),
                                   ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, &value),
        "allocating a string tensor");
    try {
      // Element by element with explicit lengths, so strings with embedded NULs survive.
      const auto* strings = tensor.data<std::string>();
      for (int64_t i = 0; i < tensor.size(); ++i) {
        char* buffer = nullptr;
        library.check(api.GetResizedStringTensorElementBuffer(value, static_cast<std::size_t>(i),
                                                              strings[i].size(), &buffer),
                      "filling a string tensor");
        if (!strings[i].empty()) std::memcpy(buffer, strings[i].data(), strings[i].size());
      }
    } catch (...) {
      api.ReleaseValue(value);
      throw;
    }
    return value;
  }
  static std::byte empty_buffer[8];
  void* data =
      tensor.byte_size() ? const_cast<void*>(tensor.raw()) : static_cast<void*>(empty_buffer);
  library.check(api.CreateTensorWithDataAsOrtValue(library.cpu_memory_info(), data,
                                                   tensor.byte_size(), shape.data(), shape.size(),
                                                   to_ort_type(tensor.dtype()), &value),
                "wrapping an input tensor");
  return value;
}

ValuePtr value_from_tensor(const LibraryPtr& library, const Tensor& tensor) {
  OrtValue* value = make_input_value(*library, tensor);
  return std::make_shared<Value>(library, value,
                                 tensor.dtype() == DType::kString ? Tensor() : tensor);
}

std::optional<Tensor> tensor_from_value(const ValuePtr& holder) {
  const Library& library = holder->library();
  const OrtApi& api = library.api();
  OrtValue* value = holder->get();
  ONNXType kind = ONNX_TYPE_UNKNOWN;
  library.check(api.GetValueType(value, &kind), "reading an output's type");
  if (kind == ONNX_TYPE_OPTIONAL) {
    int has_value = 0;
    library.check(api.HasValue(value, &has_value), "reading an optional output");
    if (!has_value) return std::nullopt;
    int is_tensor = 0;
    library.check(api.IsTensor(value, &is_tensor), "reading an optional output");
    if (!is_tensor) return std::nullopt;
  } else if (kind != ONNX_TYPE_TENSOR) {
    return std::nullopt;
  }

  ShapeInfo info{api};
  library.check(api.GetTensorTypeAndShape(value, &info.info), "reading an output's shape");
  ONNXTensorElementDataType element_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  library.check(api.GetTensorElementType(info.info, &element_type),
                "reading an output's element type");
  std::size_t rank = 0;
  library.check(api.GetDimensionsCount(info.info, &rank), "reading an output's rank");
  Shape shape(rank);
  library.check(api.GetDimensions(info.info, shape.data(), rank), "reading an output's dimensions");
  DType dtype = from_ort_type(element_type);
  int64_t count = checked_element_count(shape);

  if (dtype == DType::kString) {
    Tensor tensor = Tensor::zeros(DType::kString, shape);
    std::size_t total = 0;
    library.check(api.GetStringTensorDataLength(value, &total), "reading a string output");
    std::string bytes(total, '\0');
    std::vector<std::size_t> offsets(static_cast<std::size_t>(count));
    if (count > 0)
      library.check(
          api.GetStringTensorContent(value, bytes.data(), total, offsets.data(), offsets.size()),
          "reading a string output");
    auto* strings = tensor.mutable_data<std::string>();
    for (int64_t i = 0; i < count; ++i) {
      std::size_t begin = offsets[static_cast<std::size_t>(i)];
      std::size_t end = i + 1 < count ? offsets[static_cast<std::size_t>(i) + 1] : total;
      strings[i].assign(bytes, begin, end - begin);
    }
    return tensor;
  }

  void* data = nullptr;
  library.check(api.GetTensorMutableData(value, &data), "reading an output's data");
  std::size_t size = storage_bytes(dtype, count);
  // Packed types (int4...) whose last byte is partly used: ONNX Runtime leaves the unused high
  // bits as they were in memory; clear them so equal tensors have equal bytes.
  if (int bits = dtype_bits(dtype); bits < 8 && size > 0) {
    int used = static_cast<int>((static_cast<uint64_t>(count) * static_cast<uint64_t>(bits)) % 8);
    if (used)
      static_cast<unsigned char*>(data)[size - 1] &= static_cast<unsigned char>((1u << used) - 1);
  }
  holder->data_ = static_cast<std::byte*>(data);
  holder->size_ = size;
  return Tensor::borrow(dtype, std::move(shape), std::shared_ptr<Storage>(holder));
}

Tensor detach_from_inputs(Tensor output, const std::vector<const Tensor*>& inputs) {
  if (output.dtype() == DType::kString || output.byte_size() == 0) return output;
  auto begin = reinterpret_cast<std::uintptr_t>(output.raw());
  for (const Tensor* input : inputs) {
    auto input_begin = reinterpret_cast<std::uintptr_t>(input->raw());
    if (input->byte_size() && begin >= input_begin && begin < input_begin + input->byte_size())
      return Tensor::copy_of(output);
  }
  return output;
}

}  // namespace parity::runtime::onnxrt
