// Dropout. Inference (and ratio 0): the identity with an all-true mask. Training with a positive
// ratio drops elements at random (a Bernoulli draw per element, seeded by `seed` when given)
// and scales the kept ones by 1 / (1 - ratio).
#include <random>

#include "nn/nn_util.h"

namespace parity::ops {
namespace {

void dropout(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  double ratio = 0.5;
  bool training = false;
  if (ctx.opset() >= 12) {
    if (ctx.has_input(1)) {
      auto r = nn::read_floats(ctx, ctx.input(1));
      if (r.size() != 1) ctx.fail("ratio must be a scalar");
      ratio = r[0];
    }
    if (ctx.has_input(2)) {
      const Tensor& t = ctx.input(2);
      if (t.dtype() != DType::kBool || t.size() != 1) ctx.fail("training_mode must be a bool scalar");
      training = t.data<bool>()[0];
    }
  } else {
    ratio = ctx.attr_float("ratio", 0.5f);
    if (ctx.opset() < 7) training = ctx.attr_int("is_test", 0) == 0;
  }
  if (training && (ratio < 0.0 || ratio >= 1.0)) ctx.fail("ratio must be in [0, 1), found {}", ratio);
  const bool drop = training && ratio > 0.0;
  const bool want_mask = ctx.output_requested(1);
  const DType mask_type = ctx.opset() >= 10 ? DType::kBool : x.dtype();
  if (!drop) {
    ctx.set_output(0, x);
    if (want_mask) {
      Tensor& m = ctx.allocate_output(1, mask_type, x.shape());
      if (mask_type == DType::kBool) {
        std::fill(m.mutable_data<bool>(), m.mutable_data<bool>() + m.size(), true);
      } else {
        dispatch<NumericTypes>(mask_type, ctx, [&]<typename T>() {
          for (int64_t i = 0; i < m.size(); ++i) m.mutable_data<T>()[i] = nn::from_compute<T>(compute_t<T>(1));
        });
      }
    }
    return;
  }
  // MT19937 with 53-bit uniform doubles: with a seed this reproduces numpy's legacy
  // np.random.seed(seed); np.random.uniform(0, 1) >= ratio, as ONNX's test data do.
  std::mt19937 rng(ctx.has_attribute("seed") ? static_cast<uint32_t>(ctx.attr_int("seed")) : std::random_device{}());
  auto uniform = [&]() {
    const uint32_t a = static_cast<uint32_t>(rng()) >> 5, b = static_cast<uint32_t>(rng()) >> 6;
    return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b)) / 9007199254740992.0;
  };
  std::vector<bool> keep(static_cast<std::size_t>(x.size()));
  for (int64_t i = 0; i < x.size(); ++i) keep[i] = uniform() >= ratio;
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  const double scale = 1.0 / (1.0 - ratio);
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    for (int64_t i = 0; i < x.size(); ++i)
      y.mutable_data<T>()[i] = keep[i]
                                   ? nn::from_compute<T>(static_cast<C>(nn::to_compute<T, C>(x.data<T>()[i]) * scale))
                                   : nn::from_compute<T>(C(0));
  });
  if (want_mask) {
    Tensor& m = ctx.allocate_output(1, mask_type, x.shape());
    dispatch<NumericAndBoolTypes>(mask_type, ctx, [&]<typename T>() {
      for (int64_t i = 0; i < m.size(); ++i) {
        if constexpr (std::is_same_v<T, bool>) m.mutable_data<T>()[i] = keep[i];
        else m.mutable_data<T>()[i] = nn::from_compute<T>(compute_t<T>(keep[i] ? 1 : 0));
      }
    });
  }
}

}  // namespace

PARITY_KERNEL("", "Dropout", 1, dropout);

}  // namespace parity::ops
