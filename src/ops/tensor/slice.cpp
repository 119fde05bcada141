// Slice: opset 1 (starts/ends/axes attributes) and opset 10+ (starts/ends/axes/steps inputs,
// negative steps, clamping as numpy does).
#include <algorithm>
#include <limits>

#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

void slice(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    if (ctx.has_attribute("axes")) axes = ctx.attr_ints("axes");
    else for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    steps.assign(starts.size(), 1);
  } else {
    starts = read_int_list(ctx.input(1), ctx);
    ends = read_int_list(ctx.input(2), ctx);
    if (ctx.has_input(3)) axes = read_int_list(ctx.input(3), ctx);
    else for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (ctx.has_input(4)) steps = read_int_list(ctx.input(4), ctx);
    else steps.assign(starts.size(), 1);
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, ends, axes and steps have different lengths ({}, {}, {}, {})", starts.size(), ends.size(),
             axes.size(), steps.size());
  Shape out_shape = x.shape();
  std::vector<int64_t> first(static_cast<std::size_t>(rank), 0), step(static_cast<std::size_t>(rank), 1);
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    int64_t axis = normalize_axis(axes[i], rank, ctx);
    if (seen[axis]) ctx.fail("axis {} is repeated", axes[i]);
    seen[axis] = true;
    const int64_t dim = x.shape()[axis];
    int64_t st = steps[i];
    if (st == 0) ctx.fail("steps must not be 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s = s < -dim ? -1 : s + dim;  // saturate far negatives before adding dim
    if (e < 0) e = e < -dim ? -1 : e + dim;
    int64_t count;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > s ? (e - s - 1) / st + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = s > e ? (st == std::numeric_limits<int64_t>::min() ? 1 : (s - e - 1) / (-st) + 1) : 0;
    }
    out_shape[axis] = count;
    first[axis] = s;
    step[axis] = st;
  }
  // An empty input may still have huge dims: no per-axis maps for an empty output.
  if (allocate_if_empty(ctx, 0, x.dtype(), out_shape)) return;
  std::vector<int64_t> in_strides = strides_of(x.shape());
  std::vector<std::vector<int64_t>> maps(static_cast<std::size_t>(rank));
  for (int64_t k = 0; k < rank; ++k) {
    maps[k].resize(static_cast<std::size_t>(out_shape[k]));
    for (int64_t j = 0; j < out_shape[k]; ++j) maps[k][j] = (first[k] + j * step[k]) * in_strides[k];
  }
  gather_copy(ctx, 0, x, out_shape, maps);
}

}  // namespace

PARITY_KERNEL("", "Slice", 1, slice);

}  // namespace parity::ops::tensor
