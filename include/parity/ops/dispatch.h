// dtype dispatch: one typed visitor instead of a switch in every kernel.
//
//   dispatch<NumericTypes>(tensor.dtype(), ctx, [&]<typename T>() { ... });
//
// calls the lambda with T = the C++ element type (float, double, Float16, BFloat16, int8_t ...,
// bool, std::string); a dtype outside the list raises UnsupportedError naming the node and dtype.
// Float16/BFloat16 are computed in float (`compute_t<T>`) and rounded once on store. The type lists
// and the visitor itself are core's (parity/core/dtype_dispatch.h); this adds the kernel's context.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "parity/core/dtype_dispatch.h"
#include "parity/core/half.h"
#include "parity/ops/kernel.h"

namespace parity::ops {

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
// Throws UnsupportedError naming the node (when there is one) and the dtype.
[[noreturn]] inline void unsupported_dtype(DType dtype, const KernelContext* ctx) {
  std::string where = ctx ? ctx->label() + ": " : std::string();
  throw UnsupportedError(where + "element type " + std::string(dtype_name(dtype)) + " is not supported here");
}

template <typename List, typename Fn>
decltype(auto) dispatch_impl(DType dtype, const KernelContext* ctx, Fn&& fn) {
  using Result = decltype(fn.template operator()<first_type_t<List>>());
  return visit_dtype<List>(dtype, fn, [&]() -> Result { unsupported_dtype(dtype, ctx); });
}
}  // namespace detail

template <typename List, typename Fn>
decltype(auto) dispatch(DType dtype, const KernelContext& ctx, Fn&& fn) {
  return detail::dispatch_impl<List>(dtype, &ctx, std::forward<Fn>(fn));
}
template <typename List, typename Fn>
decltype(auto) dispatch(DType dtype, Fn&& fn) {
  return detail::dispatch_impl<List>(dtype, nullptr, std::forward<Fn>(fn));
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
