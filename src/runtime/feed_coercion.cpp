#include "parity/runtime/feed_coercion.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "parity/core/error.h"
#include "parity/core/half.h"
#include "parity/core/logger.h"

namespace parity::runtime {
namespace {

bool is_castable(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt8:
    case DType::kUInt16:
    case DType::kUInt32:
    case DType::kUInt64:
    case DType::kBool:
      return true;
    default:
      return false;
  }
}

// A source element: integers are kept as integers (int64/uint64 beyond 2^53 stay exact when the
// target is an integer type), floats as double (every float16/bfloat16/float32 value is exact).
struct Element {
  enum class Kind { kSigned, kUnsigned, kFloating } kind;
  int64_t signed_value = 0;
  uint64_t unsigned_value = 0;
  double float_value = 0;
};

Element read_element(const Tensor& tensor, int64_t i) {
  switch (tensor.dtype()) {
    case DType::kFloat16:
      return {Element::Kind::kFloating, 0, 0, float16_bits_to_float(tensor.data<uint16_t>()[i])};
    case DType::kBFloat16:
      return {Element::Kind::kFloating, 0, 0, bfloat16_bits_to_float(tensor.data<uint16_t>()[i])};
    case DType::kFloat32:
      return {Element::Kind::kFloating, 0, 0, tensor.data<float>()[i]};
    case DType::kFloat64:
      return {Element::Kind::kFloating, 0, 0, tensor.data<double>()[i]};
    case DType::kInt8:
      return {Element::Kind::kSigned, tensor.data<int8_t>()[i]};
    case DType::kInt16:
      return {Element::Kind::kSigned, tensor.data<int16_t>()[i]};
    case DType::kInt32:
      return {Element::Kind::kSigned, tensor.data<int32_t>()[i]};
    case DType::kInt64:
      return {Element::Kind::kSigned, tensor.data<int64_t>()[i]};
    case DType::kUInt8:
      return {Element::Kind::kUnsigned, 0, tensor.data<uint8_t>()[i]};
    case DType::kUInt16:
      return {Element::Kind::kUnsigned, 0, tensor.data<uint16_t>()[i]};
    case DType::kUInt32:
      return {Element::Kind::kUnsigned, 0, tensor.data<uint32_t>()[i]};
    case DType::kUInt64:
      return {Element::Kind::kUnsigned, 0, tensor.data<uint64_t>()[i]};
    case DType::kBool:
      return {Element::Kind::kUnsigned, 0, static_cast<uint64_t>(tensor.data<bool>()[i] ? 1 : 0)};
    default:
      raise<InternalError>("cast_like_numpy: {} is not castable", dtype_name(tensor.dtype()));
  }
}

double as_double(const Element& e) {
  switch (e.kind) {
    case Element::Kind::kSigned:
      return static_cast<double>(e.signed_value);
    case Element::Kind::kUnsigned:
      return static_cast<double>(e.unsigned_value);
    default:
      return e.float_value;
  }
}

// numpy's float -> integer astype truncates toward zero; NaN, infinities and values outside int64
// have no defined result in numpy (x86 gives the "integer indefinite" value), so they go to the
// int64 minimum here and are flagged.
int64_t float_to_int64(double value, bool& out_of_range) {
  if (!(value >= -9223372036854775808.0 && value < 9223372036854775808.0)) {
    out_of_range = true;
    return std::numeric_limits<int64_t>::min();
  }
  return static_cast<int64_t>(std::trunc(value));
}

template <typename T>
T to_integer(const Element& e, bool& out_of_range) {
  using Limits = std::numeric_limits<T>;
  if (e.kind == Element::Kind::kUnsigned) {
    if (e.unsigned_value > static_cast<uint64_t>(Limits::max())) out_of_range = true;
    return static_cast<T>(e.unsigned_value);  // modular, as numpy's astype wraps
  }
  int64_t value = e.kind == Element::Kind::kSigned ? e.signed_value : float_to_int64(e.float_value, out_of_range);
  if (e.kind == Element::Kind::kFloating && std::isfinite(e.float_value) &&
      (e.float_value < static_cast<double>(Limits::lowest()) || e.float_value > static_cast<double>(Limits::max())))
    out_of_range = true;
  if (e.kind == Element::Kind::kSigned) {
    if constexpr (Limits::is_signed) {
      if (value < static_cast<int64_t>(Limits::lowest()) || value > static_cast<int64_t>(Limits::max()))
        out_of_range = true;
    } else {
      if (value < 0 || static_cast<uint64_t>(value) > static_cast<uint64_t>(Limits::max())) out_of_range = true;
    }
  }
  return static_cast<T>(value);
}

bool finite_outside(double value, double largest) { return std::isfinite(value) && std::fabs(value) > largest; }

template <typename T>
void write_integers(const Tensor& from, Tensor& to, bool& out_of_range) {
  T* out = to.mutable_data<T>();
  for (int64_t i = 0; i < from.size(); ++i) out[i] = to_integer<T>(read_element(from, i), out_of_range);
}

}  // namespace

bool castable_like_numpy(DType from, DType to) { return is_castable(from) && is_castable(to); }

Tensor cast_like_numpy(const Tensor& tensor, DType dtype, bool* out_of_range_flag) {
  if (!castable_like_numpy(tensor.dtype(), dtype))
    raise<InternalError>("cast_like_numpy: no cast from {} to {}", dtype_name(tensor.dtype()), dtype_name(dtype));
  Tensor out = Tensor::zeros(dtype, tensor.shape());
  bool out_of_range = false;
  const int64_t count = tensor.size();
  switch (dtype) {
    case DType::kFloat64:
      for (int64_t i = 0; i < count; ++i) out.mutable_data<double>()[i] = as_double(read_element(tensor, i));
      break;
    case DType::kFloat32:
      for (int64_t i = 0; i < count; ++i) {
        double value = as_double(read_element(tensor, i));
        out_of_range |= finite_outside(value, std::numeric_limits<float>::max());
        out.mutable_data<float>()[i] = static_cast<float>(value);
      }
      break;
    case DType::kFloat16:
      for (int64_t i = 0; i < count; ++i) {
        double value = as_double(read_element(tensor, i));
        out_of_range |= finite_outside(value, 65504.0);
        out.mutable_data<uint16_t>()[i] = double_to_float16_bits(value);
      }
      break;
    case DType::kBFloat16:
      for (int64_t i = 0; i < count; ++i) {
        double value = as_double(read_element(tensor, i));
        out_of_range |= finite_outside(value, std::numeric_limits<float>::max());
        out.mutable_data<uint16_t>()[i] = float_to_bfloat16_bits(static_cast<float>(value));
      }
      break;
    case DType::kBool:
      for (int64_t i = 0; i < count; ++i) {
        Element e = read_element(tensor, i);
        bool value = e.kind == Element::Kind::kSigned     ? e.signed_value != 0
                     : e.kind == Element::Kind::kUnsigned ? e.unsigned_value != 0
                                                          : e.float_value != 0.0;  // NaN is true, as numpy
        out.mutable_data<bool>()[i] = value;
      }
      break;
    case DType::kInt8: write_integers<int8_t>(tensor, out, out_of_range); break;
    case DType::kInt16: write_integers<int16_t>(tensor, out, out_of_range); break;
    case DType::kInt32: write_integers<int32_t>(tensor, out, out_of_range); break;
    case DType::kInt64: write_integers<int64_t>(tensor, out, out_of_range); break;
    case DType::kUInt8: write_integers<uint8_t>(tensor, out, out_of_range); break;
    case DType::kUInt16: write_integers<uint16_t>(tensor, out, out_of_range); break;
    case DType::kUInt32: write_integers<uint32_t>(tensor, out, out_of_range); break;
    case DType::kUInt64: write_integers<uint64_t>(tensor, out, out_of_range); break;
    default:
      break;
  }
  if (out_of_range_flag) *out_of_range_flag = out_of_range;
  return out;
}

void coerce_feed_dtypes(const TensorMetadata& metadata, NamedTensors& feed) {
  for (auto& [name, tensor] : feed) {
    const TensorInfo* info = metadata.find(name);
    if (!info || info->dtype == DType::kUndefined || tensor.dtype() == info->dtype) continue;
    if (!castable_like_numpy(tensor.dtype(), info->dtype)) continue;
    log::warning("Input tensor: {} | Buffer dtype ({}) does not match expected input dtype ({}), attempting to cast.",
                 name, dtype_name(tensor.dtype()), dtype_name(info->dtype));
    bool out_of_range = false;
    tensor = cast_like_numpy(tensor, info->dtype, &out_of_range);
    if (out_of_range)
      log::warning("Some values in this input are out of range of {}. Unexpected behavior may ensue!",
                   dtype_name(info->dtype));
  }
}

}  // namespace parity::runtime
