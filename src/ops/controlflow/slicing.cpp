#include "slicing.h"

#include <cstring>

namespace parity::ops::controlflow {
namespace {

void copy_elements(DType dtype, const void* src, int64_t src_index, void* dst, int64_t dst_index, int64_t count) {
  if (dtype == DType::kString) {
    const auto* s = static_cast<const std::string*>(src) + src_index;
    auto* d = static_cast<std::string*>(dst) + dst_index;
    for (int64_t i = 0; i < count; ++i) d[i] = s[i];
    return;
  }
  std::size_t size = storage_bytes(dtype, 1);
  std::memcpy(static_cast<char*>(dst) + dst_index * size, static_cast<const char*>(src) + src_index * size,
              static_cast<std::size_t>(count) * size);
}

}  // namespace

Tensor take_along(const Tensor& tensor, int64_t axis, int64_t index) {
  if (is_packed(tensor.dtype())) raise<UnsupportedError>("slicing packed {} tensors", dtype_name(tensor.dtype()));
  const Shape& shape = tensor.shape();
  if (axis < 0 || axis >= tensor.rank() || index < 0 || index >= shape[static_cast<std::size_t>(axis)])
    raise<InvalidInputError>("cannot take index {} along axis {} of a tensor of shape {}", index, axis,
                             shape_to_string(shape));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
  for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < shape.size(); ++i) inner *= shape[i];
  Shape out_shape = shape;
  out_shape.erase(out_shape.begin() + axis);
  Tensor out = Tensor::zeros(tensor.dtype(), out_shape);
  for (int64_t o = 0; o < outer; ++o)
    copy_elements(tensor.dtype(), tensor.raw(), (o * shape[axis] + index) * inner, out.mutable_raw(), o * inner, inner);
  return out;
}

Tensor stack_along(const std::vector<Tensor>& parts, int64_t axis, DType dtype, const Shape& part_shape) {
  if (is_packed(dtype)) raise<UnsupportedError>("stacking packed {} tensors", dtype_name(dtype));
  if (axis < 0 || axis > static_cast<int64_t>(part_shape.size()))
    raise<InvalidInputError>("cannot stack along axis {} for parts of shape {}", axis, shape_to_string(part_shape));
  Shape out_shape = part_shape;
  out_shape.insert(out_shape.begin() + axis, static_cast<int64_t>(parts.size()));
  Tensor out = Tensor::zeros(dtype, out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= part_shape[i];
  for (std::size_t i = static_cast<std::size_t>(axis); i < part_shape.size(); ++i) inner *= part_shape[i];
  const int64_t count = static_cast<int64_t>(parts.size());
  for (int64_t p = 0; p < count; ++p) {
    if (parts[p].shape() != part_shape || parts[p].dtype() != dtype)
      raise<InvalidInputError>("iteration {} produced a {} tensor of shape {}, earlier ones {} of shape {}", p,
                               dtype_name(parts[p].dtype()), shape_to_string(parts[p].shape()), dtype_name(dtype),
                               shape_to_string(part_shape));
    for (int64_t o = 0; o < outer; ++o)
      copy_elements(dtype, parts[p].raw(), o * inner, out.mutable_raw(), (o * count + p) * inner, inner);
  }
  return out;
}

bool read_condition(const Tensor& tensor, const KernelContext& ctx, const char* what) {
  if (tensor.size() != 1)
    ctx.fail("{} must hold exactly one element, found shape {}", what, shape_to_string(tensor.shape()));
  if (tensor.dtype() == DType::kBool) return tensor.data<uint8_t>()[0] != 0;
  ctx.fail("{} must be bool, found {}", what, dtype_name(tensor.dtype()));
}

}  // namespace parity::ops::controlflow
