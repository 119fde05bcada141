// Optional, OptionalHasElement, OptionalGetElement.
#include <memory>

#include "parity/ops/kernel.h"

namespace parity::ops {
namespace {

void optional_construct(KernelContext& ctx) {
  if (!ctx.has_input(0)) {
    if (!ctx.has_attribute("type")) ctx.fail("an Optional without input needs the 'type' attribute");
    ctx.set_output(0, Value::optional(nullptr));
    return;
  }
  const Value& v = ctx.input_value(0);
  if (!v.is_tensor() && !v.is_sequence()) ctx.fail("input must be a tensor or a sequence, found a {}", v.kind_name());
  ctx.set_output(0, Value::optional(std::make_shared<const Value>(v)));
}

void optional_has_element(KernelContext& ctx) {
  bool has = false;
  if (ctx.has_input(0)) {
    const Value& v = ctx.input_value(0);
    if (v.is_optional()) has = v.optional_value() != nullptr;
    else has = !v.is_none();
  }
  Tensor& out = ctx.allocate_output(0, DType::kBool, {});
  out.mutable_data<bool>()[0] = has;
}

void optional_get_element(KernelContext& ctx) {
  const Value& v = ctx.input_value(0);
  if (v.is_optional()) {
    const Value* inner = v.optional_value();
    if (!inner) ctx.fail("the input optional is empty");
    ctx.set_output(0, *inner);
    return;
  }
  if (!v.is_tensor() && !v.is_sequence()) ctx.fail("input must be an optional, a tensor or a sequence");
  ctx.set_output(0, v);
}

}  // namespace

PARITY_KERNEL("", "Optional", 15, optional_construct);
PARITY_KERNEL("", "OptionalHasElement", 15, optional_has_element);
PARITY_KERNEL("", "OptionalGetElement", 15, optional_get_element);

}  // namespace parity::ops
