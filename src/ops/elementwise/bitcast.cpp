// BitCast (opset 26): reinterprets the bytes (little endian) as another type of the same width.
// To bool, a non-zero byte becomes true (1): other patterns are not valid bools.
#include <cstring>

#include "elementwise/elementwise_util.h"

namespace parity::ops {
namespace {

void bitcast_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DType to;
  try {
    to = dtype_from_onnx(static_cast<int32_t>(ctx.attr_int("to")));
  } catch (const Error& e) {
    ctx.fail("attribute 'to': {}", e.message());
  }
  if (x.dtype() == DType::kString || to == DType::kString) ctx.fail("string tensors cannot be bit-cast");
  if (dtype_bits(x.dtype()) != dtype_bits(to))
    ctx.fail("cannot bit-cast {} ({} bits) to {} ({} bits): the widths differ", dtype_name(x.dtype()),
             dtype_bits(x.dtype()), dtype_name(to), dtype_bits(to));
  if (x.dtype() == to) {
    ctx.set_output(0, x);
    return;
  }
  Tensor& out = ctx.allocate_output(0, to, x.shape());
  if (to == DType::kBool) {
    // A bool byte other than 0 / 1 is not a valid bool: any non-zero pattern reads as true.
    const auto* src = static_cast<const uint8_t*>(x.raw());
    bool* dst = out.mutable_data<bool>();
    for (int64_t i = 0; i < x.size(); ++i) dst[i] = src[i] != 0;
    return;
  }
  if (x.byte_size() > 0) std::memcpy(out.mutable_raw(), x.raw(), x.byte_size());
}

}  // namespace

PARITY_KERNEL("", "BitCast", 26, bitcast_kernel);

}  // namespace parity::ops
