// SplitToSequence and ConcatFromSequence.
#include <vector>

#include "misc/misc_util.h"
#include "parity/ops/broadcast.h"
#include "parity/ops/kernel.h"

namespace parity::ops {
namespace {

using misc::copy_elements;
using misc::dims_product;
using misc::new_tensor;

void split_to_sequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  if (rank == 0) ctx.fail("input must have rank >= 1, found a scalar");
  const auto axis = static_cast<std::size_t>(normalize_axis(ctx.attr_int("axis"), rank, ctx));
  const int64_t dim = x.shape()[axis];
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (ctx.has_input(1)) {
    const Tensor& s = ctx.input(1);
    std::vector<int64_t> split = read_int_list(s, ctx);
    if (s.rank() == 0) {
      int64_t chunk = split[0];
      if (chunk <= 0) ctx.fail("split must be positive, found {}", chunk);
      for (int64_t start = 0; start < dim; start += chunk) sizes.push_back(std::min(chunk, dim - start));
    } else {
      if (s.rank() != 1) ctx.fail("split must be a scalar or 1-D, found shape {}", shape_to_string(s.shape()));
      int64_t total = 0;
      for (int64_t v : split) {
        if (v < 0) ctx.fail("split values must be >= 0, found {}", v);
        total += v;
      }
      if (total != dim) ctx.fail("split sums to {}, but the dimension of axis {} is {}", total, axis, dim);
      sizes = split;
    }
  } else {
    sizes.assign(static_cast<std::size_t>(dim), 1);
    squeeze = ctx.attr_int("keepdims") == 0;
  }
  const int64_t outer = dims_product(x.shape(), 0, axis);
  const int64_t inner = dims_product(x.shape(), axis + 1, x.shape().size());
  std::vector<Tensor> items;
  items.reserve(sizes.size());
  int64_t offset = 0;
  for (int64_t len : sizes) {
    Shape shape = x.shape();
    shape[axis] = len;
    if (squeeze) shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
    Tensor part = new_tensor(ctx, x.dtype(), shape);
    for (int64_t o = 0; o < outer; ++o)
      copy_elements(ctx, x.dtype(), x.raw(), (o * dim + offset) * inner, part.mutable_raw(), o * len * inner,
                    len * inner);
    items.push_back(std::move(part));
    offset += len;
  }
  ctx.set_output(0, Value::sequence(std::move(items), x.dtype()));
}

void concat_from_sequence(KernelContext& ctx) {
  const Value& v = ctx.input_value(0);
  if (!v.is_sequence()) ctx.fail("input 0 is a {}, expected a sequence", v.kind_name());
  const auto& items = v.sequence();
  if (items.empty()) ctx.fail("cannot concatenate an empty sequence");
  const bool new_axis = ctx.attr_int("new_axis") != 0;
  const Shape& first = items[0].shape();
  const DType dtype = items[0].dtype();
  const int64_t rank = static_cast<int64_t>(first.size());
  const int64_t out_rank = rank + (new_axis ? 1 : 0);
  if (out_rank == 0) ctx.fail("cannot concatenate scalars without new_axis=1");
  const auto axis = static_cast<std::size_t>(normalize_axis(ctx.attr_int("axis"), out_rank, ctx));
  Shape out_shape = first;
  if (new_axis) out_shape.insert(out_shape.begin() + static_cast<std::ptrdiff_t>(axis), 0);
  else out_shape[axis] = 0;
  std::vector<int64_t> lens;
  for (std::size_t k = 0; k < items.size(); ++k) {
    const Tensor& t = items[k];
    if (t.dtype() != dtype) ctx.fail("sequence elements have different element types");
    bool ok = t.rank() == rank;
    for (std::size_t d = 0; ok && d < first.size(); ++d)
      if (d != axis || new_axis) ok = t.shape()[d] == first[d];
    if (!ok)
      ctx.fail("element {} has shape {}, incompatible with element 0's {} for axis {}", k,
               shape_to_string(t.shape()), shape_to_string(first), axis);
    int64_t len = new_axis ? 1 : t.shape()[axis];
    lens.push_back(len);
    out_shape[axis] += len;
  }
  Tensor& out = ctx.allocate_output(0, dtype, out_shape);
  const int64_t outer = dims_product(out_shape, 0, axis);
  const int64_t inner = dims_product(out_shape, axis + 1, out_shape.size());
  const int64_t total = out_shape[axis];
  int64_t offset = 0;
  for (std::size_t k = 0; k < items.size(); ++k) {
    const int64_t len = lens[k];
    for (int64_t o = 0; o < outer; ++o)
      copy_elements(ctx, dtype, items[k].raw(), o * len * inner, out.mutable_raw(), (o * total + offset) * inner,
                    len * inner);
    offset += len;
  }
}

}  // namespace

PARITY_KERNEL("", "SplitToSequence", 11, split_to_sequence);
PARITY_KERNEL("", "ConcatFromSequence", 11, concat_from_sequence);

}  // namespace parity::ops
