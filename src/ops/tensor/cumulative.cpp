// CumSum, CumProd (exclusive, reverse) and ReverseSequence.
#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

template <bool kProduct>
void cumulative(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  if (rank == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = normalize_axis(scalar_as_int(ctx.input(1), ctx, "axis"), rank, ctx);
  const bool exclusive = ctx.attr_int("exclusive", 0) != 0;
  const bool reverse = ctx.attr_int("reverse", 0) != 0;
  const int64_t dim = x.shape()[axis];
  const int64_t outer = product(x.shape(), 0, static_cast<std::size_t>(axis));
  const int64_t inner = product(x.shape(), static_cast<std::size_t>(axis) + 1, x.shape().size());
  Tensor& out = ctx.allocate_output(0, x.dtype(), x.shape());
  if (out.size() == 0) return;
  dispatch<NumericTypes>(x.dtype(), ctx, [&]<typename T>() {
    // Floats accumulate in double (rounded once per output); integers wrap in their own type.
    using A = std::conditional_t<is_float_v<T>, double, T>;
    const T* p = x.data<T>();
    T* o = out.mutable_data<T>();
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        A acc = kProduct ? A(1) : A(0);
        for (int64_t s = 0; s < dim; ++s) {
          int64_t j = reverse ? dim - 1 - s : s;
          int64_t idx = (a * dim + j) * inner + i;
          A v = convert<A>(p[idx]);
          if (exclusive) {
            o[idx] = convert<T>(acc);
            acc = kProduct ? wrap_mul(acc, v) : wrap_add(acc, v);
          } else {
            acc = kProduct ? wrap_mul(acc, v) : wrap_add(acc, v);
            o[idx] = convert<T>(acc);
          }
        }
      }
  });
}

void reverse_sequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& lens_t = ctx.input(1);
  const int64_t rank = x.rank();
  if (rank < 2) ctx.fail("input must have rank >= 2");
  const int64_t time_axis = normalize_axis(ctx.attr_int("time_axis", 0), rank, ctx);
  const int64_t batch_axis = normalize_axis(ctx.attr_int("batch_axis", 1), rank, ctx);
  if (time_axis == batch_axis || time_axis > 1 || batch_axis > 1)
    ctx.fail("time_axis and batch_axis must be 0 and 1 in some order, found {} and {}", time_axis, batch_axis);
  std::vector<int64_t> lens = read_int_list(lens_t, ctx);
  const int64_t batch = x.shape()[batch_axis], time = x.shape()[time_axis];
  if (static_cast<int64_t>(lens.size()) != batch)
    ctx.fail("sequence_lens has {} entries, expected the batch size {}", lens.size(), batch);
  for (int64_t l : lens)
    if (l < 0 || l > time) ctx.fail("sequence length {} is out of range [0, {}]", l, time);
  const int64_t inner = product(x.shape(), 2, x.shape().size());
  Tensor& out = ctx.allocate_output(0, x.dtype(), x.shape());
  if (out.size() == 0) return;
  const int64_t t_stride = time_axis == 0 ? batch * inner : inner;
  const int64_t b_stride = batch_axis == 0 ? time * inner : inner;
  dispatch_bytes(x.dtype(), ctx, [&]<typename T>() {
    const T* s = x.data<T>();
    T* o = out.mutable_data<T>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < time; ++t) {
        int64_t src_t = t < lens[b] ? lens[b] - 1 - t : t;
        const T* from = s + b * b_stride + src_t * t_stride;
        T* to = o + b * b_stride + t * t_stride;
        for (int64_t i = 0; i < inner; ++i) to[i] = from[i];
      }
  });
}

}  // namespace

PARITY_KERNEL("", "CumSum", 11, cumulative<false>);
PARITY_KERNEL("", "CumProd", 26, cumulative<true>);
PARITY_KERNEL("", "ReverseSequence", 10, reverse_sequence);

}  // namespace parity::ops::tensor
