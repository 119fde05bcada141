#include "parity/ops/broadcast.h"

namespace parity::ops {

Shape broadcast_shapes(std::span<const Shape> shapes, const KernelContext* ctx) {
  std::size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const auto& s : shapes) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::vector<std::string> texts;
      for (const auto& t : shapes) texts.push_back(shape_to_string(t));
      std::string message = fmt::format("shapes {} cannot be broadcast together", fmt::join(texts, ", "));
      if (ctx) ctx->fail("{}", message);
      throw InvalidInputError(message);
    }
  }
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const KernelContext* ctx) {
  Shape both[2] = {a, b};
  return broadcast_shapes(std::span<const Shape>(both, 2), ctx);
}

std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    std::size_t o = out.size() - shape.size() + i;
    strides[o] = shape[i] == 1 ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const KernelContext& ctx) {
  if (axis < -rank || axis >= rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> read_int_list(const Tensor& tensor, const KernelContext& ctx) {
  std::vector<int64_t> values(static_cast<std::size_t>(tensor.size()));
  if (tensor.dtype() == DType::kInt64) {
    for (int64_t i = 0; i < tensor.size(); ++i) values[i] = tensor.data<int64_t>()[i];
  } else if (tensor.dtype() == DType::kInt32) {
    for (int64_t i = 0; i < tensor.size(); ++i) values[i] = tensor.data<int32_t>()[i];
  } else {
    ctx.fail("expected an int32 or int64 tensor, found {}", dtype_name(tensor.dtype()));
  }
  return values;
}

int64_t read_scalar_int(const KernelContext& ctx, std::size_t index, const char* name) {
  const Tensor& t = ctx.input(index);
  if (t.size() != 1) ctx.fail("{} must be a scalar, found shape {}", name, shape_to_string(t.shape()));
  return read_int_list(t, ctx)[0];
}

}  // namespace parity::ops
