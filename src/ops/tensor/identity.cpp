// Identity: tensors, sequences and optionals pass through unchanged (storage shared).
#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

void identity(KernelContext& ctx) { ctx.set_output(0, ctx.input_value(0)); }

}  // namespace

PARITY_KERNEL("", "Identity", 1, identity);

}  // namespace parity::ops::tensor
