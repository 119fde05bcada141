// Transpose (any element type, moved as bytes).
#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

void transpose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> perm;
  if (ctx.has_attribute("perm")) {
    perm = ctx.attr_ints("perm");
  } else {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != rank)
    ctx.fail("perm has {} entries, expected {} (the input rank)", perm.size(), rank);
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (int64_t& p : perm) {
    p = normalize_axis(p, rank, ctx);
    if (seen[p]) ctx.fail("perm ({}) is not a permutation", fmt::join(perm, ", "));
    seen[p] = true;
  }
  std::vector<int64_t> in_strides = strides_of(x.shape());
  Shape out_shape(static_cast<std::size_t>(rank));
  std::vector<int64_t> src_strides(static_cast<std::size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) {
    out_shape[i] = x.shape()[perm[i]];
    src_strides[i] = in_strides[perm[i]];
  }
  // An empty input may still have huge dims: no per-axis maps for an empty output.
  if (allocate_if_empty(ctx, 0, x.dtype(), out_shape)) return;
  gather_copy(ctx, 0, x, out_shape, strided_maps(out_shape, src_strides));
}

}  // namespace

PARITY_KERNEL("", "Transpose", 1, transpose);

}  // namespace parity::ops::tensor
