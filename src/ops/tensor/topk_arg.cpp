// TopK (ties: smaller index first), ArgMax, ArgMin (keepdims, select_last_index).
#include <algorithm>
#include <numeric>

#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

template <typename C>
bool is_nan_value(const C& v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  else return false;
}

void top_k(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  if (rank == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.attr_int("axis", -1), rank, ctx);
  int64_t k;
  if (ctx.opset() < 10) k = ctx.attr_int("k");
  else k = scalar_as_int(ctx.input(1), ctx, "K");
  const bool largest = ctx.opset() >= 11 ? ctx.attr_int("largest", 1) != 0 : true;
  const int64_t dim = x.shape()[axis];
  if (k < 0 || k > dim) ctx.fail("k = {} is out of range for dimension {} of size {}", k, axis, dim);
  Shape out_shape = x.shape();
  out_shape[axis] = k;
  const int64_t outer = product(x.shape(), 0, static_cast<std::size_t>(axis));
  const int64_t inner = product(x.shape(), static_cast<std::size_t>(axis) + 1, x.shape().size());
  Tensor& values = ctx.allocate_output(0, x.dtype(), out_shape);
  Tensor& indices = ctx.allocate_output(1, DType::kInt64, out_shape);
  if (values.size() == 0) return;
  dispatch<NumericTypes>(x.dtype(), ctx, [&]<typename T>() {
    using C = compute_t<T>;
    const T* p = x.data<T>();
    T* vo = values.mutable_data<T>();
    int64_t* io = indices.mutable_data<int64_t>();
    std::vector<C> lane(static_cast<std::size_t>(dim));
    std::vector<int64_t> order(static_cast<std::size_t>(dim));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        for (int64_t j = 0; j < dim; ++j) lane[j] = load(p, (o * dim + j) * inner + i);
        std::iota(order.begin(), order.end(), 0);
        auto before = [&](int64_t a, int64_t b) {
          const C& va = lane[a];
          const C& vb = lane[b];
          bool less = value_less(va, vb), greater = value_less(vb, va);
          if (largest ? greater : less) return true;
          if (largest ? less : greater) return false;
          return a < b;  // equal (or both NaN): smaller index first
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          int64_t dst = (o * k + j) * inner + i;
          vo[dst] = p[(o * dim + order[j]) * inner + i];
          io[dst] = order[j];
        }
      }
  });
}

template <bool kMax>
void arg_reduce(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  if (rank == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.attr_int("axis", 0), rank, ctx);
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const bool last = ctx.opset() >= 12 && ctx.attr_int("select_last_index", 0) != 0;
  const int64_t dim = x.shape()[axis];
  if (dim == 0) ctx.fail("cannot take Arg{} over an empty axis", kMax ? "Max" : "Min");
  Shape out_shape = x.shape();
  if (keepdims) out_shape[axis] = 1;
  else out_shape.erase(out_shape.begin() + axis);
  const int64_t outer = product(x.shape(), 0, static_cast<std::size_t>(axis));
  const int64_t inner = product(x.shape(), static_cast<std::size_t>(axis) + 1, x.shape().size());
  Tensor& out = ctx.allocate_output(0, DType::kInt64, out_shape);
  dispatch<NumericAndBoolTypes>(x.dtype(), ctx, [&]<typename T>() {
    using C = compute_t<T>;
    const T* p = x.data<T>();
    int64_t* o = out.mutable_data<int64_t>();
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t best = 0;
        C bv = load(p, a * dim * inner + i);
        bool nan = is_nan_value(bv);
        for (int64_t j = 1; j < dim; ++j) {
          C v = load(p, (a * dim + j) * inner + i);
          bool better;
          if (nan) {  // a NaN wins (first NaN, or last with select_last_index)
            better = last && is_nan_value(v);
          } else if (is_nan_value(v)) {
            better = true;
          } else if (kMax) {
            better = last ? !(v < bv) : (bv < v);
          } else {
            better = last ? !(bv < v) : (v < bv);
          }
          if (better) {
            best = j;
            bv = v;
            nan = is_nan_value(v);
          }
        }
        o[a * inner + i] = best;
      }
  });
}

}  // namespace

PARITY_KERNEL("", "TopK", 1, top_k);
PARITY_KERNEL("", "ArgMax", 1, arg_reduce<true>);
PARITY_KERNEL("", "ArgMin", 1, arg_reduce<false>);

}  // namespace parity::ops::tensor
