// Clip: y = min(max(x, min), max). Before opset 11 the bounds are float attributes; from 11 they
// are optional scalar inputs of x's type. When min > max every element becomes max (the spec).
#include <limits>

#include "elementwise/elementwise_util.h"

namespace parity::ops {
namespace {

using namespace elementwise;

template <typename T>
T scalar_bound(const KernelContext& ctx, std::size_t index, const Tensor& x, T fallback) {
  if (!ctx.has_input(index)) return fallback;
  const Tensor& bound = ctx.input(index);
  if (bound.dtype() != x.dtype())
    ctx.fail("input {} has element type {}, expected {} like the input", index, dtype_name(bound.dtype()),
             dtype_name(x.dtype()));
  if (bound.size() != 1) ctx.fail("input {} must be a scalar, found shape {}", index, shape_to_string(bound.shape()));
  return bound.data<T>()[0];
}

void clip_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<NumericTypes>(x.dtype(), ctx, [&]<typename T>() {
    using C = compute_t<T>;
    C lo, hi;
    if (ctx.opset() < 11) {
      if constexpr (!is_float_v<T>) {
        ctx.fail("element type {} needs opset 12 or later", dtype_name(x.dtype()));
      } else {
        lo = static_cast<C>(ctx.attr_float("min", std::numeric_limits<float>::lowest()));
        hi = static_cast<C>(ctx.attr_float("max", std::numeric_limits<float>::max()));
      }
    } else {
      lo = load<C>(scalar_bound<T>(ctx, 1, x, store<T>(std::numeric_limits<C>::lowest())));
      hi = load<C>(scalar_bound<T>(ctx, 2, x, store<T>(std::numeric_limits<C>::max())));
      if constexpr (is_float_v<T>) {
        if (!ctx.has_input(1)) lo = -std::numeric_limits<C>::infinity();
        if (!ctx.has_input(2)) hi = std::numeric_limits<C>::infinity();
      }
    }
    unary_elementwise<T, T>(ctx, 0, x, [lo, hi](T v) {
      C c = load<C>(v);
      if (c < lo) c = lo;
      if (c > hi) c = hi;
      return store<T>(c);
    });
  });
}

}  // namespace

PARITY_KERNEL("", "Clip", 1, clip_kernel);

}  // namespace parity::ops
