// OneHot and Trilu.
#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

void one_hot(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const Tensor& depth_t = ctx.input(1);
  const Tensor& values = ctx.input(2);
  if (values.size() != 2) ctx.fail("values must hold 2 elements [off, on], found {}", values.size());
  double depth_d = scalar_as_double(depth_t, ctx, "depth");
  if (!(depth_d >= 1)) ctx.fail("depth must be >= 1, found {}", depth_d);
  if (depth_d > static_cast<double>(ctx.limits().max_elements)) ctx.fail("depth {} is too large", depth_d);
  const int64_t depth = static_cast<int64_t>(depth_d);
  const int64_t rank = indices.rank() + 1;
  const int64_t axis = normalize_axis(ctx.attr_int("axis", -1), rank, ctx);
  Shape out_shape(indices.shape().begin(), indices.shape().end());
  out_shape.insert(out_shape.begin() + axis, depth);
  const int64_t outer = product(indices.shape(), 0, static_cast<std::size_t>(axis));
  const int64_t inner = product(indices.shape(), static_cast<std::size_t>(axis), indices.shape().size());
  // Indices of any numeric type, truncated to integers.
  std::vector<int64_t> idx(static_cast<std::size_t>(indices.size()));
  dispatch<NumericTypes>(indices.dtype(), ctx, [&]<typename T>() {
    const T* p = indices.data<T>();
    for (int64_t i = 0; i < indices.size(); ++i) {
      double v = convert<double>(p[i]);
      int64_t k = std::isfinite(v) && std::abs(v) < 9.2e18 ? static_cast<int64_t>(v) : depth;
      if (k < 0) k += depth;
      idx[i] = (k >= 0 && k < depth) ? k : -1;
    }
  });
  Tensor& out = ctx.allocate_output(0, values.dtype(), out_shape);
  if (out.size() == 0) return;
  dispatch_bytes(values.dtype(), ctx, [&]<typename T>() {
    const T off = values.data<T>()[0], on = values.data<T>()[1];
    T* o = out.mutable_data<T>();
    for (int64_t i = 0, n = out.size(); i < n; ++i) o[i] = off;
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t b = 0; b < inner; ++b) {
        int64_t k = idx[a * inner + b];
        if (k >= 0) o[(a * depth + k) * inner + b] = on;
      }
  });
}

void trilu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2, found shape {}", shape_to_string(x.shape()));
  int64_t k = 0;
  if (ctx.has_input(1)) k = scalar_as_int(ctx.input(1), ctx, "k");
  const bool upper = ctx.attr_int("upper", 1) != 0;
  Tensor& out = ctx.allocate_output(0, x.dtype(), x.shape());
  if (out.size() == 0) return;
  const int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
  const int64_t mats = x.size() / (rows * cols);
  dispatch_bytes(x.dtype(), ctx, [&]<typename T>() {
    const T* s = x.data<T>();
    T* o = out.mutable_data<T>();
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          int64_t p = (m * rows + i) * cols + j;
          bool keep = upper ? (j - i >= k) : (j - i <= k);
          if (keep) o[p] = s[p];
        }
  });
}

}  // namespace

PARITY_KERNEL("", "OneHot", 9, one_hot);
PARITY_KERNEL("", "Trilu", 14, trilu);

}  // namespace parity::ops::tensor
