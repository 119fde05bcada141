#include "display/numpy_tensor_text.h"

#include <fmt/format.h>

#include "parity/core/python_format.h"
#include "parity/core/dtype_dispatch.h"
#include "parity/core/error.h"
#include "parity/core/float8.h"
#include "parity/core/half.h"
#include "parity/onnx/tensor_proto.h"

namespace parity::cli {
namespace {

// Whether `text` is valid UTF-8 (what Python's bytes.decode("utf-8") accepts).
bool is_valid_utf8(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size()) {
    auto byte = static_cast<unsigned char>(text[i]);
    std::size_t continuation = 0;
    uint32_t code = byte;
    if (byte >= 0x80) {
      if (byte >= 0xC2 && byte <= 0xDF) continuation = 1, code = byte & 0x1F;
      else if (byte >= 0xE0 && byte <= 0xEF) continuation = 2, code = byte & 0x0F;
      else if (byte >= 0xF0 && byte <= 0xF4) continuation = 3, code = byte & 0x07;
      else return false;
    }
    if (continuation > 0 && i + continuation >= text.size()) return false;
    for (std::size_t k = 1; k <= continuation; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3F);
    }
    if ((continuation == 2 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF))) ||
        (continuation == 3 && (code < 0x10000 || code > 0x10FFFF)))
      return false;
    i += continuation + 1;
  }
  return true;
}

Shape shape_of(const ::onnx::TensorProto& tensor) { return Shape(tensor.dims().begin(), tensor.dims().end()); }

std::string string_tensor_text(const ::onnx::TensorProto& tensor) {
  Shape shape = shape_of(tensor);
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  if (count != tensor.string_data_size())
    throw InvalidInputError(fmt::format("string tensor '{}' holds {} strings, its dims need {}", tensor.name(),
                                        tensor.string_data_size(), count));
  for (const auto& text : tensor.string_data())
    if (!is_valid_utf8(text))
      throw InvalidInputError(fmt::format("string tensor '{}' holds bytes that are not UTF-8", tensor.name()));
  if (shape.empty()) return tensor.string_data(0);
  return numpy_array_str_of_elements(
      shape, [&](int64_t i) { return python_str_repr(tensor.string_data(static_cast<int>(i))); });
}

// The `bits`-wide field at element i of a packed tensor (low bits first, as ONNX stores them).
uint32_t packed_field(const TensorView& view, int64_t i, int bits) {
  const auto* bytes = view.data<uint8_t>();
  int64_t bit = i * bits;
  return (bytes[bit / 8] >> (bit % 8)) & ((1u << bits) - 1);
}

// ml_dtypes' str() of one item: the value as a C++ stream prints a float ("%g").
std::string ml_dtypes_item(double value) { return fmt::format("{:g}", value); }

}  // namespace

std::string numpy_tensor_text(const ::onnx::TensorProto& proto, const onnx::Model& model) {
  if (proto.data_type() == ::onnx::TensorProto::STRING) return string_tensor_text(proto);
  Tensor tensor = onnx::tensor_values(model, proto);
  const TensorView view = tensor.view();
  const DType dtype = view.dtype();
  // numpy's own types (bfloat16 is ml_dtypes', printed item by item below).
  if (dtype != DType::kBFloat16 && dtype_in<NumericAndBoolTypes>(dtype)) return numpy_array_str(view);
  std::function<std::string(int64_t)> item;
  switch (dtype) {
    case DType::kBFloat16:
      item = [&](int64_t i) { return ml_dtypes_item(bfloat16_bits_to_float(view.data<uint16_t>()[i])); };
      break;
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
      item = [&](int64_t i) { return ml_dtypes_item(minifloat_to_float(view.data<uint8_t>()[i], dtype)); };
      break;
    case DType::kFloat8E8M0:
      item = [&](int64_t i) { return ml_dtypes_item(e8m0_to_float(view.data<uint8_t>()[i])); };
      break;
    case DType::kFloat4E2M1:
      item = [&](int64_t i) {
        return ml_dtypes_item(minifloat_to_float(static_cast<uint8_t>(packed_field(view, i, 4)), dtype));
      };
      break;
    case DType::kUInt4:
    case DType::kUInt2: {
      int bits = dtype == DType::kUInt4 ? 4 : 2;
      item = [&, bits](int64_t i) { return std::to_string(packed_field(view, i, bits)); };
      break;
    }
    case DType::kInt4:
    case DType::kInt2: {
      int bits = dtype == DType::kInt4 ? 4 : 2;
      item = [&, bits](int64_t i) {
        auto field = static_cast<int32_t>(packed_field(view, i, bits));
        return std::to_string(field >= (1 << (bits - 1)) ? field - (1 << bits) : field);
      };
      break;
    }
    default:
      throw UnsupportedError(
          fmt::format("tensor '{}': showing values of type {} is not supported", proto.name(), dtype_name(dtype)));
  }
  return numpy_array_str_of_elements(view.shape(), item);
}

}  // namespace parity::cli
