// dtype dispatch: one typed visitor instead of a switch in every kernel.
//
//   dispatch<NumericTypes>(tensor.dtype(), ctx, [&]<typename T>() { ... });
//
// calls the lambda with T = the C++ element type (float, double, Float16, BFloat16, int8_t ...,
// bool, std::string); a dtype outside the list raises UnsupportedError naming the node and dtype.
// Float16/BFloat16 are computed in float (`compute_t<T>`) and rounded once on store.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "parity/core/half.h"
#include "parity/ops/kernel.h"

namespace parity::ops {

template <typename... Ts>
struct TypeList {};

template <typename... A, typename... B>
constexpr TypeList<A..., B...> operator+(TypeList<A...>, TypeList<B...>) { return {}; }

using FloatTypes = TypeList<float, double, Float16, BFloat16>;
using SignedIntTypes = TypeList<int8_t, int16_t, int32_t, int64_t>;
using UnsignedIntTypes = TypeList<uint8_t, uint16_t, uint32_t, uint64_t>;
using IntTypes = decltype(SignedIntTypes{} + UnsignedIntTypes{});
using NumericTypes = decltype(FloatTypes{} + IntTypes{});
using SignedNumericTypes = decltype(FloatTypes{} + SignedIntTypes{});
using NumericAndBoolTypes = decltype(NumericTypes{} + TypeList<bool>{});
using AllTypes = decltype(NumericAndBoolTypes{} + TypeList<std::string>{});

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  else if constexpr (std::is_same_v<T, double>) return DType::kFloat64;
  else if constexpr (std::is_same_v<T, Float16>) return DType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DType::kBFloat16;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::kInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::kInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::kUInt8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::kUInt16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::kUInt32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::kUInt64;
  else if constexpr (std::is_same_v<T, bool>) return DType::kBool;
  else if constexpr (std::is_same_v<T, std::string>) return DType::kString;
  else static_assert(sizeof(T) == 0, "no DType for this C++ type");
}

template <typename T>
constexpr bool is_half_v = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;
template <typename T>
constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

// The type arithmetic on T is done in.
template <typename T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

// Converts between element types, including Float16/BFloat16 (round to nearest even).
template <typename To, typename From>
inline To convert(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (is_half_v<From>) {
    return convert<To>(static_cast<float>(value));
  } else if constexpr (is_half_v<To> && std::is_same_v<From, double>) {
    return To::from_double(value);  // one rounding (fp64 reference mode)
  } else if constexpr (is_half_v<To>) {
    return To(static_cast<float>(value));
  } else if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else {
    return static_cast<To>(value);
  }
}

namespace detail {
template <typename Fn, typename T, typename... Rest>
decltype(auto) dispatch_impl(DType dtype, const KernelContext* ctx, Fn&& fn, TypeList<T, Rest...>) {
  if (dtype == dtype_of<T>()) return fn.template operator()<T>();
  if constexpr (sizeof...(Rest) > 0) {
    return dispatch_impl(dtype, ctx, std::forward<Fn>(fn), TypeList<Rest...>{});
  } else {
    std::string where = ctx ? ctx->label() + ": " : std::string();
    throw UnsupportedError(where + "element type " + std::string(dtype_name(dtype)) +
                           " is not supported here");
  }
}
}  // namespace detail

template <typename List, typename Fn>
decltype(auto) dispatch(DType dtype, const KernelContext& ctx, Fn&& fn) {
  return detail::dispatch_impl(dtype, &ctx, std::forward<Fn>(fn), List{});
}
template <typename List, typename Fn>
decltype(auto) dispatch(DType dtype, Fn&& fn) {
  return detail::dispatch_impl(dtype, nullptr, std::forward<Fn>(fn), List{});
}

// Float kernels that honour --ref-precision fp64: calls fn<T, C>() with C = double in fp64 mode,
// otherwise compute_t<T>.
template <typename Fn>
decltype(auto) dispatch_float(DType dtype, const KernelContext& ctx, Fn&& fn) {
  return dispatch<FloatTypes>(dtype, ctx, [&]<typename T>() {
    if (ctx.fp64()) return fn.template operator()<T, double>();
    return fn.template operator()<T, compute_t<T>>();
  });
}

}  // namespace parity::ops
