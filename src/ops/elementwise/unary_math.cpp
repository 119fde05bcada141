// Unary math: Abs, Neg, Sign, Exp, Log, Sqrt, Reciprocal, Floor, Ceil, Round, Erf, the
// trigonometric and hyperbolic functions, IsNaN, IsInf, Not, BitwiseNot.
#include <cmath>

#include "elementwise/elementwise_util.h"

namespace parity::ops {
namespace {

using namespace elementwise;

void abs_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<NumericTypes>(x.dtype(), ctx, [&]<typename T>() {
    if constexpr (is_float_v<T>) {
      unary_elementwise<T, T>(ctx, 0, x, [](T v) { return store<T>(std::fabs(load<compute_t<T>>(v))); });
    } else if constexpr (std::is_signed_v<T>) {
      unary_elementwise<T, T>(ctx, 0, x, [](T v) { return v < 0 ? wrap_neg(v) : v; });
    } else {
      unary_elementwise<T, T>(ctx, 0, x, [](T v) { return v; });
    }
  });
}

void neg_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<SignedNumericTypes>(x.dtype(), ctx, [&]<typename T>() {
    if constexpr (is_float_v<T>) {
      unary_elementwise<T, T>(ctx, 0, x, [](T v) { return store<T>(-load<compute_t<T>>(v)); });
    } else {
      unary_elementwise<T, T>(ctx, 0, x, [](T v) { return wrap_neg(v); });
    }
  });
}

void sign_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<NumericTypes>(x.dtype(), ctx, [&]<typename T>() {
    if constexpr (is_float_v<T>) {
      unary_elementwise<T, T>(ctx, 0, x, [](T v) {
        using C = compute_t<T>;
        C c = load<C>(v);
        if (std::isnan(c)) return v;
        return store<T>(c > 0 ? C(1) : c < 0 ? C(-1) : C(0));
      });
    } else {
      unary_elementwise<T, T>(ctx, 0, x, [](T v) { return static_cast<T>(v > 0 ? 1 : (v < 0 ? -1 : 0)); });
    }
  });
}

void exp_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::exp(v); }); }
void log_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::log(v); }); }
void sqrt_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::sqrt(v); }); }
void reciprocal_kernel(KernelContext& ctx) {
  unary_float(ctx, [](auto v) { return decltype(v)(1) / v; });
}
void floor_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::floor(v); }); }
void ceil_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::ceil(v); }); }
// Half to even (the default floating-point rounding mode).
void round_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::nearbyint(v); }); }
void erf_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::erf(v); }); }
void sin_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::sin(v); }); }
void cos_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::cos(v); }); }
void tan_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::tan(v); }); }
void asin_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::asin(v); }); }
void acos_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::acos(v); }); }
void atan_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::atan(v); }); }
void sinh_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::sinh(v); }); }
void cosh_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::cosh(v); }); }
void asinh_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::asinh(v); }); }
void acosh_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::acosh(v); }); }
void atanh_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::atanh(v); }); }

// Calls pred(value as float) for each element of a float tensor (incl. float8 kinds) and writes
// the bool results to output 0.
template <typename Pred>
void float_predicate(KernelContext& ctx, Pred&& pred) {
  const Tensor& x = ctx.input(0);
  if (is_minifloat(x.dtype())) {
    if (is_packed(x.dtype())) ctx.unsupported("element type {} is not supported here", dtype_name(x.dtype()));
    DType dtype = x.dtype();
    unary_elementwise<uint8_t, bool>(ctx, 0, x, [&](uint8_t v) { return pred(minifloat_to_float(v, dtype)); });
    return;
  }
  if (x.dtype() == DType::kFloat8E8M0) {
    unary_elementwise<uint8_t, bool>(ctx, 0, x, [&](uint8_t v) { return pred(e8m0_to_float(v)); });
    return;
  }
  dispatch<FloatTypes>(x.dtype(), ctx, [&]<typename T>() {
    unary_elementwise<T, bool>(ctx, 0, x, [&](T v) { return pred(load<compute_t<T>>(v)); });
  });
}

void isnan_kernel(KernelContext& ctx) {
  float_predicate(ctx, [](auto v) { return std::isnan(v); });
}

void isinf_kernel(KernelContext& ctx) {
  bool positive = ctx.attr_int("detect_positive", 1) != 0;
  bool negative = ctx.attr_int("detect_negative", 1) != 0;
  float_predicate(ctx, [&](auto v) { return std::isinf(v) && (v > 0 ? positive : negative); });
}

void not_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::kBool) ctx.fail("expected a bool tensor, found {}", dtype_name(x.dtype()));
  unary_elementwise<bool, bool>(ctx, 0, x, [](bool v) { return !v; });
}

void bitwise_not_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<IntTypes>(x.dtype(), ctx, [&]<typename T>() {
    unary_elementwise<T, T>(ctx, 0, x, [](T v) { return static_cast<T>(~v); });
  });
}

}  // namespace

PARITY_KERNEL("", "Abs", 1, abs_kernel);
PARITY_KERNEL("", "Neg", 1, neg_kernel);
PARITY_KERNEL("", "Sign", 9, sign_kernel);
PARITY_KERNEL("", "Exp", 1, exp_kernel);
PARITY_KERNEL("", "Log", 1, log_kernel);
PARITY_KERNEL("", "Sqrt", 1, sqrt_kernel);
PARITY_KERNEL("", "Reciprocal", 1, reciprocal_kernel);
PARITY_KERNEL("", "Floor", 1, floor_kernel);
PARITY_KERNEL("", "Ceil", 1, ceil_kernel);
PARITY_KERNEL("", "Round", 11, round_kernel);
PARITY_KERNEL("", "Erf", 9, erf_kernel);
PARITY_KERNEL("", "Sin", 7, sin_kernel);
PARITY_KERNEL("", "Cos", 7, cos_kernel);
PARITY_KERNEL("", "Tan", 7, tan_kernel);
PARITY_KERNEL("", "Asin", 7, asin_kernel);
PARITY_KERNEL("", "Acos", 7, acos_kernel);
PARITY_KERNEL("", "Atan", 7, atan_kernel);
PARITY_KERNEL("", "Sinh", 9, sinh_kernel);
PARITY_KERNEL("", "Cosh", 9, cosh_kernel);
PARITY_KERNEL("", "Asinh", 9, asinh_kernel);
PARITY_KERNEL("", "Acosh", 9, acosh_kernel);
PARITY_KERNEL("", "Atanh", 9, atanh_kernel);
PARITY_KERNEL("", "IsNaN", 9, isnan_kernel);
PARITY_KERNEL("", "IsInf", 10, isinf_kernel);
PARITY_KERNEL("", "Not", 1, not_kernel);
PARITY_KERNEL("", "BitwiseNot", 18, bitwise_not_kernel);

}  // namespace parity::ops
