// DeformConv (2-D): each kernel tap samples the input bilinearly at its offset position (zero
// outside the image), scaled by the optional mask; the sampled columns are multiplied by W (BLAS).
#include <cmath>

#include "nn/nn_util.h"

namespace parity::ops {
namespace {

template <typename C>
C bilinear(const C* img, int64_t H, int64_t W, C h, C w) {
  if (!(h > C(-1)) || !(h < C(H)) || !(w > C(-1)) || !(w < C(W))) return C(0);
  const C hf = std::floor(h), wf = std::floor(w);
  const int64_t h0 = static_cast<int64_t>(hf), w0 = static_cast<int64_t>(wf);
  const C lh = h - hf, lw = w - wf;
  auto at = [&](int64_t y, int64_t x) -> C {
    return (y >= 0 && y < H && x >= 0 && x < W) ? img[y * W + x] : C(0);
  };
  return (C(1) - lh) * (C(1) - lw) * at(h0, w0) + (C(1) - lh) * lw * at(h0, w0 + 1) +
         lh * (C(1) - lw) * at(h0 + 1, w0) + lh * lw * at(h0 + 1, w0 + 1);
}

void deform_conv(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor& offset = ctx.input(2);
  const Tensor* b = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  const Tensor* mask = ctx.has_input(4) ? &ctx.input(4) : nullptr;
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  if (xs.size() != 4) ctx.unsupported("only 2-D DeformConv is implemented, X is {}", shape_to_string(xs));
  if (ws.size() != 4) ctx.fail("W must be 4-D, found {}", shape_to_string(ws));
  for (const Tensor* t : {&w, &offset, b, mask})
    if (t && t->dtype() != x.dtype()) ctx.fail("all inputs must have X's element type");
  const int64_t group = ctx.attr_int("group", 1);
  const int64_t offset_group = ctx.attr_int("offset_group", 1);
  const int64_t batch = xs[0], cin = xs[1], H = xs[2], W = xs[3], m = ws[0];
  if (group <= 0 || offset_group <= 0) ctx.fail("group and offset_group must be positive");
  if (ws[1] * group != cin || m % group != 0) ctx.fail("W {} does not match X {} with group={}",
                                                        shape_to_string(ws), shape_to_string(xs), group);
  if (cin % offset_group != 0) ctx.fail("X's channels are not divisible by offset_group={}", offset_group);
  Shape wk(ws.begin() + 2, ws.end());
  Shape k = nn::kernel_shape_attr(ctx, wk);
  if (k != wk) ctx.fail("kernel_shape differs from W's spatial dims");
  nn::Geometry g = nn::make_geometry(ctx, Shape{H, W}, k);
  const int64_t KH = k[0], KW = k[1], ks = KH * KW, OH = g.out[0], OW = g.out[1], os = OH * OW;
  Shape want_off{batch, offset_group * ks * 2, OH, OW};
  if (offset.shape() != want_off) ctx.fail("offset must have shape {}, found {}", shape_to_string(want_off),
                                           shape_to_string(offset.shape()));
  if (mask) {
    Shape want_mask{batch, offset_group * ks, OH, OW};
    if (mask->shape() != want_mask) ctx.fail("mask must have shape {}, found {}", shape_to_string(want_mask),
                                             shape_to_string(mask->shape()));
  }
  if (b && b->size() != m) ctx.fail("B must have {} values", m);
  Tensor& y = ctx.allocate_output(0, x.dtype(), Shape{batch, m, OH, OW});
  if (y.size() == 0) return;
  const int64_t cg = cin / group, mg = m / group, cog = cin / offset_group;
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    using G = std::conditional_t<std::is_same_v<C, double>, double, float>;
    std::vector<G> xb, wb, ob, mb, yb(static_cast<std::size_t>(y.size()), G(0));
    const G* px = nn::as_compute<G, T>(x, xb);
    const G* pw = nn::as_compute<G, T>(w, wb);
    const G* po = nn::as_compute<G, T>(offset, ob);
    const G* pm = mask ? nn::as_compute<G, T>(*mask, mb) : nullptr;
    std::vector<G> col(static_cast<std::size_t>(cg * ks * os));
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t gi = 0; gi < group; ++gi) {
        for (int64_t cl = 0; cl < cg; ++cl) {
          const int64_t c = gi * cg + cl;
          const int64_t og = c / cog;
          const G* img = px + (n * cin + c) * H * W;
          for (int64_t kh = 0; kh < KH; ++kh)
            for (int64_t kw = 0; kw < KW; ++kw) {
              const int64_t kk = kh * KW + kw;
              const G* off_h = po + ((n * offset_group + og) * ks * 2 + kk * 2) * os;
              const G* off_w = off_h + os;
              const G* mk = pm ? pm + ((n * offset_group + og) * ks + kk) * os : nullptr;
              G* dst = col.data() + (cl * ks + kk) * os;
              for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                  const int64_t o = oh * OW + ow;
                  G hh = static_cast<G>(oh * g.strides[0] - g.pads[0] + kh * g.dilations[0]) + off_h[o];
                  G ww = static_cast<G>(ow * g.strides[1] - g.pads[1] + kw * g.dilations[1]) + off_w[o];
                  G v = bilinear<G>(img, H, W, hh, ww);
                  dst[o] = mk ? v * mk[o] : v;
                }
            }
        }
        nn::gemm(false, false, mg, os, cg * ks, G(1), pw + gi * mg * cg * ks, cg * ks, col.data(), os, G(0),
                 yb.data() + (n * m + gi * mg) * os, os);
      }
      if (b) {
        for (int64_t j = 0; j < m; ++j) {
          G bv = nn::to_compute<T, G>(b->data<T>()[j]);
          for (int64_t i = 0; i < os; ++i) yb[(n * m + j) * os + i] += bv;
        }
      }
    }
    T* py = y.mutable_data<T>();
    for (int64_t i = 0; i < y.size(); ++i) py[i] = nn::from_compute<T>(yb[i]);
  });
}

}  // namespace

PARITY_KERNEL("", "DeformConv", 19, deform_conv);

}  // namespace parity::ops
