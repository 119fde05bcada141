// Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze: metadata-only ops (storage shared).
#include <algorithm>

#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

void shape_op(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  int64_t start = 0, end = rank;
  if (ctx.opset() >= 15) {
    start = ctx.attr_int("start", 0);
    if (ctx.has_attribute("end")) end = ctx.attr_int("end");
  }
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  start = clamp(start);
  end = clamp(end);
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(x.shape()[i]);
  set_int64_output(ctx, 0, dims, {static_cast<int64_t>(dims.size())});
}

void size_op(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ctx.allocate_output(0, DType::kInt64, {}).mutable_data<int64_t>()[0] = x.size();
}

void set_reshaped(KernelContext& ctx, const Tensor& x, Shape shape) {
  if (checked_element_count(shape) != x.size())
    ctx.fail("cannot reshape {} elements of shape {} to {}", x.size(), shape_to_string(x.shape()),
             shape_to_string(shape));
  ctx.set_output(0, x.reshaped(std::move(shape)));
}

void reshape(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> requested;
  if (ctx.opset() < 5) {
    requested = ctx.attr_ints("shape", std::vector<int64_t>{});
  } else {
    const Tensor& s = ctx.input(1);
    if (s.rank() != 1) ctx.fail("shape input must be 1-D, found shape {}", shape_to_string(s.shape()));
    requested = read_int_list(s, ctx);
  }
  bool allowzero = ctx.opset() >= 14 && ctx.attr_int("allowzero", 0) != 0;
  Shape out(requested.size());
  int64_t infer = -1, known = 1;
  for (std::size_t i = 0; i < requested.size(); ++i) {
    int64_t d = requested[i];
    if (d == 0 && !allowzero) {
      if (static_cast<int64_t>(i) >= x.rank())
        ctx.fail("shape entry {} is 0 (copy) but the input has rank {}", i, x.rank());
      d = x.shape()[i];
    } else if (d == -1) {
      if (infer >= 0) ctx.fail("shape {} has more than one -1", fmt::join(requested, ","));
      infer = static_cast<int64_t>(i);
      continue;
    } else if (d < -1) {
      ctx.fail("shape entry {} is invalid", d);
    }
    out[i] = d;
    known *= d;
  }
  if (infer >= 0) {
    if (known == 0 || x.size() % known != 0)
      ctx.fail("cannot infer the -1 dimension reshaping shape {} to ({})", shape_to_string(x.shape()),
               fmt::join(requested, ", "));
    out[infer] = x.size() / known;
  }
  set_reshaped(ctx, x, std::move(out));
}

void flatten(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t rank = x.rank();
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < -rank || axis > rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
  if (axis < 0) axis += rank;
  int64_t outer = product(x.shape(), 0, static_cast<std::size_t>(axis));
  int64_t inner = product(x.shape(), static_cast<std::size_t>(axis), x.shape().size());
  set_reshaped(ctx, x, {outer, inner});
}

std::vector<int64_t> axes_of(const KernelContext& ctx, bool& given) {
  given = false;
  if (ctx.opset() < 13) {
    if (!ctx.has_attribute("axes")) return {};
    given = true;
    return ctx.attr_ints("axes");
  }
  if (!ctx.has_input(1)) return {};
  given = true;
  return read_int_list(ctx.input(1), ctx);
}

void squeeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  bool given = false;
  std::vector<int64_t> axes = axes_of(ctx, given);
  std::vector<bool> drop(static_cast<std::size_t>(rank), false);
  if (!given || axes.empty()) {  // no axes (or an empty list): squeeze every 1-sized dim
    for (int64_t i = 0; i < rank; ++i) drop[i] = x.shape()[i] == 1;
  } else {
    for (int64_t a : axes) {
      int64_t n = normalize_axis(a, rank, ctx);
      if (x.shape()[n] != 1)
        ctx.fail("cannot squeeze axis {} of size {} (shape {})", a, x.shape()[n], shape_to_string(x.shape()));
      drop[n] = true;
    }
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[i]) out.push_back(x.shape()[i]);
  set_reshaped(ctx, x, std::move(out));
}

void unsqueeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool given = false;
  std::vector<int64_t> axes = axes_of(ctx, given);
  if (!given) ctx.fail("axes are required");
  const int64_t out_rank = x.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted(static_cast<std::size_t>(out_rank), false);
  for (int64_t a : axes) {
    int64_t n = normalize_axis(a, out_rank, ctx);
    if (inserted[n]) ctx.fail("axis {} is repeated", a);
    inserted[n] = true;
  }
  Shape out;
  std::size_t src = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[i] ? 1 : x.shape()[src++]);
  set_reshaped(ctx, x, std::move(out));
}

}  // namespace

PARITY_KERNEL("", "Shape", 1, shape_op);
PARITY_KERNEL("", "Size", 1, size_op);
PARITY_KERNEL("", "Reshape", 1, reshape);
PARITY_KERNEL("", "Flatten", 1, flatten);
PARITY_KERNEL("", "Squeeze", 1, squeeze);
PARITY_KERNEL("", "Unsqueeze", 1, unsqueeze);

}  // namespace parity::ops::tensor
