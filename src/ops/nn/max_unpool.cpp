// MaxUnpool: scatters X into zeros at the flat Indices of the unpooled (inferred) shape; an
// explicit output_shape places that block at the origin of a larger zero tensor.
#include "nn/nn_util.h"

namespace parity::ops {
namespace {

void max_unpool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  if (x.rank() < 3) ctx.fail("X must have rank >= 3, found {}", shape_to_string(x.shape()));
  if (idx.shape() != x.shape())
    ctx.fail("I must have X's shape {}, found {}", shape_to_string(x.shape()), shape_to_string(idx.shape()));
  if (idx.dtype() != DType::kInt64) ctx.fail("I must be int64, found {}", dtype_name(idx.dtype()));
  const std::size_t nd = static_cast<std::size_t>(x.rank()) - 2;
  if (!ctx.has_attribute("kernel_shape")) ctx.fail("attribute 'kernel_shape' is required");
  auto kernel = ctx.attr_ints("kernel_shape");
  auto strides = ctx.has_attribute("strides") ? ctx.attr_ints("strides") : std::vector<int64_t>(nd, 1);
  auto pads = ctx.has_attribute("pads") ? ctx.attr_ints("pads") : std::vector<int64_t>(2 * nd, 0);
  if (strides.empty()) strides.assign(nd, 1);
  if (pads.empty()) pads.assign(2 * nd, 0);
  if (kernel.size() != nd || strides.size() != nd || pads.size() != 2 * nd)
    ctx.fail("kernel_shape/strides/pads do not match {} spatial dims", nd);
  Shape inferred{x.shape()[0], x.shape()[1]};
  for (std::size_t i = 0; i < nd; ++i) {
    int64_t d = (x.shape()[i + 2] - 1) * strides[i] - (pads[i] + pads[i + nd]) + kernel[i];
    if (d < 0) ctx.fail("inferred output dim {} is negative", i);
    inferred.push_back(d);
  }
  Shape out_shape = inferred;
  if (ctx.has_input(2)) {
    out_shape = read_int_list(ctx.input(2), ctx);
    if (out_shape.size() != inferred.size())
      ctx.fail("output_shape must have {} values, found {}", inferred.size(), out_shape.size());
    for (std::size_t i = 0; i < out_shape.size(); ++i)
      if (out_shape[i] < inferred[i])
        ctx.fail("output_shape {} is smaller than the unpooled shape {}", shape_to_string(out_shape),
                 shape_to_string(inferred));
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  const int64_t total = checked_element_count(inferred);
  const int64_t* pi = idx.data<int64_t>();
  auto in_strides = nn::contiguous_strides(inferred);
  auto out_strides = nn::contiguous_strides(out_shape);
  dispatch<NumericTypes>(x.dtype(), ctx, [&]<typename T>() {
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    for (int64_t i = 0; i < x.size(); ++i) {
      int64_t flat = pi[i];
      if (flat < 0 || flat >= total) ctx.fail("index {} is out of range [0, {})", flat, total);
      int64_t o = 0, rem = flat;
      for (std::size_t d = 0; d < inferred.size(); ++d) {
        o += (rem / in_strides[d]) * out_strides[d];
        rem %= in_strides[d];
      }
      py[o] = px[i];
    }
  });
}

}  // namespace

PARITY_KERNEL("", "MaxUnpool", 9, max_unpool);

}  // namespace parity::ops
