// StringConcat: elementwise concatenation of two string tensors, with broadcasting.
#include <string>

#include "parity/ops/broadcast.h"

namespace parity::ops {
namespace {

void string_concat(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != DType::kString || b.dtype() != DType::kString)
    ctx.fail("inputs must be string tensors, found {} and {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
  binary_elementwise<std::string, std::string, std::string>(
      ctx, 0, a, b, [](const std::string& x, const std::string& y) { return x + y; });
}

}  // namespace

PARITY_KERNEL("", "StringConcat", 20, string_concat);

}  // namespace parity::ops
