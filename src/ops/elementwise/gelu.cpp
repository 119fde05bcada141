// Gelu (opset 20): approximate = "none": x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2));
// approximate = "tanh": 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
#include <cmath>
#include <numbers>
#include <string>

#include "elementwise/elementwise_util.h"

namespace parity::ops {
namespace {

using namespace elementwise;

void gelu_kernel(KernelContext& ctx) {
  const std::string approximate = ctx.attr_string("approximate", std::string("none"));
  if (approximate == "none") {
    unary_float(ctx, [](auto v) {
      using C = decltype(v);
      return C(0.5) * v * (C(1) + std::erf(v * static_cast<C>(std::numbers::sqrt2 / 2)));
    });
  } else if (approximate == "tanh") {
    unary_float(ctx, [](auto v) {
      using C = decltype(v);
      const C k = static_cast<C>(std::sqrt(2.0 / std::numbers::pi));
      return C(0.5) * v * (C(1) + std::tanh(k * (v + C(0.044715) * v * v * v)));
    });
  } else {
    ctx.fail("approximate is '{}', expected 'none' or 'tanh'", approximate);
  }
}

}  // namespace

PARITY_KERNEL("", "Gelu", 20, gelu_kernel);

}  // namespace parity::ops
