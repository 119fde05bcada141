// Gather, GatherElements, GatherND (negative indices wrap; out-of-range indices fail).
#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

int64_t checked_index(const KernelContext& ctx, int64_t index, int64_t dim) {
  int64_t i = index < 0 ? index + dim : index;
  if (i < 0 || i >= dim) ctx.fail("index {} is out of range for a dimension of size {}", index, dim);
  return i;
}

template <typename T>
void copy_n(T* dst, const T* src, int64_t n) {
  if constexpr (std::is_trivially_copyable_v<T>) {
    if (n > 0) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(T));
  } else {
    for (int64_t j = 0; j < n; ++j) dst[j] = src[j];
  }
}

void gather(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int64_t rank = data.rank();
  if (rank == 0) ctx.fail("data must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.attr_int("axis", 0), rank, ctx);
  IndexReader idx(indices, ctx);
  Shape out_shape(data.shape().begin(), data.shape().begin() + axis);
  out_shape.insert(out_shape.end(), indices.shape().begin(), indices.shape().end());
  out_shape.insert(out_shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  const int64_t outer = product(data.shape(), 0, static_cast<std::size_t>(axis));
  const int64_t dim = data.shape()[axis];
  const int64_t inner = product(data.shape(), static_cast<std::size_t>(axis) + 1, data.shape().size());
  const int64_t n = indices.size();
  std::vector<int64_t> resolved(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) resolved[i] = checked_index(ctx, idx[i], dim);
  Tensor& out = ctx.allocate_output(0, data.dtype(), out_shape);
  if (out.size() == 0) return;
  dispatch_bytes(data.dtype(), ctx, [&]<typename T>() {
    const T* src = data.data<T>();
    T* dst = out.mutable_data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < n; ++i)
        copy_n<T>(dst + (o * n + i) * inner, src + (o * dim + resolved[i]) * inner, inner);
  });
}

void gather_elements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int64_t rank = data.rank();
  if (rank == 0) ctx.fail("data must have rank >= 1");
  if (indices.rank() != rank)
    ctx.fail("indices rank {} differs from data rank {}", indices.rank(), rank);
  const int64_t axis = normalize_axis(ctx.attr_int("axis", 0), rank, ctx);
  for (int64_t k = 0; k < rank; ++k)
    if (k != axis && indices.shape()[k] > data.shape()[k])
      ctx.fail("indices shape {} exceeds data shape {} on axis {}", shape_to_string(indices.shape()),
               shape_to_string(data.shape()), k);
  IndexReader idx(indices, ctx);
  Tensor& out = ctx.allocate_output(0, data.dtype(), indices.shape());
  const int64_t n = out.size();
  if (n == 0) return;
  std::vector<int64_t> dstr = strides_of(data.shape());
  const Shape& ishape = indices.shape();
  const int64_t dim = data.shape()[axis];
  dispatch_bytes(data.dtype(), ctx, [&]<typename T>() {
    const T* src = data.data<T>();
    T* dst = out.mutable_data<T>();
    std::vector<int64_t> counter(static_cast<std::size_t>(rank), 0);
    int64_t base = 0;  // data offset of counter with the axis coordinate at 0
    for (int64_t i = 0; i < n; ++i) {
      int64_t j = checked_index(ctx, idx[i], dim);
      dst[i] = src[base + j * dstr[axis]];
      for (int64_t k = rank; k-- > 0;) {
        if (k != axis) base += dstr[k];
        if (++counter[k] < ishape[k]) break;
        if (k != axis) base -= dstr[k] * counter[k];
        counter[k] = 0;
      }
    }
  });
}

void gather_nd(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int64_t b = ctx.opset() >= 12 ? ctx.attr_int("batch_dims", 0) : 0;
  const int64_t r = data.rank(), q = indices.rank();
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q)) ctx.fail("batch_dims {} must be < min(data rank {}, indices rank {})", b, r, q);
  for (int64_t k = 0; k < b; ++k)
    if (data.shape()[k] != indices.shape()[k])
      ctx.fail("batch dimension {} differs: data {} vs indices {}", k, shape_to_string(data.shape()),
               shape_to_string(indices.shape()));
  const int64_t last = indices.shape()[q - 1];
  if (last < 1 || last > r - b) ctx.fail("indices last dimension {} must be in [1, {}]", last, r - b);
  Shape out_shape(indices.shape().begin(), indices.shape().end() - 1);
  out_shape.insert(out_shape.end(), data.shape().begin() + b + last, data.shape().end());
  IndexReader idx(indices, ctx);
  const int64_t batches = product(data.shape(), 0, static_cast<std::size_t>(b));
  const int64_t tuples_per_batch =
      product(indices.shape(), static_cast<std::size_t>(b), static_cast<std::size_t>(q - 1));
  const int64_t slice = product(data.shape(), static_cast<std::size_t>(b + last), data.shape().size());
  const int64_t batch_stride = product(data.shape(), static_cast<std::size_t>(b), data.shape().size());
  std::vector<int64_t> dstr = strides_of(data.shape());
  Tensor& out = ctx.allocate_output(0, data.dtype(), out_shape);
  if (out.size() == 0) return;
  dispatch_bytes(data.dtype(), ctx, [&]<typename T>() {
    const T* src = data.data<T>();
    T* dst = out.mutable_data<T>();
    int64_t t = 0;
    for (int64_t bi = 0; bi < batches; ++bi) {
      for (int64_t ti = 0; ti < tuples_per_batch; ++ti, ++t) {
        int64_t off = bi * batch_stride;
        for (int64_t k = 0; k < last; ++k)
          off += checked_index(ctx, idx[t * last + k], data.shape()[b + k]) * dstr[b + k];
        copy_n<T>(dst + t * slice, src + off, slice);
      }
    }
  });
}

}  // namespace

PARITY_KERNEL("", "Gather", 1, gather);
PARITY_KERNEL("", "GatherElements", 11, gather_elements);
PARITY_KERNEL("", "GatherND", 11, gather_nd);

}  // namespace parity::ops::tensor
