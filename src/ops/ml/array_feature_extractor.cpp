// ai.onnx.ml ArrayFeatureExtractor: selects entries of X's last axis by the indices in Y;
// output [..., len(Y)] ([1, len(Y)] for 1-D X, as onnxruntime does).
#include <vector>

#include "misc/misc_util.h"
#include "parity/ops/broadcast.h"

namespace parity::ops {
namespace {

void array_feature_extractor(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  if (x.rank() == 0) ctx.fail("X must have rank >= 1");
  std::vector<int64_t> idx = read_int_list(y, ctx);
  const int64_t last = x.shape().back();
  for (int64_t i : idx)
    if (i < 0 || i >= last) ctx.fail("index {} is out of range for the last dimension {}", i, last);
  const auto k = static_cast<int64_t>(idx.size());
  Shape out_shape = x.rank() == 1 ? Shape{1, k} : x.shape();
  out_shape.back() = k;
  Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
  const int64_t rows = misc::dims_product(x.shape(), 0, x.shape().size() - 1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j)
      misc::copy_elements(ctx, x.dtype(), x.raw(), r * last + idx[static_cast<std::size_t>(j)], out.mutable_raw(),
                          r * k + j, 1);
}

}  // namespace

PARITY_KERNEL("ai.onnx.ml", "ArrayFeatureExtractor", 1, array_feature_extractor);

}  // namespace parity::ops
