// ai.onnx.preview.training Momentum (standard / nesterov), Adagrad and Adam: one update step of
// every optimized tensor. Inputs: R, T, then X_1..X_n, G_1..G_n and the state tensors
// (V and/or H) grouped the same way; outputs: X_new_1..n then the new states.
#include <cmath>
#include <vector>

#include "parity/ops/dispatch.h"
#include "parity/ops/kernel.h"

namespace parity::ops {
namespace {

double scalar_value(const KernelContext& ctx, std::size_t i, const char* name) {
  const Tensor& t = ctx.input(i);
  if (t.size() != 1) ctx.fail("{} must be a scalar, found shape {}", name, shape_to_string(t.shape()));
  return dispatch<NumericTypes>(
      t.dtype(), ctx, [&]<typename T>() { return static_cast<double>(static_cast<compute_t<T>>(t.data<T>()[0])); });
}

// Splits inputs 2.. into `groups` groups of n tensors with one shape and dtype per index.
int64_t tensor_count(const KernelContext& ctx, int64_t groups) {
  const int64_t rest = static_cast<int64_t>(ctx.num_inputs()) - 2;
  if (rest <= 0 || rest % groups != 0)
    ctx.fail("expected R, T and {} groups of equally many tensors, found {} inputs", groups, ctx.num_inputs());
  const int64_t n = rest / groups;
  if (static_cast<int64_t>(ctx.num_outputs()) != (groups - 1) * n)
    ctx.fail("expected {} outputs for {} optimized tensors, found {}", (groups - 1) * n, n, ctx.num_outputs());
  for (int64_t k = 0; k < n; ++k)
    for (int64_t g = 1; g < groups; ++g) {
      const Tensor& a = ctx.input(static_cast<std::size_t>(2 + k));
      const Tensor& b = ctx.input(static_cast<std::size_t>(2 + g * n + k));
      if (a.shape() != b.shape() || a.dtype() != b.dtype())
        ctx.fail("input {} ({} {}) does not match input {} ({} {})", 2 + g * n + k, dtype_name(b.dtype()),
                 shape_to_string(b.shape()), 2 + k, dtype_name(a.dtype()), shape_to_string(a.shape()));
    }
  return n;
}

void momentum(KernelContext& ctx) {
  const int64_t n = tensor_count(ctx, 3);
  const double R = scalar_value(ctx, 0, "R");
  const double T = scalar_value(ctx, 1, "T");
  const double alpha = ctx.attr_float("alpha"), beta = ctx.attr_float("beta");
  const double norm = ctx.attr_float("norm_coefficient");
  const std::string mode = ctx.attr_string("mode");
  if (mode != "standard" && mode != "nesterov") ctx.fail("mode must be 'standard' or 'nesterov', found '{}'", mode);
  const double beta_adj = T > 0 ? beta : 1.0;
  for (int64_t k = 0; k < n; ++k) {
    const Tensor& X = ctx.input(static_cast<std::size_t>(2 + k));
    const Tensor& G = ctx.input(static_cast<std::size_t>(2 + n + k));
    const Tensor& V = ctx.input(static_cast<std::size_t>(2 + 2 * n + k));
    dispatch_float(X.dtype(), ctx, [&]<typename E, typename C>() {
      Tensor& xo = ctx.allocate_output(static_cast<std::size_t>(k), X.dtype(), X.shape());
      Tensor& vo = ctx.allocate_output(static_cast<std::size_t>(n + k), X.dtype(), X.shape());
      for (int64_t i = 0; i < X.size(); ++i) {
        const C x = static_cast<C>(static_cast<compute_t<E>>(X.data<E>()[i]));
        const C g = C(norm) * x + static_cast<C>(static_cast<compute_t<E>>(G.data<E>()[i]));
        const C v = C(alpha) * static_cast<C>(static_cast<compute_t<E>>(V.data<E>()[i])) + C(beta_adj) * g;
        const C xn = mode == "nesterov" ? x - C(R) * (g + C(alpha) * v) : x - C(R) * v;
        xo.mutable_data<E>()[i] = convert<E>(xn);
        vo.mutable_data<E>()[i] = convert<E>(v);
      }
    });
  }
}

void adagrad(KernelContext& ctx) {
  const int64_t n = tensor_count(ctx, 3);
  const double R = scalar_value(ctx, 0, "R");
  const double T = scalar_value(ctx, 1, "T");
  const double decay = ctx.attr_float("decay_factor"), eps = ctx.attr_float("epsilon");
  const double norm = ctx.attr_float("norm_coefficient");
  const double r = R / (1.0 + T * decay);
  for (int64_t k = 0; k < n; ++k) {
    const Tensor& X = ctx.input(static_cast<std::size_t>(2 + k));
    const Tensor& G = ctx.input(static_cast<std::size_t>(2 + n + k));
    const Tensor& H = ctx.input(static_cast<std::size_t>(2 + 2 * n + k));
    dispatch_float(X.dtype(), ctx, [&]<typename E, typename C>() {
      Tensor& xo = ctx.allocate_output(static_cast<std::size_t>(k), X.dtype(), X.shape());
      Tensor& ho = ctx.allocate_output(static_cast<std::size_t>(n + k), X.dtype(), X.shape());
      for (int64_t i = 0; i < X.size(); ++i) {
        const C x = static_cast<C>(static_cast<compute_t<E>>(X.data<E>()[i]));
        const C g = C(norm) * x + static_cast<C>(static_cast<compute_t<E>>(G.data<E>()[i]));
        const C h = static_cast<C>(static_cast<compute_t<E>>(H.data<E>()[i])) + g * g;
        const C xn = x - C(r) * g / (std::sqrt(h) + C(eps));
        xo.mutable_data<E>()[i] = convert<E>(xn);
        ho.mutable_data<E>()[i] = convert<E>(h);
      }
    });
  }
}

void adam(KernelContext& ctx) {
  const int64_t n = tensor_count(ctx, 4);
  const double R = scalar_value(ctx, 0, "R");
  const double T = scalar_value(ctx, 1, "T");
  const double alpha = ctx.attr_float("alpha"), beta = ctx.attr_float("beta"), eps = ctx.attr_float("epsilon");
  const double norm = ctx.attr_float("norm_coefficient"), post = ctx.attr_float("norm_coefficient_post");
  const double r_adj = T > 0 ? R * std::sqrt(1.0 - std::pow(beta, T)) / (1.0 - std::pow(alpha, T)) : R;
  for (int64_t k = 0; k < n; ++k) {
    const Tensor& X = ctx.input(static_cast<std::size_t>(2 + k));
    const Tensor& G = ctx.input(static_cast<std::size_t>(2 + n + k));
    const Tensor& V = ctx.input(static_cast<std::size_t>(2 + 2 * n + k));
    const Tensor& H = ctx.input(static_cast<std::size_t>(2 + 3 * n + k));
    dispatch_float(X.dtype(), ctx, [&]<typename E, typename C>() {
      Tensor& xo = ctx.allocate_output(static_cast<std::size_t>(k), X.dtype(), X.shape());
      Tensor& vo = ctx.allocate_output(static_cast<std::size_t>(n + k), X.dtype(), X.shape());
      Tensor& ho = ctx.allocate_output(static_cast<std::size_t>(2 * n + k), X.dtype(), X.shape());
      for (int64_t i = 0; i < X.size(); ++i) {
        const C x = static_cast<C>(static_cast<compute_t<E>>(X.data<E>()[i]));
        const C g = C(norm) * x + static_cast<C>(static_cast<compute_t<E>>(G.data<E>()[i]));
        const C v = C(alpha) * static_cast<C>(static_cast<compute_t<E>>(V.data<E>()[i])) + C(1.0 - alpha) * g;
        const C h = C(beta) * static_cast<C>(static_cast<compute_t<E>>(H.data<E>()[i])) + C(1.0 - beta) * g * g;
        const C xn = x - C(r_adj) * v / (std::sqrt(h) + C(eps));
        xo.mutable_data<E>()[i] = convert<E>(C(1.0 - post) * xn);
        vo.mutable_data<E>()[i] = convert<E>(v);
        ho.mutable_data<E>()[i] = convert<E>(h);
      }
    });
  }
}

}  // namespace

PARITY_KERNEL("ai.onnx.preview.training", "Momentum", 1, momentum);
PARITY_KERNEL("ai.onnx.preview.training", "Adagrad", 1, adagrad);
PARITY_KERNEL("ai.onnx.preview.training", "Adam", 1, adam);

}  // namespace parity::ops
