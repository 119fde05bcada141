// ConvTranspose: per image and group, col = W_g^T * X_g (BLAS), then col2im scatter-adds the
// columns into the output.
#include "nn/nn_util.h"

namespace parity::ops {
namespace {

struct TransposeGeometry {
  std::size_t nd = 0;
  Shape in, kernel, out;
  std::vector<int64_t> strides, dilations, pads;  // pads: begin then end (may be negative)
};

template <typename C>
void col2im(const C* col, int64_t channels, const TransposeGeometry& g, C* y) {
  const std::size_t nd = g.nd;
  int64_t ks = 1, is = 1, os = 1;
  for (std::size_t d = 0; d < nd; ++d) {
    ks *= g.kernel[d];
    is *= g.in[d];
    os *= g.out[d];
  }
  if (nd == 2) {
    const int64_t H = g.in[0], W = g.in[1], KH = g.kernel[0], KW = g.kernel[1];
    const int64_t OH = g.out[0], OW = g.out[1];
    const int64_t sh = g.strides[0], sw = g.strides[1], dh = g.dilations[0], dw = g.dilations[1];
    const int64_t ph = g.pads[0], pw = g.pads[1];
    for (int64_t c = 0; c < channels; ++c) {
      C* yc = y + c * os;
      for (int64_t kh = 0; kh < KH; ++kh) {
        for (int64_t kw = 0; kw < KW; ++kw) {
          const C* src = col + ((c * KH + kh) * KW + kw) * is;
          const int64_t off = kw * dw - pw;  // ow = iw * sw + off
          // valid iw: 0 <= iw*sw + off < OW
          int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
          int64_t hi = (OW - 1 - off) < 0 ? 0 : (OW - 1 - off) / sw + 1;
          lo = std::min(lo, W);
          hi = std::clamp(hi, lo, W);
          for (int64_t ih = 0; ih < H; ++ih) {
            const int64_t oh = ih * sh - ph + kh * dh;
            if (oh < 0 || oh >= OH) continue;
            C* d = yc + oh * OW + off;
            const C* s = src + ih * W;
            if (sw == 1) {
              for (int64_t iw = lo; iw < hi; ++iw) d[iw] += s[iw];
            } else {
              for (int64_t iw = lo; iw < hi; ++iw) d[iw * sw] += s[iw];
            }
          }
        }
      }
    }
    return;
  }
  std::vector<int64_t> kidx(nd), iidx(nd);
  for (int64_t c = 0; c < channels; ++c) {
    C* yc = y + c * os;
    for (int64_t k = 0; k < ks; ++k) {
      int64_t rem = k;
      for (std::size_t d = nd; d-- > 0;) {
        kidx[d] = rem % g.kernel[d];
        rem /= g.kernel[d];
      }
      const C* src = col + (c * ks + k) * is;
      std::fill(iidx.begin(), iidx.end(), 0);
      for (int64_t i = 0; i < is; ++i) {
        int64_t flat = 0;
        bool inside = true;
        for (std::size_t d = 0; d < nd; ++d) {
          int64_t o = iidx[d] * g.strides[d] - g.pads[d] + kidx[d] * g.dilations[d];
          if (o < 0 || o >= g.out[d]) {
            inside = false;
            break;
          }
          flat = flat * g.out[d] + o;
        }
        if (inside) yc[flat] += src[i];
        for (std::size_t d = nd; d-- > 0;) {
          if (++iidx[d] < g.in[d]) break;
          iidx[d] = 0;
        }
      }
    }
  }
}

void conv_transpose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  if (xs.size() < 3) ctx.fail("X must have rank >= 3, found {}", shape_to_string(xs));
  if (ws.size() != xs.size()) ctx.fail("W must have X's rank, found {}", shape_to_string(ws));
  if (w.dtype() != x.dtype()) ctx.fail("W must have X's element type");
  const int64_t group = ctx.attr_int("group", 1);
  if (group <= 0) ctx.fail("group must be positive");
  const int64_t batch = xs[0], cin = xs[1];
  if (ws[0] != cin) ctx.fail("W's first dim {} must equal X's channels {}", ws[0], cin);
  if (cin % group != 0) ctx.fail("X's {} channels are not divisible by group={}", cin, group);
  const int64_t mg = ws[1], m = mg * group, cg = cin / group;

  TransposeGeometry g;
  g.nd = xs.size() - 2;
  const std::size_t nd = g.nd;
  g.in.assign(xs.begin() + 2, xs.end());
  Shape wk(ws.begin() + 2, ws.end());
  g.kernel = nn::kernel_shape_attr(ctx, wk);
  if (g.kernel != wk) ctx.fail("kernel_shape {} differs from W's {}", shape_to_string(g.kernel), shape_to_string(wk));
  auto ints_or = [&](const char* name, int64_t def) {
    std::vector<int64_t> v = ctx.has_attribute(name) ? ctx.attr_ints(name) : std::vector<int64_t>{};
    if (v.empty()) v.assign(nd, def);
    if (v.size() != nd) ctx.fail("{} has {} values, expected {}", name, v.size(), nd);
    return v;
  };
  g.strides = ints_or("strides", 1);
  g.dilations = ints_or("dilations", 1);
  std::vector<int64_t> out_pad = ints_or("output_padding", 0);
  for (std::size_t i = 0; i < nd; ++i)
    if (g.strides[i] <= 0 || g.dilations[i] <= 0) ctx.fail("strides and dilations must be positive");
  std::string auto_pad = ctx.has_attribute("auto_pad") ? ctx.attr_string("auto_pad") : "NOTSET";
  std::vector<int64_t> out_shape_attr = ctx.has_attribute("output_shape") ? ctx.attr_ints("output_shape")
                                                                          : std::vector<int64_t>{};
  if (out_shape_attr.size() == nd + 2) out_shape_attr.erase(out_shape_attr.begin(), out_shape_attr.begin() + 2);
  if (!out_shape_attr.empty() && out_shape_attr.size() != nd)
    ctx.fail("output_shape has {} values, expected {}", out_shape_attr.size(), nd);
  std::vector<int64_t> full(nd);  // size without any padding
  for (std::size_t i = 0; i < nd; ++i)
    full[i] = g.strides[i] * (g.in[i] - 1) + out_pad[i] + (g.kernel[i] - 1) * g.dilations[i] + 1;
  g.pads.assign(2 * nd, 0);
  g.out.assign(nd, 0);
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && !same && !auto_pad.empty())
    ctx.fail("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, found '{}'", auto_pad);
  if (!out_shape_attr.empty() || same) {
    for (std::size_t i = 0; i < nd; ++i) {
      g.out[i] = !out_shape_attr.empty() ? out_shape_attr[i] : g.in[i] * g.strides[i];
      // A requested size beyond the unpadded one is not negative padding: the extra output
      // (at the end) receives no input contributions (as ONNX Runtime and ONNX's reference do).
      int64_t total = std::max<int64_t>(0, full[i] - g.out[i]);
      if (auto_pad == "SAME_UPPER") {
        g.pads[i] = total / 2;
        g.pads[i + nd] = total - g.pads[i];
      } else {
        g.pads[i + nd] = total / 2;
        g.pads[i] = total - g.pads[i + nd];
      }
    }
  } else {
    if (auto_pad != "VALID" && ctx.has_attribute("pads")) {
      auto p = ctx.attr_ints("pads");
      if (!p.empty()) {
        if (p.size() != 2 * nd) ctx.fail("pads has {} values, expected {}", p.size(), 2 * nd);
        g.pads = p;
      }
    }
    for (std::size_t i = 0; i < nd; ++i) {
      g.out[i] = full[i] - g.pads[i] - g.pads[i + nd];
      if (g.out[i] < 0) ctx.fail("output dim {} would be negative ({})", i, g.out[i]);
    }
  }
  if (b && (b->dtype() != x.dtype() || b->size() != m))
    ctx.fail("B must have {} values of X's type, found {}", m, shape_to_string(b->shape()));

  Shape out_shape{batch, m};
  out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  if (y.size() == 0) return;
  const int64_t is = nn::product(g.in), os = nn::product(g.out), ks = nn::product(g.kernel);
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    using G = std::conditional_t<std::is_same_v<C, double>, double, float>;
    std::vector<G> xb, wb, yb(static_cast<std::size_t>(y.size()), G(0));
    const G* px = nn::as_compute<G, T>(x, xb);
    const G* pw = nn::as_compute<G, T>(w, wb);
    std::vector<G> col(static_cast<std::size_t>(mg * ks * is));
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t gi = 0; gi < group; ++gi) {
        const G* xg = px + (n * cin + gi * cg) * is;
        const G* wg = pw + gi * cg * mg * ks;
        nn::gemm(true, false, mg * ks, is, cg, G(1), wg, mg * ks, xg, is, G(0), col.data(), is);
        col2im(col.data(), mg, g, yb.data() + (n * m + gi * mg) * os);
      }
      if (b) {
        for (int64_t j = 0; j < m; ++j) {
          G bv = nn::to_compute<T, G>(b->data<T>()[j]);
          G* yj = yb.data() + (n * m + j) * os;
          for (int64_t i = 0; i < os; ++i) yj[i] += bv;
        }
      }
    }
    T* py = y.mutable_data<T>();
    for (int64_t i = 0; i < y.size(); ++i) py[i] = nn::from_compute<T>(yb[i]);
  });
}

}  // namespace

PARITY_KERNEL("", "ConvTranspose", 1, conv_transpose);

}  // namespace parity::ops
