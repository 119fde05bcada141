// Expand (bidirectional broadcast to a shape) and Tile.
#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

void expand(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& s = ctx.input(1);
  if (s.rank() != 1) ctx.fail("shape input must be 1-D, found shape {}", shape_to_string(s.shape()));
  Shape target = read_int_list(s, ctx);
  for (int64_t d : target)
    if (d < 0) ctx.fail("shape input has a negative dimension {}", d);
  Shape out_shape = broadcast_shapes(x.shape(), target, &ctx);
  if (allocate_if_empty(ctx, 0, x.dtype(), out_shape)) return;
  std::vector<int64_t> strides = broadcast_strides(x.shape(), out_shape);
  gather_copy(ctx, 0, x, out_shape, strided_maps(out_shape, strides));
}

void tile(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> repeats;
  if (ctx.opset() < 6) {
    // Tile-1: inputs (input, tiles, axis) — repeat `tiles` times along `axis`.
    int64_t tiles = scalar_as_int(ctx.input(1), ctx, "tiles");
    int64_t axis = normalize_axis(scalar_as_int(ctx.input(2), ctx, "axis"), rank, ctx);
    repeats.assign(static_cast<std::size_t>(rank), 1);
    repeats[axis] = tiles;
  } else {
    const Tensor& r = ctx.input(1);
    if (r.rank() != 1) ctx.fail("repeats must be 1-D, found shape {}", shape_to_string(r.shape()));
    repeats = read_int_list(r, ctx);
  }
  if (static_cast<int64_t>(repeats.size()) != rank)
    ctx.fail("repeats has {} entries, expected {} (the input rank)", repeats.size(), rank);
  Shape out_shape(static_cast<std::size_t>(rank));
  for (int64_t k = 0; k < rank; ++k) {
    if (repeats[k] < 0) ctx.fail("repeats must be non-negative, found {}", repeats[k]);
    out_shape[k] = x.shape()[k] * repeats[k];
  }
  if (allocate_if_empty(ctx, 0, x.dtype(), out_shape)) return;
  std::vector<int64_t> in_strides = strides_of(x.shape());
  std::vector<std::vector<int64_t>> maps(static_cast<std::size_t>(rank));
  for (int64_t k = 0; k < rank; ++k) {
    maps[k].resize(static_cast<std::size_t>(out_shape[k]));
    for (int64_t j = 0; j < out_shape[k]; ++j) maps[k][j] = (j % x.shape()[k]) * in_strides[k];
  }
  gather_copy(ctx, 0, x, out_shape, maps);
}

}  // namespace

PARITY_KERNEL("", "Expand", 8, expand);
PARITY_KERNEL("", "Tile", 1, tile);

}  // namespace parity::ops::tensor
