// Where(condition, X, Y): X where condition else Y, with three-way numpy broadcasting. Elements
// are moved, never converted, so any fixed-size element type (and string) works.
#include <string>

#include "elementwise/elementwise_util.h"

namespace parity::ops {
namespace {

struct Bytes16 {
  uint64_t low, high;
};

template <typename T>
void where_typed(KernelContext& ctx, const Tensor& c, const Tensor& x, const Tensor& y) {
  Shape shapes[3] = {c.shape(), x.shape(), y.shape()};
  Shape out_shape = broadcast_shapes(std::span<const Shape>(shapes, 3), &ctx);
  Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
  const bool* pc = c.data<bool>();
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  T* po = out.mutable_data<T>();
  for_each_broadcast<3>(out_shape, {shapes[0], shapes[1], shapes[2]},
                        [&](int64_t i, const std::array<int64_t, 3>& o) { po[i] = pc[o[0]] ? px[o[1]] : py[o[2]]; });
}

void where_kernel(KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (c.dtype() != DType::kBool) ctx.fail("condition must be bool, found {}", dtype_name(c.dtype()));
  if (x.dtype() != y.dtype())
    ctx.fail("X and Y have different element types: {} and {}", dtype_name(x.dtype()), dtype_name(y.dtype()));
  if (x.dtype() == DType::kString) return where_typed<std::string>(ctx, c, x, y);
  if (is_packed(x.dtype())) ctx.unsupported("element type {} is not supported here", dtype_name(x.dtype()));
  switch (dtype_bits(x.dtype())) {
    case 8: return where_typed<uint8_t>(ctx, c, x, y);
    case 16: return where_typed<uint16_t>(ctx, c, x, y);
    case 32: return where_typed<uint32_t>(ctx, c, x, y);
    case 64: return where_typed<uint64_t>(ctx, c, x, y);
    case 128: return where_typed<Bytes16>(ctx, c, x, y);
    default: ctx.unsupported("element type {} is not supported here", dtype_name(x.dtype()));
  }
}

}  // namespace

PARITY_KERNEL("", "Where", 9, where_kernel);

}  // namespace parity::ops
