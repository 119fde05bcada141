// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (weights, ignore_index, reductions).
#include <cmath>
#include <limits>
#include <optional>

#include "nn/nn_util.h"

namespace parity::ops {
namespace {

// loss over log-probabilities `lp` laid out (N, C, D) with labels (N, D).
void nll_core(KernelContext& ctx, const std::vector<double>& lp, const Shape& in_shape, const Tensor& target,
              const Tensor* weight, DType out_type) {
  if (in_shape.size() < 2) ctx.fail("input must have rank >= 2 (N, C, ...), found {}", shape_to_string(in_shape));
  const int64_t n = in_shape[0], c = in_shape[1], d = nn::product(in_shape, 2);
  Shape want(in_shape.begin(), in_shape.end());
  want.erase(want.begin() + 1);
  if (target.shape() != want)
    ctx.fail("target must have shape {}, found {}", shape_to_string(want), shape_to_string(target.shape()));
  auto labels = read_int_list(target, ctx);
  std::vector<double> w;
  if (weight) {
    w = nn::read_floats(ctx, *weight);
    if (static_cast<int64_t>(w.size()) != c) ctx.fail("weight must have {} values, found {}", c, w.size());
  }
  std::optional<int64_t> ignore;
  if (ctx.has_attribute("ignore_index")) ignore = ctx.attr_int("ignore_index");
  const std::string reduction = ctx.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    ctx.fail("reduction must be 'none', 'sum' or 'mean', found '{}'", reduction);
  std::vector<double> loss(static_cast<std::size_t>(n * d), 0.0);
  double wsum = 0.0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t j = 0; j < d; ++j) {
      const int64_t t = labels[static_cast<std::size_t>(b * d + j)];
      if (ignore && t == *ignore) continue;
      if (t < 0 || t >= c) ctx.fail("target value {} is out of range [0, {})", t, c);
      const double wt = weight ? w[static_cast<std::size_t>(t)] : 1.0;
      loss[b * d + j] = -lp[static_cast<std::size_t>((b * c + t) * d + j)] * wt;
      wsum += wt;
    }
  Tensor* out;
  if (reduction == "none") {
    out = &ctx.allocate_output(0, out_type, want);
  } else {
    double s = 0.0;
    for (double v : loss) s += v;
    if (reduction == "mean")
      s = wsum != 0.0 ? s / wsum : (loss.empty() ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    loss.assign(1, s);
    out = &ctx.allocate_output(0, out_type, Shape{});
  }
  dispatch<FloatTypes>(out_type, ctx, [&]<typename T>() {
    T* p = out->mutable_data<T>();
    for (std::size_t i = 0; i < loss.size(); ++i) p[i] = nn::from_compute<T>(static_cast<compute_t<T>>(loss[i]));
  });
}

void nll_loss(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& target = ctx.input(1);
  const Tensor* weight = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  auto lp = nn::read_floats(ctx, x);
  nll_core(ctx, lp, x.shape(), target, weight, x.dtype());
}

void softmax_cross_entropy_loss(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& target = ctx.input(1);
  const Tensor* weight = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (x.rank() < 2) ctx.fail("scores must have rank >= 2 (N, C, ...), found {}", shape_to_string(x.shape()));
  const int64_t n = x.shape()[0], c = x.shape()[1], d = nn::product(x.shape(), 2);
  auto xv = nn::read_floats(ctx, x);
  // Log-softmax over the class axis, rounded to the input precision like a separate LogSoftmax.
  std::vector<double> lp(xv.size());
  const bool fp64 = ctx.fp64() || x.dtype() == DType::kFloat64;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t j = 0; j < d; ++j) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < c; ++k) mx = std::max(mx, xv[(b * c + k) * d + j]);
      double s = 0.0;
      for (int64_t k = 0; k < c; ++k) s += std::exp(xv[(b * c + k) * d + j] - mx);
      const double ls = std::log(s);
      for (int64_t k = 0; k < c; ++k) {
        double v = xv[(b * c + k) * d + j] - mx - ls;
        lp[(b * c + k) * d + j] = fp64 ? v : static_cast<double>(static_cast<float>(v));
      }
    }
  nll_core(ctx, lp, x.shape(), target, weight, x.dtype());
  if (ctx.output_requested(1)) {
    Tensor& t = ctx.allocate_output(1, x.dtype(), x.shape());
    dispatch<FloatTypes>(x.dtype(), ctx, [&]<typename T>() {
      T* p = t.mutable_data<T>();
      for (std::size_t i = 0; i < lp.size(); ++i) p[i] = nn::from_compute<T>(static_cast<compute_t<T>>(lp[i]));
    });
  }
}

}  // namespace

PARITY_KERNEL("", "NegativeLogLikelihoodLoss", 12, nll_loss);
PARITY_KERNEL("", "SoftmaxCrossEntropyLoss", 12, softmax_cross_entropy_loss);

}  // namespace parity::ops
