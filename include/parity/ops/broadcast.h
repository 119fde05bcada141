// Numpy-style (multidirectional) broadcasting shared by every elementwise kernel.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "parity/core/tensor.h"
#include "parity/ops/dispatch.h"

namespace parity::ops {

// Result shape of broadcasting all shapes together; throws InvalidInputError naming the node.
Shape broadcast_shapes(std::span<const Shape> shapes, const KernelContext* ctx = nullptr);
Shape broadcast_shapes(const Shape& a, const Shape& b, const KernelContext* ctx = nullptr);

// Element strides of `shape` seen as `out` (right-aligned; 0 on broadcast axes).
std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out);

// Calls fn(out_index, offsets) for every element of `out`, where offsets[k] is the flat index
// into input k. Fast paths for inputs that match `out` exactly or are scalars.
template <std::size_t N, typename Fn>
void for_each_broadcast(const Shape& out, const std::array<Shape, N>& inputs, Fn&& fn) {
  int64_t total = checked_element_count(out);
  if (total == 0) return;
  std::array<std::vector<int64_t>, N> strides;
  bool all_same = true;
  for (std::size_t k = 0; k < N; ++k) {
    strides[k] = broadcast_strides(inputs[k], out);
    if (inputs[k] != out) all_same = false;
  }
  std::array<int64_t, N> offsets{};
  if (all_same) {
    for (int64_t i = 0; i < total; ++i) {
      offsets.fill(i);
      fn(i, offsets);
    }
    return;
  }
  const std::size_t rank = out.size();
  std::vector<int64_t> counter(rank, 0);
  for (int64_t i = 0; i < total; ++i) {
    fn(i, offsets);
    for (std::size_t axis = rank; axis-- > 0;) {  // odometer increment
      ++counter[axis];
      for (std::size_t k = 0; k < N; ++k) offsets[k] += strides[k][axis];
      if (counter[axis] < out[axis]) break;
      for (std::size_t k = 0; k < N; ++k) offsets[k] -= strides[k][axis] * counter[axis];
      counter[axis] = 0;
    }
  }
}

// out = f(a, b) elementwise with broadcasting. A, B, O are element types; f takes (A, B).
template <typename A, typename B, typename O, typename F>
Tensor binary_elementwise(KernelContext& ctx, std::size_t output, const Tensor& a, const Tensor& b, F&& f) {
  Shape out_shape = broadcast_shapes(a.shape(), b.shape(), &ctx);
  Tensor& out = ctx.allocate_output(output, dtype_of<O>(), out_shape);
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  O* po = out.mutable_data<O>();
  int64_t n = out.size();
  if (a.shape() == out_shape && b.shape() == out_shape) {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
  } else if (b.size() == 1 && a.shape() == out_shape) {
    B bv = pb[0];
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], bv);
  } else if (a.size() == 1 && b.shape() == out_shape) {
    A av = pa[0];
    for (int64_t i = 0; i < n; ++i) po[i] = f(av, pb[i]);
  } else {
    for_each_broadcast<2>(out_shape, {a.shape(), b.shape()},
                          [&](int64_t i, const std::array<int64_t, 2>& o) { po[i] = f(pa[o[0]], pb[o[1]]); });
  }
  return out;
}

// out = f(x) elementwise.
template <typename I, typename O, typename F>
Tensor& unary_elementwise(KernelContext& ctx, std::size_t output, const Tensor& x, F&& f) {
  Tensor& out = ctx.allocate_output(output, dtype_of<O>(), x.shape());
  const I* px = x.data<I>();
  O* po = out.mutable_data<O>();
  for (int64_t i = 0, n = x.size(); i < n; ++i) po[i] = f(px[i]);
  return out;
}

// Normalizes an axis in [-rank, rank) to [0, rank); throws naming the node otherwise.
int64_t normalize_axis(int64_t axis, int64_t rank, const KernelContext& ctx);

// Reads a 1-D (or scalar) integer tensor (int32/int64) as int64 values.
std::vector<int64_t> read_int_list(const Tensor& tensor, const KernelContext& ctx);

// Reads input `index`, a one-element integer tensor (int32/int64); throws naming `name` when it
// holds more or fewer than one element.
int64_t read_scalar_int(const KernelContext& ctx, std::size_t index, const char* name);

}  // namespace parity::ops
