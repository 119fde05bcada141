// SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceAt, SequenceErase, SequenceLength.
// Sequence elements are tensor handles: kernels never write to their inputs, so elements are
// shared rather than copied.
#include <vector>

#include "misc/misc_util.h"
#include "parity/ops/broadcast.h"
#include "parity/ops/kernel.h"

namespace parity::ops {
namespace {

const Value& sequence_input(const KernelContext& ctx, std::size_t i) {
  const Value& v = ctx.input_value(i);
  if (!v.is_sequence()) ctx.fail("input {} is a {}, expected a sequence", i, v.kind_name());
  return v;
}

// Reads a scalar position (int32/int64) and normalizes it against [-n, n) or [-n, n] (allow_end).
int64_t read_position(const KernelContext& ctx, std::size_t input, int64_t n, bool allow_end) {
  const Tensor& t = ctx.input(input);
  if (t.size() != 1) ctx.fail("position must be a scalar, found shape {}", shape_to_string(t.shape()));
  int64_t p = read_int_list(t, ctx)[0];
  int64_t hi = allow_end ? n : n - 1;
  if (p < -n || p > hi) ctx.fail("position {} is out of range for a sequence of length {}", p, n);
  return p < 0 ? p + n : p;
}

void sequence_empty(KernelContext& ctx) {
  DType dtype = dtype_from_onnx(static_cast<int32_t>(ctx.attr_int("dtype", int64_t{1})));
  ctx.set_output(0, Value::sequence({}, dtype));
}

void sequence_construct(KernelContext& ctx) {
  std::vector<Tensor> items;
  DType dtype = DType::kUndefined;
  for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    if (i == 0) dtype = t.dtype();
    else if (t.dtype() != dtype)
      ctx.fail("all inputs must have one element type: input 0 is {}, input {} is {}", dtype_name(dtype), i,
               dtype_name(t.dtype()));
    items.push_back(t);
  }
  if (items.empty()) ctx.fail("needs at least one input");
  ctx.set_output(0, Value::sequence(std::move(items), dtype));
}

void sequence_insert(KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  const Tensor& t = ctx.input(1);
  std::vector<Tensor> items = seq.sequence();
  DType dtype = seq.sequence_dtype();
  if (dtype != DType::kUndefined && t.dtype() != dtype)
    ctx.fail("tensor element type {} differs from the sequence's {}", dtype_name(t.dtype()), dtype_name(dtype));
  const int64_t n = static_cast<int64_t>(items.size());
  int64_t pos = ctx.has_input(2) ? read_position(ctx, 2, n, true) : n;
  items.insert(items.begin() + pos, t);
  ctx.set_output(0, Value::sequence(std::move(items), t.dtype()));
}

void sequence_at(KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  const auto& items = seq.sequence();
  int64_t pos = read_position(ctx, 1, static_cast<int64_t>(items.size()), false);
  ctx.set_output(0, items[static_cast<std::size_t>(pos)]);
}

void sequence_erase(KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  std::vector<Tensor> items = seq.sequence();
  const int64_t n = static_cast<int64_t>(items.size());
  if (n == 0) ctx.fail("cannot erase from an empty sequence");
  int64_t pos = ctx.has_input(1) ? read_position(ctx, 1, n, false) : n - 1;
  items.erase(items.begin() + pos);
  ctx.set_output(0, Value::sequence(std::move(items), seq.sequence_dtype()));
}

void sequence_length(KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  Tensor& out = ctx.allocate_output(0, DType::kInt64, {});
  out.mutable_data<int64_t>()[0] = static_cast<int64_t>(seq.sequence().size());
}

}  // namespace

PARITY_KERNEL("", "SequenceEmpty", 11, sequence_empty);
PARITY_KERNEL("", "SequenceConstruct", 11, sequence_construct);
PARITY_KERNEL("", "SequenceInsert", 11, sequence_insert);
PARITY_KERNEL("", "SequenceAt", 11, sequence_at);
PARITY_KERNEL("", "SequenceErase", 11, sequence_erase);
PARITY_KERNEL("", "SequenceLength", 11, sequence_length);

}  // namespace parity::ops
