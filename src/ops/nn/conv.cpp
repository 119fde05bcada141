// Conv, ConvInteger, QLinearConv: im2col + BLAS gemm (depthwise 2-D convolutions run directly).
// The integer convolutions run the same path in double, which is exact for their value ranges.
#include <cmath>
#include <cstring>
#include <limits>

#include "nn/nn_util.h"

namespace parity::ops {
namespace {

using nn::Geometry;

constexpr int64_t kColumnBufferLimit = int64_t{1} << 23;  // elements of one im2col tile

// Fills col rows (c, kh, kw) x output positions [oh0, oh1) x OW for a 2-D convolution.
template <typename C>
void im2col_2d(const C* x, int64_t channels, const Geometry& g, int64_t oh0, int64_t oh1, C* col) {
  const int64_t H = g.in[0], W = g.in[1], KH = g.kernel[0], KW = g.kernel[1];
  const int64_t sh = g.strides[0], sw = g.strides[1], dh = g.dilations[0], dw = g.dilations[1];
  const int64_t ph = g.pads[0], pw = g.pads[1];
  const int64_t OW = g.out[1];
  const int64_t cols = (oh1 - oh0) * OW;
  for (int64_t c = 0; c < channels; ++c) {
    const C* xc = x + c * H * W;
    for (int64_t kh = 0; kh < KH; ++kh) {
      for (int64_t kw = 0; kw < KW; ++kw) {
        C* dst = col + ((c * KH + kh) * KW + kw) * cols;
        const int64_t off = kw * dw - pw;
        int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
        int64_t hi = (W - 1 - off) < 0 ? 0 : (W - 1 - off) / sw + 1;
        lo = std::min(lo, OW);
        hi = std::clamp(hi, lo, OW);
        for (int64_t oh = oh0; oh < oh1; ++oh) {
          C* d = dst + (oh - oh0) * OW;
          const int64_t ih = oh * sh - ph + kh * dh;
          if (ih < 0 || ih >= H) {
            std::fill(d, d + OW, C(0));
            continue;
          }
          const C* s = xc + ih * W + off;
          std::fill(d, d + lo, C(0));
          if (sw == 1) {
            if (hi > lo) std::memcpy(d + lo, s + lo, static_cast<std::size_t>(hi - lo) * sizeof(C));
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) d[ow] = s[ow * sw];
          }
          std::fill(d + hi, d + OW, C(0));
        }
      }
    }
  }
}

// Any rank: rows (c, k...) x all output positions.
template <typename C>
void im2col_nd(const C* x, int64_t channels, const Geometry& g, C* col) {
  const std::size_t nd = g.nd;
  const int64_t ks = g.kernel_size(), os = g.out_size(), is = g.in_size();
  std::vector<int64_t> kidx(nd), oidx(nd);
  for (int64_t c = 0; c < channels; ++c) {
    const C* xc = x + c * is;
    for (int64_t k = 0; k < ks; ++k) {
      int64_t rem = k;
      for (std::size_t d = nd; d-- > 0;) {
        kidx[d] = rem % g.kernel[d];
        rem /= g.kernel[d];
      }
      C* dst = col + (c * ks + k) * os;
      std::fill(oidx.begin(), oidx.end(), 0);
      for (int64_t o = 0; o < os; ++o) {
        int64_t flat = 0;
        bool inside = true;
        for (std::size_t d = 0; d < nd; ++d) {
          int64_t i = oidx[d] * g.strides[d] - g.pads[d] + kidx[d] * g.dilations[d];
          if (i < 0 || i >= g.in[d]) {
            inside = false;
            break;
          }
          flat = flat * g.in[d] + i;
        }
        dst[o] = inside ? xc[flat] : C(0);
        for (std::size_t d = nd; d-- > 0;) {
          if (++oidx[d] < g.out[d]) break;
          oidx[d] = 0;
        }
      }
    }
  }
}

// Direct 2-D convolution of one input channel into one output channel (y += w * x).
template <typename C>
void depthwise_2d(const C* x, const C* w, const Geometry& g, C* y) {
  const int64_t H = g.in[0], W = g.in[1], KH = g.kernel[0], KW = g.kernel[1];
  const int64_t sh = g.strides[0], sw = g.strides[1], dh = g.dilations[0], dw = g.dilations[1];
  const int64_t ph = g.pads[0], pw = g.pads[1];
  const int64_t OH = g.out[0], OW = g.out[1];
  for (int64_t kh = 0; kh < KH; ++kh) {
    for (int64_t kw = 0; kw < KW; ++kw) {
      const C wv = w[kh * KW + kw];
      const int64_t off = kw * dw - pw;
      int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
      int64_t hi = (W - 1 - off) < 0 ? 0 : (W - 1 - off) / sw + 1;
      lo = std::min(lo, OW);
      hi = std::clamp(hi, lo, OW);
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t ih = oh * sh - ph + kh * dh;
        if (ih < 0 || ih >= H) continue;
        const C* s = x + ih * W + off;
        C* d = y + oh * OW;
        if (sw == 1) {
          for (int64_t ow = lo; ow < hi; ++ow) d[ow] += wv * s[ow];
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) d[ow] += wv * s[ow * sw];
        }
      }
    }
  }
}

// y[N, M, out...] = conv(x[N, Cin, in...], w[M, Cin/group, k...]) + bias[M].
template <typename C>
void conv_core(const Geometry& g, int64_t batch, int64_t cin, int64_t m, int64_t group, const C* x, const C* w,
               const C* bias, C* y) {
  const int64_t cg = cin / group, mg = m / group;
  const int64_t is = g.in_size(), os = g.out_size(), ks = g.kernel_size();
  const int64_t kdim = cg * ks;
  if (os == 0) return;
  bool pointwise = true;  // 1x1, stride 1, no padding: the input is its own column matrix
  for (std::size_t d = 0; d < g.nd; ++d)
    if (g.kernel[d] != 1 || g.strides[d] != 1 || g.pads[d] != 0 || g.pads[d + g.nd] != 0) pointwise = false;
  const bool depthwise = g.nd == 2 && cg == 1 && !pointwise;
  const bool tiled2d = g.nd == 2 || g.nd == 1;
  // 1-D runs as 2-D with a unit leading dim.
  Geometry g2 = g;
  if (g.nd == 1) {
    g2.nd = 2;
    g2.in = {1, g.in[0]};
    g2.kernel = {1, g.kernel[0]};
    g2.strides = {1, g.strides[0]};
    g2.dilations = {1, g.dilations[0]};
    g2.pads = {0, g.pads[0], 0, g.pads[1]};
    g2.out = {1, g.out[0]};
  }
  const int64_t OH = tiled2d ? g2.out[0] : 0, OW = tiled2d ? g2.out[1] : 0;
  int64_t rows_per_tile = OH;
  if (tiled2d && kdim * os > kColumnBufferLimit)
    rows_per_tile = std::max<int64_t>(1, kColumnBufferLimit / std::max<int64_t>(1, kdim * OW));
  C* col = nullptr;
  if (!pointwise && !depthwise)
    col = nn::scratch<C>(static_cast<std::size_t>(tiled2d ? kdim * rows_per_tile * OW : kdim * os));

  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t gi = 0; gi < group; ++gi) {
      const C* xg = x + (n * cin + gi * cg) * is;
      const C* wg = w + gi * mg * kdim;
      C* yg = y + (n * m + gi * mg) * os;
      if (pointwise) {
        nn::gemm(false, false, mg, os, kdim, C(1), wg, kdim, xg, os, C(0), yg, os);
      } else if (depthwise) {
        for (int64_t j = 0; j < mg; ++j) depthwise_2d(xg, wg + j * ks, g2, yg + j * os);
      } else if (tiled2d) {
        for (int64_t oh0 = 0; oh0 < OH; oh0 += rows_per_tile) {
          const int64_t oh1 = std::min(OH, oh0 + rows_per_tile);
          const int64_t cols = (oh1 - oh0) * OW;
          im2col_2d(xg, cg, g2, oh0, oh1, col);
          nn::gemm(false, false, mg, cols, kdim, C(1), wg, kdim, col, cols, C(0), yg + oh0 * OW, os);
        }
      } else {
        im2col_nd(xg, cg, g, col);
        nn::gemm(false, false, mg, os, kdim, C(1), wg, kdim, col, os, C(0), yg, os);
      }
    }
    if (bias) {
      for (int64_t j = 0; j < m; ++j) {
        C* yj = y + (n * m + j) * os;
        const C b = bias[j];
        for (int64_t i = 0; i < os; ++i) yj[i] += b;
      }
    }
  }
}

struct ConvSetup {
  Geometry g;
  int64_t batch = 0, cin = 0, m = 0, group = 1;
  Shape out_shape;
};

ConvSetup setup_conv(const KernelContext& ctx, const Shape& xs, const Shape& ws) {
  if (xs.size() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...), found {}", shape_to_string(xs));
  if (ws.size() != xs.size())
    ctx.fail("W must have X's rank {}, found {}", xs.size(), shape_to_string(ws));
  ConvSetup s;
  s.batch = xs[0];
  s.cin = xs[1];
  s.m = ws[0];
  s.group = ctx.attr_int("group", 1);
  if (s.group <= 0) ctx.fail("group must be positive, found {}", s.group);
  if (s.cin % s.group != 0 || ws[1] * s.group != s.cin)
    ctx.fail("X has {} channels, W expects {} per group with group={}", s.cin, ws[1], s.group);
  if (s.m % s.group != 0) ctx.fail("W's {} output channels are not divisible by group={}", s.m, s.group);
  Shape in(xs.begin() + 2, xs.end());
  Shape wk(ws.begin() + 2, ws.end());
  Shape k = nn::kernel_shape_attr(ctx, wk);
  if (k != wk) ctx.fail("kernel_shape {} differs from W's spatial dims {}", shape_to_string(k), shape_to_string(wk));
  s.g = nn::make_geometry(ctx, in, k);
  s.out_shape = {s.batch, s.m};
  s.out_shape.insert(s.out_shape.end(), s.g.out.begin(), s.g.out.end());
  return s;
}

void conv(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (w.dtype() != x.dtype()) ctx.fail("W must have X's element type");
  ConvSetup s = setup_conv(ctx, x.shape(), w.shape());
  if (b && (b->dtype() != x.dtype() || b->size() != s.m))
    ctx.fail("B must be a 1-D tensor of {} values of X's type, found {}", s.m, shape_to_string(b->shape()));
  Tensor& y = ctx.allocate_output(0, x.dtype(), s.out_shape);
  if (y.size() == 0) return;
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    using G = std::conditional_t<std::is_same_v<C, double>, double, float>;
    std::vector<G> xb, wb, bb, yb;
    const G* px = nn::as_compute<G, T>(x, xb);
    const G* pw = nn::as_compute<G, T>(w, wb);
    const G* pb = b ? nn::as_compute<G, T>(*b, bb) : nullptr;
    if constexpr (std::is_same_v<G, T>) {
      conv_core<G>(s.g, s.batch, s.cin, s.m, s.group, px, pw, pb, y.mutable_data<T>());
    } else {
      yb.assign(static_cast<std::size_t>(y.size()), G(0));
      conv_core<G>(s.g, s.batch, s.cin, s.m, s.group, px, pw, pb, yb.data());
      T* py = y.mutable_data<T>();
      for (int64_t i = 0; i < y.size(); ++i) py[i] = nn::from_compute<T>(yb[i]);
    }
  });
}

// --- integer convolutions -------------------------------------------------------------------------
using QuantTypes = TypeList<int8_t, uint8_t>;

// x - zero_point as double; zero point scalar, or (per_channel) one per leading-dim slice.
std::vector<double> centered(const KernelContext& ctx, const Tensor& t, const Tensor* zp, bool per_channel,
                             const char* what) {
  std::vector<double> out(static_cast<std::size_t>(t.size()));
  std::vector<double> z;
  if (zp) {
    if (zp->dtype() != t.dtype())
      ctx.fail("{} zero point must have the element type {}, found {}", what, dtype_name(t.dtype()),
               dtype_name(zp->dtype()));
    dispatch<QuantTypes>(zp->dtype(), ctx, [&]<typename T>() {
      for (int64_t i = 0; i < zp->size(); ++i) z.push_back(zp->data<T>()[i]);
    });
  }
  const int64_t channels = t.rank() > 0 ? t.shape()[0] : 1;
  if (z.size() > 1 && (!per_channel || static_cast<int64_t>(z.size()) != channels))
    ctx.fail("{} zero point must be a scalar{}, found shape {}", what,
             per_channel ? " or have one value per output channel" : "", shape_to_string(zp->shape()));
  const int64_t per = channels > 0 ? t.size() / std::max<int64_t>(channels, 1) : 0;
  dispatch<QuantTypes>(t.dtype(), ctx, [&]<typename T>() {
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.size(); ++i) {
      double zz = z.empty() ? 0.0 : z.size() == 1 ? z[0] : z[static_cast<std::size_t>(i / per)];
      out[i] = static_cast<double>(p[i]) - zz;
    }
  });
  return out;
}

void conv_integer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* xzp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Tensor* wzp = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  ConvSetup s = setup_conv(ctx, x.shape(), w.shape());
  auto xd = centered(ctx, x, xzp, false, "x");
  auto wd = centered(ctx, w, wzp, true, "w");
  Tensor& y = ctx.allocate_output(0, DType::kInt32, s.out_shape);
  if (y.size() == 0) return;
  std::vector<double> yd(static_cast<std::size_t>(y.size()));
  conv_core<double>(s.g, s.batch, s.cin, s.m, s.group, xd.data(), wd.data(), nullptr, yd.data());
  int32_t* py = y.mutable_data<int32_t>();
  for (int64_t i = 0; i < y.size(); ++i) py[i] = static_cast<int32_t>(static_cast<int64_t>(std::llround(yd[i])));
}

void qlinear_conv(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& x_scale = ctx.input(1);
  const Tensor& x_zp = ctx.input(2);
  const Tensor& w = ctx.input(3);
  const Tensor& w_scale = ctx.input(4);
  const Tensor& w_zp = ctx.input(5);
  const Tensor& y_scale = ctx.input(6);
  const Tensor& y_zp = ctx.input(7);
  const Tensor* b = ctx.has_input(8) ? &ctx.input(8) : nullptr;
  ConvSetup s = setup_conv(ctx, x.shape(), w.shape());
  for (const Tensor* t : {&x_scale, &w_scale, &y_scale})
    if (t->dtype() != DType::kFloat32) ctx.fail("scales must be float32, found {}", dtype_name(t->dtype()));
  if (x_scale.size() != 1 || y_scale.size() != 1) ctx.fail("x_scale and y_scale must be scalars");
  if (w_scale.size() != 1 && w_scale.size() != s.m)
    ctx.fail("w_scale must be a scalar or have {} values, found {}", s.m, w_scale.size());
  if (y_zp.size() != 1) ctx.fail("y_zero_point must be a scalar");
  if (b && (b->dtype() != DType::kInt32 || b->size() != s.m))
    ctx.fail("B must be an int32 tensor of {} values", s.m);
  auto xd = centered(ctx, x, &x_zp, false, "x");
  auto wd = centered(ctx, w, &w_zp, true, "w");
  std::vector<double> bias;
  if (b)
    for (int64_t i = 0; i < s.m; ++i) bias.push_back(b->data<int32_t>()[i]);
  Tensor& y = ctx.allocate_output(0, y_zp.dtype(), s.out_shape);
  if (y.size() == 0) return;
  std::vector<double> yd(static_cast<std::size_t>(y.size()));
  conv_core<double>(s.g, s.batch, s.cin, s.m, s.group, xd.data(), wd.data(), b ? bias.data() : nullptr, yd.data());
  const float xs = x_scale.data<float>()[0], ys = y_scale.data<float>()[0];
  const int64_t os = s.g.out_size();
  dispatch<QuantTypes>(y_zp.dtype(), ctx, [&]<typename T>() {
    const double zp = static_cast<double>(y_zp.data<T>()[0]);
    T* py = y.mutable_data<T>();
    for (int64_t i = 0; i < y.size(); ++i) {
      int64_t ch = (i / std::max<int64_t>(os, 1)) % s.m;
      float ws = w_scale.data<float>()[w_scale.size() == 1 ? 0 : ch];
      double scale = static_cast<double>(xs * ws / ys);
      double v = std::nearbyint(yd[i] * scale + zp);
      v = std::clamp(v, static_cast<double>(std::numeric_limits<T>::min()),
                     static_cast<double>(std::numeric_limits<T>::max()));
      py[i] = static_cast<T>(v);
    }
  });
}

}  // namespace

PARITY_KERNEL("", "Conv", 1, conv);
PARITY_KERNEL("", "ConvInteger", 10, conv_integer);
PARITY_KERNEL("", "QLinearConv", 10, qlinear_conv);

}  // namespace parity::ops
