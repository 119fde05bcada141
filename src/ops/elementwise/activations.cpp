// Activations: Relu, LeakyRelu, PRelu, Sigmoid, HardSigmoid, Tanh, Elu, Selu, Celu, Softplus,
// Softsign, ThresholdedRelu, Shrink, HardSwish, Mish, Swish. Float math in the compute type
// (double in fp64 mode), rounded once into the storage type.
#include <cmath>

#include "elementwise/elementwise_util.h"

namespace parity::ops {
namespace {

using namespace elementwise;

// 1 / (1 + e^-x) without overflow for large |x|.
template <typename C>
C sigmoid(C x) {
  if (x >= 0) return C(1) / (C(1) + std::exp(-x));
  C e = std::exp(x);
  return e / (C(1) + e);
}

// log(1 + e^x) without overflow for large x.
template <typename C>
C softplus(C x) {
  if (x > 0) return x + std::log1p(std::exp(-x));
  return std::log1p(std::exp(x));
}

void relu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (is_floating(x.dtype())) {
    unary_float(ctx, [](auto v) { return v < 0 ? decltype(v)(0) : v; });
    return;
  }
  dispatch<SignedIntTypes>(x.dtype(), ctx, [&]<typename T>() {
    unary_elementwise<T, T>(ctx, 0, x, [](T v) { return v < 0 ? T(0) : v; });
  });
}

void leaky_relu_kernel(KernelContext& ctx) {
  const float alpha = ctx.attr_float("alpha");
  unary_float(ctx, [alpha](auto v) {
    using C = decltype(v);
    return v < 0 ? static_cast<C>(alpha) * v : v;
  });
}

// y = x < 0 ? slope * x : x, slope broadcast to x (before opset 7 a 1-D slope of x's channel
// count applies per channel, axis 1).
void prelu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor slope = ctx.input(1);
  if (slope.dtype() != x.dtype())
    ctx.fail("slope has element type {}, expected {} like X", dtype_name(slope.dtype()), dtype_name(x.dtype()));
  if (ctx.opset() < 7 && slope.rank() == 1 && x.rank() >= 2 && slope.size() > 1 && slope.size() == x.shape()[1]) {
    Shape channel(static_cast<std::size_t>(x.rank() - 1), 1);
    channel[0] = slope.size();
    slope = slope.reshaped(channel);
  }
  Shape out_shape = broadcast_shapes(x.shape(), slope.shape(), &ctx);
  if (out_shape != x.shape())
    ctx.fail("slope of shape {} does not broadcast to X of shape {}", shape_to_string(slope.shape()),
             shape_to_string(x.shape()));
  if (is_floating(x.dtype())) {
    dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
      binary_elementwise<T, T, T>(ctx, 0, x, slope, [](T v, T s) {
        C c = load<C>(v);
        return c < 0 ? store<T>(load<C>(s) * c) : v;
      });
    });
    return;
  }
  dispatch<IntTypes>(x.dtype(), ctx, [&]<typename T>() {
    binary_elementwise<T, T, T>(ctx, 0, x, slope, [](T v, T s) {
      if constexpr (std::is_signed_v<T>) return v < 0 ? wrap_mul(s, v) : v;
      return v;
    });
  });
}

void sigmoid_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return sigmoid(v); }); }

void hard_sigmoid_kernel(KernelContext& ctx) {
  const float alpha = ctx.attr_float("alpha"), beta = ctx.attr_float("beta");
  unary_float(ctx, [alpha, beta](auto v) {
    using C = decltype(v);
    C y = static_cast<C>(alpha) * v + static_cast<C>(beta);
    return std::isnan(y) ? y : std::fmax(C(0), std::fmin(C(1), y));
  });
}

void tanh_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return std::tanh(v); }); }

void elu_kernel(KernelContext& ctx) {
  const float alpha = ctx.attr_float("alpha");
  unary_float(ctx, [alpha](auto v) {
    using C = decltype(v);
    return v < 0 ? static_cast<C>(alpha) * std::expm1(v) : v;
  });
}

void selu_kernel(KernelContext& ctx) {
  const float alpha = ctx.attr_float("alpha"), gamma = ctx.attr_float("gamma");
  unary_float(ctx, [alpha, gamma](auto v) {
    using C = decltype(v);
    return static_cast<C>(gamma) * (v > 0 ? v : static_cast<C>(alpha) * std::expm1(v));
  });
}

void celu_kernel(KernelContext& ctx) {
  const float alpha = ctx.attr_float("alpha");
  if (alpha == 0) ctx.fail("alpha must be non-zero");
  unary_float(ctx, [alpha](auto v) {
    using C = decltype(v);
    C a = static_cast<C>(alpha);
    return v > 0 ? v : a * std::expm1(v / a);
  });
}

void softplus_kernel(KernelContext& ctx) { unary_float(ctx, [](auto v) { return softplus(v); }); }

void softsign_kernel(KernelContext& ctx) {
  unary_float(ctx, [](auto v) { return v / (decltype(v)(1) + std::fabs(v)); });
}

void thresholded_relu_kernel(KernelContext& ctx) {
  const float alpha = ctx.attr_float("alpha");
  unary_float(ctx, [alpha](auto v) {
    using C = decltype(v);
    return v > static_cast<C>(alpha) ? v : C(0);
  });
}

// x < -lambd -> x + bias; x > lambd -> x - bias; else 0. Integer inputs are computed in double
// and truncated.
void shrink_kernel(KernelContext& ctx) {
  const float bias = ctx.attr_float("bias"), lambd = ctx.attr_float("lambd");
  const Tensor& x = ctx.input(0);
  if (is_floating(x.dtype())) {
    unary_float(ctx, [bias, lambd](auto v) {
      using C = decltype(v);
      C b = static_cast<C>(bias), l = static_cast<C>(lambd);
      return v < -l ? v + b : (v > l ? v - b : C(0));
    });
    return;
  }
  dispatch<IntTypes>(x.dtype(), ctx, [&]<typename T>() {
    unary_elementwise<T, T>(ctx, 0, x, [bias, lambd](T t) {
      double v = static_cast<double>(t), b = bias, l = lambd;
      return float_to_int<T>(v < -l ? v + b : (v > l ? v - b : 0.0));
    });
  });
}

void hard_swish_kernel(KernelContext& ctx) {
  unary_float(ctx, [](auto v) {
    using C = decltype(v);
    C gate = v * (C(1) / C(6)) + C(0.5);  // alpha = 1/6, beta = 0.5
    gate = gate < 0 ? C(0) : (gate > 1 ? C(1) : gate);
    return v * gate;
  });
}

void mish_kernel(KernelContext& ctx) {
  unary_float(ctx, [](auto v) { return v * std::tanh(softplus(v)); });
}

void swish_kernel(KernelContext& ctx) {
  const float alpha = ctx.attr_float("alpha", 1.0f);
  unary_float(ctx, [alpha](auto v) {
    using C = decltype(v);
    return v * sigmoid(static_cast<C>(alpha) * v);
  });
}

}  // namespace

PARITY_KERNEL("", "Relu", 1, relu_kernel);
PARITY_KERNEL("", "LeakyRelu", 1, leaky_relu_kernel);
PARITY_KERNEL("", "PRelu", 1, prelu_kernel);
PARITY_KERNEL("", "Sigmoid", 1, sigmoid_kernel);
PARITY_KERNEL("", "HardSigmoid", 1, hard_sigmoid_kernel);
PARITY_KERNEL("", "Tanh", 1, tanh_kernel);
PARITY_KERNEL("", "Elu", 1, elu_kernel);
PARITY_KERNEL("", "Selu", 1, selu_kernel);
PARITY_KERNEL("", "Celu", 12, celu_kernel);
PARITY_KERNEL("", "Softplus", 1, softplus_kernel);
PARITY_KERNEL("", "Softsign", 1, softsign_kernel);
PARITY_KERNEL("", "ThresholdedRelu", 10, thresholded_relu_kernel);
PARITY_KERNEL("", "Shrink", 9, shrink_kernel);
PARITY_KERNEL("", "HardSwish", 14, hard_swish_kernel);
PARITY_KERNEL("", "Mish", 18, mish_kernel);
PARITY_KERNEL("", "Swish", 24, swish_kernel);

}  // namespace parity::ops
