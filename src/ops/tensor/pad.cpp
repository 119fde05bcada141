// Pad (constant / reflect / edge / wrap; pads attribute before opset 11, input from 11, axes
// input from 18; negative pads crop) and CenterCropPad.
#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// Fills `out` with `value` (a 1-element tensor of out's type, or null for zero / empty).
void fill_constant(KernelContext& ctx, Tensor& out, const Tensor* value) {
  if (!value || out.size() == 0) return;
  dispatch_bytes(out.dtype(), ctx, [&]<typename T>() {
    T v = value->data<T>()[0];
    T* o = out.mutable_data<T>();
    for (int64_t i = 0, n = out.size(); i < n; ++i) o[i] = v;
  });
}

void pad_impl(KernelContext& ctx, const Tensor& x, std::vector<int64_t> begin, std::vector<int64_t> end, PadMode mode,
              const Tensor* value) {
  const int64_t rank = x.rank();
  std::vector<int64_t> lo(static_cast<std::size_t>(rank)), hi(static_cast<std::size_t>(rank));
  Shape out_shape(static_cast<std::size_t>(rank));
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t dim = x.shape()[k];
    lo[k] = std::max<int64_t>(-begin[k], 0);
    hi[k] = dim - std::max<int64_t>(-end[k], 0);
    begin[k] = std::max<int64_t>(begin[k], 0);
    end[k] = std::max<int64_t>(end[k], 0);
    if (hi[k] < lo[k]) ctx.fail("negative pads crop more than dimension {} of size {}", k, dim);
    out_shape[k] = begin[k] + (hi[k] - lo[k]) + end[k];
    if (mode != PadMode::kConstant && hi[k] == lo[k] && out_shape[k] > 0)
      ctx.fail("cannot pad an empty dimension {} in {} mode", k,
               mode == PadMode::kReflect ? "reflect"
               : mode == PadMode::kEdge  ? "edge"
                                         : "wrap");
  }
  if (allocate_if_empty(ctx, 0, x.dtype(), out_shape)) return;
  std::vector<int64_t> in_strides = strides_of(x.shape());
  std::vector<std::vector<int64_t>> maps(static_cast<std::size_t>(rank));
  if (mode == PadMode::kConstant) {
    Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
    fill_constant(ctx, out, value);
    Shape box(static_cast<std::size_t>(rank));
    int64_t offset = 0;
    std::vector<int64_t> out_strides = strides_of(out_shape);
    for (int64_t k = 0; k < rank; ++k) {
      box[k] = hi[k] - lo[k];
      offset += begin[k] * out_strides[k];
      maps[k].resize(static_cast<std::size_t>(box[k]));
      for (int64_t j = 0; j < box[k]; ++j) maps[k][j] = (lo[k] + j) * in_strides[k];
    }
    for (int64_t d : box)
      if (d == 0) return;
    dispatch_bytes(x.dtype(), ctx, [&]<typename T>() {
      map_copy<T>(out.mutable_data<T>(), offset, out_strides, box, x.data<T>(), maps);
    });
    return;
  }
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t n = hi[k] - lo[k];
    maps[k].resize(static_cast<std::size_t>(out_shape[k]));
    for (int64_t j = 0; j < out_shape[k]; ++j) {
      int64_t s = j - begin[k];
      if (mode == PadMode::kEdge) {
        s = std::clamp<int64_t>(s, 0, n - 1);
      } else if (mode == PadMode::kWrap) {
        s = ((s % n) + n) % n;
      } else if (n == 1) {
        s = 0;
      } else {
        int64_t period = 2 * (n - 1);
        int64_t m = ((s % period) + period) % period;
        s = m >= n ? period - m : m;
      }
      maps[k][j] = (lo[k] + s) * in_strides[k];
    }
  }
  gather_copy(ctx, 0, x, out_shape, maps);
}

void pad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::string mode_name = ctx.attr_string("mode", "constant");
  PadMode mode;
  if (mode_name == "constant") mode = PadMode::kConstant;
  else if (mode_name == "reflect") mode = PadMode::kReflect;
  else if (mode_name == "edge") mode = PadMode::kEdge;
  else if (mode_name == "wrap" && ctx.opset() >= 19) mode = PadMode::kWrap;
  else ctx.fail("unknown mode '{}'", mode_name);

  std::vector<int64_t> pads;
  Tensor value_storage;
  const Tensor* value = nullptr;
  std::vector<int64_t> axes;
  if (ctx.opset() < 11) {
    pads = ctx.attr_ints(ctx.opset() < 2 ? "paddings" : "pads");
    float v = ctx.attr_float("value", 0.0f);
    if (v != 0.0f) {
      value_storage = Tensor::zeros(x.dtype(), {});
      dispatch<NumericAndBoolTypes>(x.dtype(), ctx,
                                    [&]<typename T>() { value_storage.mutable_data<T>()[0] = convert<T>(v); });
      value = &value_storage;
    }
  } else {
    pads = read_int_list(ctx.input(1), ctx);
    if (ctx.has_input(2)) {
      const Tensor& c = ctx.input(2);
      if (c.dtype() != x.dtype())
        ctx.fail("constant_value type {} differs from data type {}", dtype_name(c.dtype()), dtype_name(x.dtype()));
      if (c.size() > 0) value = &c;  // an empty tensor means the default 0
    }
    if (ctx.opset() >= 18 && ctx.has_input(3)) axes = read_int_list(ctx.input(3), ctx);
  }
  if (axes.empty()) {
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  }
  const std::size_t na = axes.size();
  if (pads.size() != 2 * na) ctx.fail("pads has {} entries, expected {}", pads.size(), 2 * na);
  std::vector<int64_t> begin(static_cast<std::size_t>(rank), 0), end(static_cast<std::size_t>(rank), 0);
  for (std::size_t i = 0; i < na; ++i) {
    int64_t a = normalize_axis(axes[i], rank, ctx);
    begin[a] = pads[i];
    end[a] = pads[na + i];
  }
  pad_impl(ctx, x, begin, end, mode, value);
}

void center_crop_pad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> shape = read_int_list(ctx.input(1), ctx);
  std::vector<int64_t> axes = ctx.attr_ints("axes", std::vector<int64_t>{});
  if (axes.empty())
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  if (shape.size() != axes.size())
    ctx.fail("shape has {} entries, expected {} (one per axis)", shape.size(), axes.size());
  std::vector<int64_t> begin(static_cast<std::size_t>(rank), 0), end(static_cast<std::size_t>(rank), 0);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    int64_t a = normalize_axis(axes[i], rank, ctx);
    int64_t dim = x.shape()[a], target = shape[i];
    if (target < 0) ctx.fail("shape entry {} is negative", target);
    if (target < dim) {  // crop: start rounded down
      int64_t d = dim - target;
      begin[a] = -(d / 2);
      end[a] = -(d - d / 2);
    } else if (target > dim) {  // pad: extra pixel on the right
      int64_t d = target - dim;
      begin[a] = d / 2;
      end[a] = d - d / 2;
    }
  }
  pad_impl(ctx, x, begin, end, PadMode::kConstant, nullptr);
}

}  // namespace

PARITY_KERNEL("", "Pad", 1, pad);
PARITY_KERNEL("", "CenterCropPad", 18, center_crop_pad);

}  // namespace parity::ops::tensor
