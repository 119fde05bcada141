#include "parity/runtime/feed_coercion.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "parity/core/dtype_dispatch.h"
#include "parity/core/error.h"
#include "parity/core/half.h"
#include "parity/core/logger.h"

namespace parity::runtime {
namespace {

bool is_castable(DType dtype) { return dtype_in<NumericAndBoolTypes>(dtype); }

// A source element: integers are kept as integers (int64/uint64 beyond 2^53 stay exact when the
// target is an integer type), floats as double (every float16/bfloat16/float32 value is exact).
struct Element {
  enum class Kind { kSigned, kUnsigned, kFloating } kind;
  int64_t signed_value = 0;
  uint64_t unsigned_value = 0;
  double float_value = 0;
};

Element read_element(const Tensor& tensor, int64_t i) {
  return visit_dtype<NumericAndBoolTypes>(
      tensor.dtype(),
      [&]<typename T>() -> Element {
        const T value = tensor.data<T>()[i];
        if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
          return {Element::Kind::kFloating, 0, 0, static_cast<float>(value)};
        else if constexpr (std::is_floating_point_v<T>)
          return {Element::Kind::kFloating, 0, 0, value};
        else if constexpr (std::is_same_v<T, bool>)
          return {Element::Kind::kUnsigned, 0, static_cast<uint64_t>(value ? 1 : 0)};
        else if constexpr (std::is_signed_v<T>)
          return {Element::Kind::kSigned, value};
        else
          return {Element::Kind::kUnsigned, 0, value};
      },
      [&]() -> Element {
        raise<InternalError>("cast_like_numpy: {} is not castable", dtype_name(tensor.dtype()));
      });
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

// The element as a T, as numpy's astype makes it; `out_of_range` is set when it does not fit.
template <typename T>
T element_as(const Element& e, bool& out_of_range) {
  if constexpr (std::is_same_v<T, double>) {
    return as_double(e);
  } else if constexpr (std::is_same_v<T, float>) {
    double value = as_double(e);
    out_of_range |= finite_outside(value, std::numeric_limits<float>::max());
    return static_cast<float>(value);
  } else if constexpr (std::is_same_v<T, Float16>) {
    double value = as_double(e);
    out_of_range |= finite_outside(value, 65504.0);
    return Float16::from_double(value);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    double value = as_double(e);
    out_of_range |= finite_outside(value, std::numeric_limits<float>::max());
    return BFloat16(static_cast<float>(value));
  } else if constexpr (std::is_same_v<T, bool>) {
    return e.kind == Element::Kind::kSigned     ? e.signed_value != 0
           : e.kind == Element::Kind::kUnsigned ? e.unsigned_value != 0
                                                : e.float_value != 0.0;  // NaN is true, as numpy
  } else {
    return to_integer<T>(e, out_of_range);
  }
}

}  // namespace

bool castable_like_numpy(DType from, DType to) { return is_castable(from) && is_castable(to); }

Tensor cast_like_numpy(const Tensor& tensor, DType dtype, bool* out_of_range_flag) {
  if (!castable_like_numpy(tensor.dtype(), dtype))
    raise<InternalError>("cast_like_numpy: no cast from {} to {}", dtype_name(tensor.dtype()), dtype_name(dtype));
  Tensor out = Tensor::zeros(dtype, tensor.shape());
  bool out_of_range = false;
  const int64_t count = tensor.size();
  visit_dtype<NumericAndBoolTypes>(
      dtype,
      [&]<typename T>() {
        T* values = out.mutable_data<T>();
        for (int64_t i = 0; i < count; ++i) values[i] = element_as<T>(read_element(tensor, i), out_of_range);
      },
      [] {});
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
