// Helpers shared by the elementwise kernels (unary math, arithmetic, comparisons, activations).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "parity/core/float8.h"
#include "parity/ops/broadcast.h"
#include "parity/ops/dispatch.h"

namespace parity::ops::elementwise {

// Reads a stored element into the compute type C (half types through float, exactly).
template <typename C, typename T>
inline C load(T value) {
  if constexpr (is_half_v<T>) return static_cast<C>(static_cast<float>(value));
  else return static_cast<C>(value);
}

// Rounds a compute value into the storage type T once (double -> half types without going
// through float).
template <typename T, typename C>
inline T store(C value) {
  if constexpr (std::is_same_v<T, C>) return value;
  else if constexpr (std::is_same_v<T, Float16> && std::is_same_v<C, double>)
    return Float16::from_bits(double_to_float16_bits(value));
  else if constexpr (std::is_same_v<T, BFloat16> && std::is_same_v<C, double>)
    return BFloat16::from_bits(double_to_bfloat16_bits(value));
  else return convert<T>(value);
}

// The unsigned type of the same width (for wrap-around integer arithmetic without UB).
template <typename T>
using unsigned_t = std::make_unsigned_t<T>;

template <typename T>
inline T wrap_add(T a, T b) { return static_cast<T>(static_cast<unsigned_t<T>>(a) + static_cast<unsigned_t<T>>(b)); }
template <typename T>
inline T wrap_sub(T a, T b) { return static_cast<T>(static_cast<unsigned_t<T>>(a) - static_cast<unsigned_t<T>>(b)); }
template <typename T>
inline T wrap_mul(T a, T b) {
  // Promote to at least unsigned int so uint16 * uint16 does not overflow a signed int.
  using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, unsigned_t<T>>;
  return static_cast<T>(static_cast<W>(static_cast<unsigned_t<T>>(a)) * static_cast<W>(static_cast<unsigned_t<T>>(b)));
}
template <typename T>
inline T wrap_neg(T a) { return static_cast<T>(unsigned_t<T>(0) - static_cast<unsigned_t<T>>(a)); }

// C-style truncating integer division; x / 0 -> 0 (as numpy), MIN / -1 wraps to MIN.
template <typename T>
inline T int_div(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return wrap_neg(a);
  }
  return static_cast<T>(a / b);
}

// Integer remainder: fmod -> sign of the dividend (C), otherwise sign of the divisor (Python).
// x % 0 -> 0.
template <typename T>
inline T int_mod(T a, T b, bool fmod) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;
    T r = static_cast<T>(a % b);
    if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  } else {
    return static_cast<T>(a % b);
  }
}

// A float converted to an integer type: truncated toward zero; NaN and values outside int64
// (and uint64 for uint64) give the type's minimum (as x86 conversions do) before wrapping.
template <typename I, typename F>
inline I float_to_int(F value) {
  double v = static_cast<double>(value);
  if constexpr (std::is_same_v<I, uint64_t>) {
    if (v >= 0 && v < 18446744073709551616.0) return static_cast<uint64_t>(v);
  }
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
    return static_cast<I>(std::numeric_limits<int64_t>::min());
  return static_cast<I>(static_cast<int64_t>(v));
}

// ONNX opsets before 7: `broadcast`=1 aligns B with A starting at `axis` (default: trailing).
// Returns B reshaped so that numpy broadcasting does the same; B unchanged otherwise.
inline Tensor legacy_broadcast_rhs(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (ctx.opset() >= 7 || ctx.attr_int("broadcast", 0) == 0) return b;
  int64_t rank_a = a.rank(), rank_b = b.rank();
  if (rank_b > rank_a) ctx.fail("broadcast: B has rank {}, more than A's rank {}", rank_b, rank_a);
  int64_t axis = ctx.has_attribute("axis") ? ctx.attr_int("axis") : rank_a - rank_b;
  if (axis < 0) axis += rank_a;
  if (axis < 0 || axis > rank_a - rank_b)  // not axis + rank_b > rank_a: an axis near INT64_MAX overflows that
    ctx.fail("broadcast axis {} does not fit B of rank {} into A of rank {}", axis, rank_b, rank_a);
  Shape shape(static_cast<std::size_t>(rank_a - axis), 1);
  for (int64_t i = 0; i < rank_b; ++i) shape[static_cast<std::size_t>(i)] = b.shape()[static_cast<std::size_t>(i)];
  return b.reshaped(shape);
}

// y = f(x) over a float tensor (input 0 -> output 0), computed in C (double in fp64 mode);
// f is a generic lambda taking and returning C.
template <typename F>
void unary_float(KernelContext& ctx, F&& f) {
  const Tensor& x = ctx.input(0);
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    unary_elementwise<T, T>(ctx, 0, x, [&](T v) { return store<T>(static_cast<C>(f(load<C>(v)))); });
  });
}

// Reads a float attribute as C.
template <typename C>
inline C attr_c(const KernelContext& ctx, const char* name) {
  return static_cast<C>(ctx.attr_float(name));
}

}  // namespace parity::ops::elementwise
