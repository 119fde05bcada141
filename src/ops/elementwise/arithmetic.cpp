// Binary arithmetic with numpy broadcasting: Add, Sub, Mul, Div, Pow, Mod. Integer arithmetic
// wraps around (two's complement); integer division truncates toward zero like C.
#include <cmath>

#include "elementwise/elementwise_util.h"

namespace parity::ops {
namespace {

using namespace elementwise;

// out = op(a, b): float types computed in C by float_op, integer types by int_op.
template <typename FloatOp, typename IntOp>
void arithmetic(KernelContext& ctx, FloatOp&& float_op, IntOp&& int_op) {
  const Tensor& a = ctx.input(0);
  Tensor b = legacy_broadcast_rhs(ctx, a, ctx.input(1));
  if (a.dtype() != b.dtype())
    ctx.fail("inputs have different element types: {} and {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
  if (is_floating(a.dtype())) {
    dispatch_float(a.dtype(), ctx, [&]<typename T, typename C>() {
      binary_elementwise<T, T, T>(ctx, 0, a, b, [&](T x, T y) {
        return store<T>(static_cast<C>(float_op(load<C>(x), load<C>(y))));
      });
    });
  } else {
    dispatch<IntTypes>(a.dtype(), ctx, [&]<typename T>() {
      binary_elementwise<T, T, T>(ctx, 0, a, b, [&](T x, T y) { return static_cast<T>(int_op(x, y)); });
    });
  }
}

void add_kernel(KernelContext& ctx) {
  arithmetic(ctx, [](auto x, auto y) { return x + y; }, [](auto x, auto y) { return wrap_add(x, y); });
}
void sub_kernel(KernelContext& ctx) {
  arithmetic(ctx, [](auto x, auto y) { return x - y; }, [](auto x, auto y) { return wrap_sub(x, y); });
}
void mul_kernel(KernelContext& ctx) {
  arithmetic(ctx, [](auto x, auto y) { return x * y; }, [](auto x, auto y) { return wrap_mul(x, y); });
}
void div_kernel(KernelContext& ctx) {
  arithmetic(ctx, [](auto x, auto y) { return x / y; }, [](auto x, auto y) { return int_div(x, y); });
}

// numpy's floored remainder for floats: the sign of the divisor; NaN for y == 0 or infinite x.
template <typename C>
C floor_mod(C x, C y) {
  C r = std::fmod(x, y);
  if (std::isnan(r)) return r;
  if (r != 0) {
    if ((r < 0) != (y < 0)) r += y;
  } else {
    r = std::copysign(C(0), y);
  }
  return r;
}

void mod_kernel(KernelContext& ctx) {
  const bool fmod = ctx.attr_int("fmod", 0) != 0;
  arithmetic(
      ctx,
      [&](auto x, auto y) { return fmod ? std::fmod(x, y) : floor_mod(x, y); },
      [&](auto x, auto y) { return int_mod(x, y, fmod); });
}

// base^exponent in wrap-around integer arithmetic; negative exponents give 1 / base^|e|
// truncated (0 unless |base| == 1; 0^negative -> 0).
template <typename T>
T int_pow(T base, uint64_t exponent, bool negative_exponent) {
  if (negative_exponent) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return static_cast<T>((exponent & 1) ? -1 : 1);
    }
    return 0;
  }
  uint64_t result = 1, factor = static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(base));
  if constexpr (std::is_signed_v<T>) factor = static_cast<uint64_t>(static_cast<int64_t>(base));
  while (exponent) {
    if (exponent & 1) result *= factor;
    factor *= factor;
    exponent >>= 1;
  }
  return static_cast<T>(result);
}

void pow_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  Tensor b = legacy_broadcast_rhs(ctx, a, ctx.input(1));
  dispatch<NumericTypes>(b.dtype(), ctx, [&]<typename E>() {
    if (is_floating(a.dtype())) {
      dispatch_float(a.dtype(), ctx, [&]<typename T, typename C>() {
        // A double exponent keeps its precision (numpy promotes float ** double to double).
        using P = std::conditional_t<std::is_same_v<E, double>, double, C>;
        binary_elementwise<T, E, T>(ctx, 0, a, b, [](T x, E y) {
          return store<T>(static_cast<P>(std::pow(load<P>(x), load<P>(y))));
        });
      });
      return;
    }
    dispatch<IntTypes>(a.dtype(), ctx, [&]<typename T>() {
      binary_elementwise<T, E, T>(ctx, 0, a, b, [](T x, E y) {
        if constexpr (is_float_v<E>) {
          return float_to_int<T>(std::pow(static_cast<double>(x), load<double>(y)));
        } else if constexpr (std::is_signed_v<E>) {
          return int_pow<T>(x, y < 0 ? 0 - static_cast<uint64_t>(y) : static_cast<uint64_t>(y), y < 0);
        } else {
          return int_pow<T>(x, static_cast<uint64_t>(y), false);
        }
      });
    });
  });
}

}  // namespace

PARITY_KERNEL("", "Add", 1, add_kernel);
PARITY_KERNEL("", "Sub", 1, sub_kernel);
PARITY_KERNEL("", "Mul", 1, mul_kernel);
PARITY_KERNEL("", "Div", 1, div_kernel);
PARITY_KERNEL("", "Mod", 10, mod_kernel);
PARITY_KERNEL("", "Pow", 1, pow_kernel);

}  // namespace parity::ops
