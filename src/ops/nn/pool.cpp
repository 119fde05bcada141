// MaxPool (with Indices), AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool, GlobalLpPool.
// 1-D and 2-D pools run as 3-D pools with leading unit dims.
#include <cmath>
#include <limits>

#include "nn/nn_util.h"

namespace parity::ops {
namespace {

struct Pool3 {
  int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3];
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
};

Pool3 to_pool3(const KernelContext& ctx, const nn::Geometry& g) {
  if (g.nd < 1 || g.nd > 3) ctx.unsupported("pools over {} spatial dims are not implemented (1 to 3)", g.nd);
  Pool3 p;
  const std::size_t lead = 3 - g.nd;
  for (std::size_t i = 0; i < 3; ++i) {
    if (i < lead) {
      p.in[i] = p.k[i] = p.s[i] = p.d[i] = p.out[i] = 1;
      p.pb[i] = p.pe[i] = 0;
    } else {
      std::size_t j = i - lead;
      p.in[i] = g.in[j];
      p.k[i] = g.kernel[j];
      p.s[i] = g.strides[j];
      p.d[i] = g.dilations[j];
      p.pb[i] = g.pads[j];
      p.pe[i] = g.pads[j + g.nd];
      p.out[i] = g.out[j];
    }
  }
  return p;
}

// The valid kernel taps of one output position along each dim: input index = start + k * dilation
// for k in [lo, hi) lies in [0, in).
struct PoolWindow {
  int64_t start[3], lo[3], hi[3];
  int64_t taps() const { return (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]); }
};

// Valid kernel taps [lo, hi) of output index o along dim i: input = o*s - pb + k*d in [0, in).
inline void tap_range(const Pool3& p, int i, int64_t o, PoolWindow& w) {
  int64_t& start = w.start[i];
  int64_t& lo = w.lo[i];
  int64_t& hi = w.hi[i];
  start = o * p.s[i] - p.pb[i];
  lo = start >= 0 ? 0 : (-start + p.d[i] - 1) / p.d[i];
  hi = p.in[i] - start <= 0 ? 0 : (p.in[i] - start + p.d[i] - 1) / p.d[i];
  hi = std::min(hi, p.k[i]);
  lo = std::min(lo, hi);
}

// Calls visit(plane, output, window) for every output position of `planes` (N x C) planes, in
// output order: `output` is the flat index into Y.
template <typename Visit>
void for_each_window(const Pool3& p, int64_t planes, Visit&& visit) {
  PoolWindow w;
  int64_t output = 0;
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t o0 = 0; o0 < p.out[0]; ++o0) {
      tap_range(p, 0, o0, w);
      for (int64_t o1 = 0; o1 < p.out[1]; ++o1) {
        tap_range(p, 1, o1, w);
        for (int64_t o2 = 0; o2 < p.out[2]; ++o2, ++output) {
          tap_range(p, 2, o2, w);
          visit(plane, output, w);
        }
      }
    }
}

// Calls tap(i0, i1, i2, offset) for every valid tap of `w`, in row-major order: (i0, i1, i2) is
// the input position and `offset` its flat index within the plane.
template <typename Tap>
void for_each_tap(const Pool3& p, const PoolWindow& w, Tap&& tap) {
  for (int64_t k0 = w.lo[0]; k0 < w.hi[0]; ++k0) {
    const int64_t i0 = w.start[0] + k0 * p.d[0];
    for (int64_t k1 = w.lo[1]; k1 < w.hi[1]; ++k1) {
      const int64_t i1 = w.start[1] + k1 * p.d[1];
      const int64_t row = (i0 * p.in[1] + i1) * p.in[2];
      for (int64_t k2 = w.lo[2]; k2 < w.hi[2]; ++k2) {
        const int64_t i2 = w.start[2] + k2 * p.d[2];
        tap(i0, i1, i2, row + i2);
      }
    }
  }
}

// Taps inside the explicitly padded extent [-pb, in + pe) (count_include_pad).
inline int64_t padded_taps(const Pool3& p, int i, int64_t start) {
  int64_t limit = p.in[i] + p.pe[i] - start;  // taps with k*d < limit
  if (limit <= 0) return 0;
  return std::min(p.k[i], (limit + p.d[i] - 1) / p.d[i]);
}

nn::Geometry pool_geometry(const KernelContext& ctx, const Tensor& x, bool has_dilations, bool allow_ceil) {
  if (x.rank() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...), found {}", shape_to_string(x.shape()));
  if (!ctx.has_attribute("kernel_shape")) ctx.fail("attribute 'kernel_shape' is required");
  Shape kernel = ctx.attr_ints("kernel_shape");
  Shape in(x.shape().begin() + 2, x.shape().end());
  bool ceil_mode = allow_ceil && ctx.attr_int("ceil_mode", 0) != 0;
  return nn::make_geometry(ctx, in, kernel, ceil_mode, has_dilations);
}

Shape pooled_shape(const Tensor& x, const nn::Geometry& g) {
  Shape s{x.shape()[0], x.shape()[1]};
  s.insert(s.end(), g.out.begin(), g.out.end());
  return s;
}

// --- MaxPool --------------------------------------------------------------------------------------
void max_pool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  nn::Geometry g = pool_geometry(ctx, x, ctx.opset() >= 10, ctx.opset() >= 10);
  Pool3 p = to_pool3(ctx, g);
  const int64_t storage_order = ctx.attr_int("storage_order", 0);
  Shape out_shape = pooled_shape(x, g);
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  const bool want_idx = ctx.output_requested(1);
  int64_t* pi = want_idx ? ctx.allocate_output(1, DType::kInt64, out_shape).mutable_data<int64_t>() : nullptr;
  const int64_t planes = x.shape()[0] * x.shape()[1];
  const int64_t is = p.in_size();
  dispatch<decltype(FloatTypes{} + TypeList<int8_t, uint8_t>{})>(x.dtype(), ctx, [&]<typename T>() {
    using C = compute_t<T>;
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    for_each_window(p, planes, [&](int64_t plane, int64_t o, const PoolWindow& w) {
      const T* xp = px + plane * is;
      bool found = false;
      C best{};
      int64_t bi0 = 0, bi1 = 0, bi2 = 0;
      for_each_tap(p, w, [&](int64_t i0, int64_t i1, int64_t i2, int64_t offset) {
        C v = static_cast<C>(convert<compute_t<T>>(xp[offset]));
        if (!found || v > best) {
          best = v;
          found = true;
          bi0 = i0;
          bi1 = i1;
          bi2 = i2;
        }
      });
      py[o] = found ? nn::from_compute<T>(best) : T{};
      if (pi) {
        int64_t local = (bi0 * p.in[1] + bi1) * p.in[2] + bi2;
        if (storage_order != 0) {  // column-major over the real dims: the first varies fastest
          const std::size_t lead = 3 - g.nd;
          int64_t idx[3] = {bi0, bi1, bi2};
          local = 0;
          int64_t mul = 1;
          for (std::size_t dd = lead; dd < 3; ++dd) {
            local += idx[dd] * mul;
            mul *= p.in[dd];
          }
        }
        pi[o] = found ? plane * is + local : -1;
      }
    });
  });
}

// --- AveragePool / LpPool -------------------------------------------------------------------------
enum class PoolKind { kAverage, kLp };

void avg_or_lp_pool(KernelContext& ctx, PoolKind kind) {
  const Tensor& x = ctx.input(0);
  const bool avg = kind == PoolKind::kAverage;
  const bool dil = avg ? ctx.opset() >= 19 : ctx.opset() >= 18;
  const bool ceil = avg ? ctx.opset() >= 10 : ctx.opset() >= 18;
  nn::Geometry g = pool_geometry(ctx, x, dil, ceil);
  Pool3 p = to_pool3(ctx, g);
  const bool include_pad = avg && ctx.attr_int("count_include_pad", 0) != 0;
  double pw = 1.0;
  if (!avg) pw = ctx.opset() >= 2 ? static_cast<double>(ctx.attr_int("p", 2)) : ctx.attr_float("p", 2.0f);
  Tensor& y = ctx.allocate_output(0, x.dtype(), pooled_shape(x, g));
  const int64_t planes = x.shape()[0] * x.shape()[1];
  const int64_t is = p.in_size();
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    using A = double;  // accumulator
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    const C cp = static_cast<C>(pw);
    for_each_window(p, planes, [&](int64_t plane, int64_t o, const PoolWindow& w) {
      const T* xp = px + plane * is;
      A sum = 0;
      for_each_tap(p, w, [&](int64_t, int64_t, int64_t, int64_t offset) {
        C v = nn::to_compute<T, C>(xp[offset]);
        if (avg) sum += v;
        else if (pw == 2.0) sum += static_cast<A>(v) * static_cast<A>(v);
        else if (pw == 1.0) sum += std::abs(v);
        else sum += std::pow(std::abs(v), cp);
      });
      C r;
      if (avg) {
        int64_t count = include_pad ? padded_taps(p, 0, w.start[0]) * padded_taps(p, 1, w.start[1]) *
                                          padded_taps(p, 2, w.start[2])
                                    : w.taps();
        r = count > 0 ? static_cast<C>(sum / static_cast<A>(count)) : C(0);
      } else {
        r = pw == 1.0 ? static_cast<C>(sum)
                      : pw == 2.0 ? static_cast<C>(std::sqrt(sum))
                                  : static_cast<C>(std::pow(static_cast<C>(sum), C(1) / cp));
      }
      py[o] = nn::from_compute<T>(r);
    });
  });
}

void average_pool(KernelContext& ctx) { avg_or_lp_pool(ctx, PoolKind::kAverage); }
void lp_pool(KernelContext& ctx) { avg_or_lp_pool(ctx, PoolKind::kLp); }

// --- global pools ---------------------------------------------------------------------------------
enum class GlobalKind { kAverage, kMax, kLp };

void global_pool(KernelContext& ctx, GlobalKind kind) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("X must have rank >= 2, found {}", shape_to_string(x.shape()));
  Shape out_shape(x.shape().size(), 1);
  out_shape[0] = x.shape()[0];
  out_shape[1] = x.shape()[1];
  const int64_t planes = x.shape()[0] * x.shape()[1];
  const int64_t is = nn::product(x.shape(), 2);
  double pw = 2.0;
  if (kind == GlobalKind::kLp)
    pw = ctx.opset() >= 2 ? static_cast<double>(ctx.attr_int("p", 2)) : ctx.attr_float("p", 2.0f);
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    for (int64_t plane = 0; plane < planes; ++plane) {
      const T* xp = px + plane * is;
      C r;
      if (kind == GlobalKind::kMax) {
        C best = is > 0 ? nn::to_compute<T, C>(xp[0]) : -std::numeric_limits<C>::infinity();
        for (int64_t i = 1; i < is; ++i) {
          C v = nn::to_compute<T, C>(xp[i]);
          if (v > best || std::isnan(v)) best = v;
          if (std::isnan(best)) break;
        }
        r = best;
      } else if (kind == GlobalKind::kAverage) {
        double sum = 0;
        for (int64_t i = 0; i < is; ++i) sum += nn::to_compute<T, C>(xp[i]);
        r = static_cast<C>(sum / static_cast<double>(is));
      } else {
        double sum = 0;
        for (int64_t i = 0; i < is; ++i) {
          double v = std::abs(static_cast<double>(nn::to_compute<T, C>(xp[i])));
          sum += pw == 2.0 ? v * v : std::pow(v, pw);
        }
        r = static_cast<C>(pw == 2.0 ? std::sqrt(sum) : std::pow(sum, 1.0 / pw));
      }
      py[plane] = nn::from_compute<T>(r);
    }
  });
}

void global_average_pool(KernelContext& ctx) { global_pool(ctx, GlobalKind::kAverage); }
void global_max_pool(KernelContext& ctx) { global_pool(ctx, GlobalKind::kMax); }
void global_lp_pool(KernelContext& ctx) { global_pool(ctx, GlobalKind::kLp); }

}  // namespace

PARITY_KERNEL("", "MaxPool", 1, max_pool);
PARITY_KERNEL("", "AveragePool", 1, average_pool);
PARITY_KERNEL("", "LpPool", 1, lp_pool);
PARITY_KERNEL("", "GlobalAveragePool", 1, global_average_pool);
PARITY_KERNEL("", "GlobalMaxPool", 1, global_max_pool);
PARITY_KERNEL("", "GlobalLpPool", 1, global_lp_pool);

}  // namespace parity::ops
