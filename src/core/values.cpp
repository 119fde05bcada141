#include "parity/core/values.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "parity/core/half.h"

namespace parity {

bool has_numeric_values(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: case DType::kFloat64: case DType::kFloat16: case DType::kBFloat16:
    case DType::kInt8: case DType::kInt16: case DType::kInt32: case DType::kInt64:
    case DType::kUInt8: case DType::kUInt16: case DType::kUInt32: case DType::kUInt64:
    case DType::kBool:
      return true;
    default:
      return false;
  }
}

double element_as_double(const TensorView& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return t.data<float>()[i];
    case DType::kFloat64: return t.data<double>()[i];
    case DType::kFloat16: return float16_bits_to_float(t.data<uint16_t>()[i]);
    case DType::kBFloat16: return bfloat16_bits_to_float(t.data<uint16_t>()[i]);
    case DType::kInt8: return t.data<int8_t>()[i];
    case DType::kInt16: return t.data<int16_t>()[i];
    case DType::kInt32: return t.data<int32_t>()[i];
    case DType::kInt64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kUInt8: return t.data<uint8_t>()[i];
    case DType::kUInt16: return t.data<uint16_t>()[i];
    case DType::kUInt32: return t.data<uint32_t>()[i];
    case DType::kUInt64: return static_cast<double>(t.data<uint64_t>()[i]);
    case DType::kBool: return t.data<uint8_t>()[i] ? 1.0 : 0.0;
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

namespace {

std::string format_element(const TensorView& t, int64_t i) {
  if (t.dtype() == DType::kString) return fmt::format("'{}'", t.data<std::string>()[i]);
  if (t.dtype() == DType::kBool) return t.data<uint8_t>()[i] ? "True" : "False";
  double v = element_as_double(t, i);
  if (is_integer(t.dtype())) {
    if (t.dtype() == DType::kInt64) return std::to_string(t.data<int64_t>()[i]);
    if (t.dtype() == DType::kUInt64) return std::to_string(t.data<uint64_t>()[i]);
    return fmt::format("{}", static_cast<int64_t>(v));
  }
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (t.dtype() == DType::kFloat32 || t.dtype() == DType::kFloat16 || t.dtype() == DType::kBFloat16)
    return fmt::format("{}", static_cast<float>(v));
  return fmt::format("{}", v);
}

void format_axis(const TensorView& t, std::size_t axis, int64_t& index, std::string& out) {
  if (axis == t.shape().size()) {
    out += format_element(t, index++);
    return;
  }
  out += '[';
  for (int64_t j = 0; j < t.shape()[axis]; ++j) {
    if (j) out += ", ";
    format_axis(t, axis + 1, index, out);
  }
  out += ']';
}

}  // namespace

std::string format_values(const TensorView& t, int64_t max_elements) {
  int64_t n = t.size();
  if (n > max_elements) return fmt::format("<{} values>", n);
  if (!has_numeric_values(t.dtype()) && t.dtype() != DType::kString)
    return fmt::format("<{} values of {}>", n, dtype_name(t.dtype()));
  std::string out;
  int64_t index = 0;
  format_axis(t, 0, index, out);
  return out;
}

}  // namespace parity
