// QuantizeLinear, DequantizeLinear (per-tensor, per-axis, blocked; integer, packed int4/int2,
// float8 and float4 types), DynamicQuantizeLinear.
#include <cmath>
#include <cstring>
#include <limits>

#include "nn/nn_util.h"
#include "parity/core/float8.h"

namespace parity::ops {
namespace {

bool is_float8(DType t) {
  return t == DType::kFloat8E4M3FN || t == DType::kFloat8E4M3FNUZ || t == DType::kFloat8E5M2 ||
         t == DType::kFloat8E5M2FNUZ;
}

struct IntRange {
  double lo, hi;
};

bool int_range(DType t, IntRange& r) {
  switch (t) {
    case DType::kUInt8: r = {0, 255}; return true;
    case DType::kInt8: r = {-128, 127}; return true;
    case DType::kUInt16: r = {0, 65535}; return true;
    case DType::kInt16: r = {-32768, 32767}; return true;
    case DType::kUInt4: r = {0, 15}; return true;
    case DType::kInt4: r = {-8, 7}; return true;
    case DType::kUInt2: r = {0, 3}; return true;
    case DType::kInt2: r = {-2, 1}; return true;
    case DType::kInt32: r = {-2147483648.0, 2147483647.0}; return true;
    default: return false;
  }
}

// Element i of a quantized tensor (any supported type, packed ones included) as its value.
double load_q(DType t, const void* data, int64_t i) {
  const auto* b = static_cast<const uint8_t*>(data);
  switch (t) {
    case DType::kUInt8: return b[i];
    case DType::kInt8: return static_cast<const int8_t*>(data)[i];
    case DType::kUInt16: return static_cast<const uint16_t*>(data)[i];
    case DType::kInt16: return static_cast<const int16_t*>(data)[i];
    case DType::kInt32: return static_cast<const int32_t*>(data)[i];
    case DType::kUInt4: return (b[i / 2] >> ((i % 2) * 4)) & 0xF;
    case DType::kInt4: {
      int v = (b[i / 2] >> ((i % 2) * 4)) & 0xF;
      return v >= 8 ? v - 16 : v;
    }
    case DType::kUInt2: return (b[i / 4] >> ((i % 4) * 2)) & 0x3;
    case DType::kInt2: {
      int v = (b[i / 4] >> ((i % 4) * 2)) & 0x3;
      return v >= 2 ? v - 4 : v;
    }
    case DType::kFloat4E2M1:
      return minifloat_decode((b[i / 2] >> ((i % 2) * 4)) & 0xF, minifloat_format(t));
    default:
      if (is_float8(t)) return minifloat_to_float(b[i], t);
      throw UnsupportedError(std::string("quantized type ") + std::string(dtype_name(t)) + " is not supported");
  }
}

// Stores the code `bits` (or integer value) of element i of a packed/unpacked quantized tensor.
void store_q(DType t, void* data, int64_t i, int64_t value) {
  auto* b = static_cast<uint8_t*>(data);
  switch (t) {
    case DType::kUInt8: b[i] = static_cast<uint8_t>(value); return;
    case DType::kInt8: static_cast<int8_t*>(data)[i] = static_cast<int8_t>(value); return;
    case DType::kUInt16: static_cast<uint16_t*>(data)[i] = static_cast<uint16_t>(value); return;
    case DType::kInt16: static_cast<int16_t*>(data)[i] = static_cast<int16_t>(value); return;
    case DType::kInt32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(value); return;
    case DType::kUInt4:
    case DType::kInt4:
    case DType::kFloat4E2M1: {
      const int shift = static_cast<int>(i % 2) * 4;
      b[i / 2] = static_cast<uint8_t>((b[i / 2] & ~(0xF << shift)) | ((value & 0xF) << shift));
      return;
    }
    case DType::kUInt2:
    case DType::kInt2: {
      const int shift = static_cast<int>(i % 4) * 2;
      b[i / 4] = static_cast<uint8_t>((b[i / 4] & ~(0x3 << shift)) | ((value & 0x3) << shift));
      return;
    }
    default:
      if (is_float8(t)) {
        b[i] = static_cast<uint8_t>(value);
        return;
      }
      throw UnsupportedError(std::string("quantized type ") + std::string(dtype_name(t)) + " is not supported");
  }
}

// Maps an element index of x to the index of its scale / zero point.
struct ParamIndex {
  enum class Mode { kTensor, kAxis, kBlocked } mode = Mode::kTensor;
  int64_t dim = 1, inner = 1, block = 1, scale_dim = 1;
  int64_t operator()(int64_t e) const {
    switch (mode) {
      case Mode::kTensor: return 0;
      case Mode::kAxis: return (e / inner) % dim;
      case Mode::kBlocked: {
        const int64_t i = e % inner;
        const int64_t a = (e / inner) % dim;
        const int64_t o = e / (inner * dim);
        return (o * scale_dim + a / block) * inner + i;
      }
    }
    return 0;
  }
};

ParamIndex param_index(const KernelContext& ctx, const Shape& xs, const Tensor& scale, const Tensor* zp) {
  ParamIndex p;
  if (zp && zp->shape() != scale.shape() && !(zp->size() == 1 && scale.size() == 1))
    ctx.fail("zero point shape {} differs from scale shape {}", shape_to_string(zp->shape()),
             shape_to_string(scale.shape()));
  if (scale.size() == 1 && scale.rank() <= 1) return p;
  const int64_t rank = static_cast<int64_t>(xs.size());
  const int64_t axis = normalize_axis(ctx.attr_int("axis", 1), rank, ctx);
  const int64_t block = ctx.opset() >= 21 ? ctx.attr_int("block_size", 0) : 0;
  p.dim = xs[axis];
  p.inner = nn::product(xs, static_cast<std::size_t>(axis) + 1);
  if (block <= 0) {
    if (scale.rank() != 1 || scale.shape()[0] != p.dim)
      ctx.fail("a per-axis scale must be 1-D of length {} (axis {}), found {}", p.dim, axis,
               shape_to_string(scale.shape()));
    p.mode = ParamIndex::Mode::kAxis;
    return p;
  }
  p.mode = ParamIndex::Mode::kBlocked;
  p.block = block;
  p.scale_dim = (p.dim + block - 1) / block;
  Shape want = xs;
  want[axis] = p.scale_dim;
  if (scale.shape() != want)
    ctx.fail("a blocked scale must have shape {} (block_size {} on axis {}), found {}", shape_to_string(want), block,
             axis, shape_to_string(scale.shape()));
  return p;
}

// The scale's values: float8_e8m0 decoded here, other float types through read_floats.
std::vector<double> float_scale_values(KernelContext& ctx, const Tensor& scale) {
  if (scale.dtype() != DType::kFloat8E8M0) return nn::read_floats(ctx, scale);
  std::vector<double> values;
  for (int64_t i = 0; i < scale.size(); ++i)
    values.push_back(e8m0_to_float(static_cast<const uint8_t*>(scale.raw())[i]));
  return values;
}

// The zero point's values, none when there is no zero point.
std::vector<double> zero_point_values(const Tensor* zero_point) {
  std::vector<double> values;
  if (zero_point)
    for (int64_t i = 0; i < zero_point->size(); ++i)
      values.push_back(load_q(zero_point->dtype(), zero_point->raw(), i));
  return values;
}

// --- QuantizeLinear -------------------------------------------------------------------------------
void quantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  DType out_type = DType::kUInt8;
  int64_t out_attr = ctx.opset() >= 21 ? ctx.attr_int("output_dtype", 0) : 0;
  if (zp) {
    out_type = zp->dtype();
    if (out_attr != 0 && dtype_from_onnx(static_cast<int32_t>(out_attr)) != out_type)
      ctx.fail("output_dtype {} differs from the zero point's type {}", out_attr, dtype_name(out_type));
  } else if (out_attr != 0) {
    out_type = dtype_from_onnx(static_cast<int32_t>(out_attr));
  }
  IntRange range{};
  const bool integer = int_range(out_type, range) && out_type != DType::kInt32;
  if (!integer && !is_float8(out_type) && out_type != DType::kFloat4E2M1)
    ctx.unsupported("quantizing to {} is not supported", dtype_name(out_type));
  ParamIndex pi = param_index(ctx, x.shape(), scale, zp);
  const bool saturate = ctx.attr_int("saturate", 1) != 0;
  // Precision of x / scale: the `precision` attribute, else numpy's promotion of x and scale.
  DType prec = DType::kFloat32;
  int64_t prec_attr = ctx.opset() >= 23 ? ctx.attr_int("precision", 0) : 0;
  if (prec_attr != 0) prec = dtype_from_onnx(static_cast<int32_t>(prec_attr));
  else if (x.dtype() == DType::kInt32 || x.dtype() == DType::kFloat64 || scale.dtype() == DType::kFloat64)
    prec = DType::kFloat64;
  else if (x.dtype() == scale.dtype()) prec = x.dtype();
  if (ctx.fp64()) prec = DType::kFloat64;
  auto xv = x.dtype() == DType::kInt32 ? std::vector<double>() : nn::read_floats(ctx, x);
  if (x.dtype() == DType::kInt32)
    for (int64_t i = 0; i < x.size(); ++i) xv.push_back(x.data<int32_t>()[i]);
  std::vector<double> sv;
  if (scale.dtype() == DType::kInt32) {
    for (int64_t i = 0; i < scale.size(); ++i) sv.push_back(scale.data<int32_t>()[i]);
  } else {
    sv = float_scale_values(ctx, scale);
  }
  const std::vector<double> zv = zero_point_values(zp);
  auto round_to = [&](double v) -> double {
    switch (prec) {
      case DType::kFloat32: return static_cast<double>(static_cast<float>(v));
      case DType::kFloat16: return static_cast<double>(static_cast<float>(Float16(static_cast<float>(v))));
      case DType::kBFloat16: return static_cast<double>(static_cast<float>(BFloat16(static_cast<float>(v))));
      default: return v;
    }
  };
  Tensor& y = ctx.allocate_output(0, out_type, x.shape());
  void* py = y.mutable_raw();
  for (int64_t e = 0; e < x.size(); ++e) {
    const int64_t k = pi(e);
    const double s = round_to(sv[static_cast<std::size_t>(k)]);
    const double q = round_to(round_to(xv[static_cast<std::size_t>(e)]) / s);
    const double z = zv.empty() ? 0.0 : zv[static_cast<std::size_t>(zv.size() == 1 ? 0 : k)];
    if (integer) {
      double r = std::nearbyint(q);
      if (std::isnan(r)) r = 0;
      r = std::clamp(r + z, range.lo, range.hi);
      store_q(out_type, py, e, static_cast<int64_t>(r));
    } else if (out_type == DType::kFloat4E2M1) {
      store_q(out_type, py, e, minifloat_encode(q + z, minifloat_format(out_type), true));
    } else {
      store_q(out_type, py, e, float_to_minifloat(q + z, out_type, saturate));
    }
  }
}

// --- DequantizeLinear -----------------------------------------------------------------------------
void dequantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (zp && zp->dtype() != x.dtype())
    ctx.fail("x_zero_point must have x's type {}, found {}", dtype_name(x.dtype()), dtype_name(zp->dtype()));
  ParamIndex pi = param_index(ctx, x.shape(), scale, zp);
  DType out_type = scale.dtype();
  int64_t out_attr = ctx.opset() >= 23 ? ctx.attr_int("output_dtype", 0) : 0;
  if (out_attr != 0) out_type = dtype_from_onnx(static_cast<int32_t>(out_attr));
  if (out_type == DType::kFloat8E8M0) out_type = DType::kFloat32;
  const std::vector<double> sv = float_scale_values(ctx, scale);
  const std::vector<double> zv = zero_point_values(zp);
  Tensor& y = ctx.allocate_output(0, out_type, x.shape());
  const bool fp64 = ctx.fp64() || out_type == DType::kFloat64;
  dispatch<FloatTypes>(out_type, ctx, [&]<typename T>() {
    T* py = y.mutable_data<T>();
    for (int64_t e = 0; e < x.size(); ++e) {
      const int64_t k = pi(e);
      const double xv = load_q(x.dtype(), x.raw(), e);
      const double z = zv.empty() ? 0.0 : zv[static_cast<std::size_t>(zv.size() == 1 ? 0 : k)];
      const double s = sv[static_cast<std::size_t>(k)];
      if (fp64) {
        py[e] = nn::from_compute<T>(static_cast<compute_t<T>>((xv - z) * s));
      } else {
        const float d = static_cast<float>(xv) - static_cast<float>(z);
        py[e] = nn::from_compute<T>(static_cast<compute_t<T>>(d * static_cast<float>(s)));
      }
    }
  });
}

// --- DynamicQuantizeLinear ------------------------------------------------------------------------
void dynamic_quantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  auto xv = nn::read_floats(ctx, x);
  float mx = 0.0f, mn = 0.0f;
  for (double v : xv) {
    const float f = static_cast<float>(v);
    mx = std::max(mx, f);
    mn = std::min(mn, f);
  }
  const float scale = (mx == mn ? 1.0f : (mx - mn)) / 255.0f;
  const float initial_zp = 0.0f - mn / scale;
  const float zp = std::nearbyint(std::clamp(initial_zp, 0.0f, 255.0f));
  Tensor& y = ctx.allocate_output(0, DType::kUInt8, x.shape());
  uint8_t* py = y.mutable_data<uint8_t>();
  for (int64_t i = 0; i < x.size(); ++i) {
    float q = std::nearbyint(static_cast<float>(xv[static_cast<std::size_t>(i)]) / scale) + zp;
    py[i] = static_cast<uint8_t>(std::clamp(q, 0.0f, 255.0f));
  }
  Tensor& ys = ctx.allocate_output(1, x.dtype(), Shape{});
  dispatch<FloatTypes>(x.dtype(), ctx, [&]<typename T>() {
    ys.mutable_data<T>()[0] = nn::from_compute<T>(static_cast<compute_t<T>>(scale));
  });
  Tensor& yz = ctx.allocate_output(2, DType::kUInt8, Shape{});
  yz.mutable_data<uint8_t>()[0] = static_cast<uint8_t>(zp);
}

}  // namespace

PARITY_KERNEL("", "QuantizeLinear", 10, quantize_linear);
PARITY_KERNEL("", "DequantizeLinear", 10, dequantize_linear);
PARITY_KERNEL("", "DynamicQuantizeLinear", 11, dynamic_quantize_linear);

}  // namespace parity::ops
