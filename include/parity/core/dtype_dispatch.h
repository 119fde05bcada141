// dtype dispatch: one typed visitor, for every layer, instead of a switch over DType in each place.
//
//   visit_dtype<NumericTypes>(tensor.dtype(), [&]<typename T>() { ... }, [&] { raise<...>(...); });
//
// calls the first lambda with T = the C++ element type of the dtype (float, double, Float16, BFloat16,
// int8_t ..., bool, std::string) when the dtype is in the list, the second (which returns the same type
// or throws) otherwise. dtype_in<List>(dtype) says whether a dtype is in a list.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "parity/core/dtype.h"
#include "parity/core/half.h"

namespace parity {

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

namespace detail {
template <typename Fn, typename Otherwise, typename T, typename... Rest>
decltype(auto) visit_dtype_in(DType dtype, Fn& fn, Otherwise& otherwise, TypeList<T, Rest...>) {
  if (dtype == dtype_of<T>()) return fn.template operator()<T>();
  if constexpr (sizeof...(Rest) > 0) {
    return visit_dtype_in(dtype, fn, otherwise, TypeList<Rest...>{});
  } else {
    return otherwise();
  }
}

template <typename... Ts>
constexpr bool dtype_in(DType dtype, TypeList<Ts...>) {
  return ((dtype == dtype_of<Ts>()) || ...);
}

template <typename List>
struct FirstType;
template <typename T, typename... Rest>
struct FirstType<TypeList<T, Rest...>> {
  using type = T;
};
}  // namespace detail

// The first type of a TypeList (what a visitor's result type is taken from).
template <typename List>
using first_type_t = typename detail::FirstType<List>::type;

template <typename List, typename Fn, typename Otherwise>
decltype(auto) visit_dtype(DType dtype, Fn&& fn, Otherwise&& otherwise) {
  return detail::visit_dtype_in(dtype, fn, otherwise, List{});
}

template <typename List>
constexpr bool dtype_in(DType dtype) {
  return detail::dtype_in(dtype, List{});
}

}  // namespace parity
