// Slicing one index out of an axis and stacking slices back, for Loop/Scan/SequenceMap.
#pragma once

#include <vector>

#include "parity/ops/kernel.h"

namespace parity::ops::controlflow {

// tensor[..., index, ...] along `axis`, with that axis removed.
Tensor take_along(const Tensor& tensor, int64_t axis, int64_t index);
// Stacks equally shaped tensors along a new axis `axis` (count = parts.size()).
Tensor stack_along(const std::vector<Tensor>& parts, int64_t axis, DType dtype, const Shape& part_shape);

// Reads a boolean condition (a one-element bool tensor).
bool read_condition(const Tensor& tensor, const KernelContext& ctx, const char* what);

}  // namespace parity::ops::controlflow
