// Concat and Split.
#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

// Copies `rows` blocks of `block` elements from src (row stride src_stride) to dst (row stride dst_stride).
template <typename T>
void copy_blocks(T* dst, int64_t dst_stride, const T* src, int64_t src_stride, int64_t rows, int64_t block) {
  for (int64_t r = 0; r < rows; ++r) {
    T* d = dst + r * dst_stride;
    const T* s = src + r * src_stride;
    if constexpr (std::is_trivially_copyable_v<T>) {
      std::memcpy(d, s, static_cast<std::size_t>(block) * sizeof(T));
    } else {
      for (int64_t j = 0; j < block; ++j) d[j] = s[j];
    }
  }
}

void concat(KernelContext& ctx) {
  std::vector<const Tensor*> inputs;
  for (std::size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) inputs.push_back(&ctx.input(i));
  if (inputs.empty()) ctx.fail("needs at least one input");
  const Tensor& first = *inputs[0];
  const int64_t rank = first.rank();
  if (rank == 0) ctx.fail("cannot concatenate scalars");
  int64_t axis = ctx.opset() < 4 ? ctx.attr_int("axis", 1) : ctx.attr_int("axis");
  axis = normalize_axis(axis, rank, ctx);
  Shape out_shape = first.shape();
  out_shape[axis] = 0;
  for (const Tensor* t : inputs) {
    if (t->dtype() != first.dtype())
      ctx.fail("inputs have different types ({} and {})", dtype_name(first.dtype()), dtype_name(t->dtype()));
    if (t->rank() != rank) ctx.fail("inputs have different ranks ({} and {})", rank, t->rank());
    for (int64_t k = 0; k < rank; ++k)
      if (k != axis && t->shape()[k] != first.shape()[k])
        ctx.fail("input shapes {} and {} differ outside axis {}", shape_to_string(first.shape()),
                 shape_to_string(t->shape()), axis);
    out_shape[axis] += t->shape()[axis];
  }
  Tensor& out = ctx.allocate_output(0, first.dtype(), out_shape);
  if (out.size() == 0) return;
  const int64_t rows = product(out_shape, 0, static_cast<std::size_t>(axis));
  const int64_t inner = product(out_shape, static_cast<std::size_t>(axis) + 1, out_shape.size());
  const int64_t out_row = out_shape[axis] * inner;
  dispatch_bytes(first.dtype(), ctx, [&]<typename T>() {
    T* o = out.mutable_data<T>();
    int64_t offset = 0;
    for (const Tensor* t : inputs) {
      int64_t block = t->shape()[axis] * inner;
      if (block > 0) copy_blocks<T>(o + offset, out_row, t->data<T>(), block, rows, block);
      offset += block;
    }
  });
}

void split(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  if (rank == 0) ctx.fail("cannot split a scalar");
  const int64_t axis = normalize_axis(ctx.attr_int("axis", 0), rank, ctx);
  const int64_t dim = x.shape()[axis];
  const int64_t outputs = static_cast<int64_t>(ctx.num_outputs());
  std::vector<int64_t> sizes;
  bool have_split = false;
  if (ctx.opset() >= 13 || ctx.opset() == 1) {
    if (ctx.has_input(1) && ctx.input(1).size() > 0) {  // an empty split means "not given"
      sizes = read_int_list(ctx.input(1), ctx);
      have_split = true;
    }
  }
  if (!have_split && ctx.opset() < 13 && ctx.has_attribute("split")) {
    sizes = ctx.attr_ints("split");
    have_split = true;
  }
  if (have_split) {
    if (static_cast<int64_t>(sizes.size()) != outputs)
      ctx.fail("split has {} entries but the node has {} outputs", sizes.size(), outputs);
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0) ctx.fail("split sizes must be non-negative, found {}", s);
      if (s > dim - sum)
        ctx.fail("split sizes sum past dimension {} of {} (size {})", axis, shape_to_string(x.shape()), dim);
      sum += s;
    }
    if (sum != dim)
      ctx.fail("split sizes sum to {}, expected {} (dimension {} of {})", sum, dim, axis, shape_to_string(x.shape()));
  } else if (ctx.opset() >= 18 && ctx.has_attribute("num_outputs")) {
    int64_t n = ctx.attr_int("num_outputs");
    if (n <= 0) ctx.fail("num_outputs must be positive, found {}", n);
    if (n != outputs) ctx.fail("num_outputs is {} but the node has {} outputs", n, outputs);
    int64_t chunk = (dim + n - 1) / n;
    int64_t left = dim;
    for (int64_t i = 0; i < n; ++i) {
      int64_t s = std::min(chunk, left);
      sizes.push_back(s);
      left -= s;
    }
  } else {
    if (outputs <= 0) ctx.fail("has no outputs");
    if (dim % outputs != 0)
      ctx.fail("dimension {} of size {} cannot be split evenly into {} outputs", axis, dim, outputs);
    sizes.assign(static_cast<std::size_t>(outputs), dim / outputs);
  }
  const int64_t rows = product(x.shape(), 0, static_cast<std::size_t>(axis));
  const int64_t inner = product(x.shape(), static_cast<std::size_t>(axis) + 1, x.shape().size());
  const int64_t in_row = dim * inner;
  int64_t offset = 0;
  for (int64_t i = 0; i < outputs; ++i) {
    Shape shape = x.shape();
    shape[axis] = sizes[i];
    int64_t block = sizes[i] * inner;
    if (ctx.output_requested(static_cast<std::size_t>(i))) {
      Tensor& out = ctx.allocate_output(static_cast<std::size_t>(i), x.dtype(), shape);
      if (out.size() > 0)
        dispatch_bytes(x.dtype(), ctx, [&]<typename T>() {
          copy_blocks<T>(out.mutable_data<T>(), block, x.data<T>() + offset, in_row, rows, block);
        });
    }
    offset += block;
  }
}

}  // namespace

PARITY_KERNEL("", "Concat", 1, concat);
PARITY_KERNEL("", "Split", 1, split);

}  // namespace parity::ops::tensor
