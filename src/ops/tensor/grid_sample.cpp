// GridSample (N-D; nearest / linear / cubic; zeros / border / reflection padding; align_corners)
// and AffineGrid (2-D and 3-D).
#include <cmath>

#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

// Reflects x into [lo, hi] by bouncing off the borders.
template <typename C>
C reflect(C x, C lo, C hi) {
  C range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    C dx = lo - x;
    int64_t n = static_cast<int64_t>(dx / range);
    C r = dx - static_cast<C>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    C dx = x - hi;
    int64_t n = static_cast<int64_t>(dx / range);
    C r = dx - static_cast<C>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

template <typename C>
void cubic_coeffs(C t, C* c) {
  const C a = C(-0.75);
  t = std::abs(t);
  C t1 = t + 1, u = 1 - t, u1 = 2 - t;
  c[0] = ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a;
  c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  c[2] = ((a + 2) * u - (a + 3)) * u * u + 1;
  c[3] = ((a * u1 - 5 * a) * u1 + 8 * a) * u1 - 4 * a;
}

enum class Padding { kZeros, kBorder, kReflection };
enum class GMode { kNearest, kLinear, kCubic };

void grid_sample(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  const int64_t rank = x.rank();
  const int64_t r = rank - 2;
  if (r < 1) ctx.fail("X must have rank >= 3, found shape {}", shape_to_string(x.shape()));
  if (grid.rank() != rank || grid.shape()[0] != x.shape()[0] || grid.shape()[rank - 1] != r)
    ctx.fail("grid shape {} does not match X shape {} (expected (N, D1..Dr, {}))", shape_to_string(grid.shape()),
             shape_to_string(x.shape()), r);
  std::string mode_name = ctx.attr_string("mode", ctx.opset() >= 20 ? "linear" : "bilinear");
  GMode mode;
  if (mode_name == "nearest") mode = GMode::kNearest;
  else if (mode_name == "linear" || mode_name == "bilinear") mode = GMode::kLinear;
  else if (mode_name == "cubic" || mode_name == "bicubic") mode = GMode::kCubic;
  else ctx.fail("unknown mode '{}'", mode_name);
  std::string pad_name = ctx.attr_string("padding_mode", "zeros");
  Padding padding;
  if (pad_name == "zeros") padding = Padding::kZeros;
  else if (pad_name == "border") padding = Padding::kBorder;
  else if (pad_name == "reflection") padding = Padding::kReflection;
  else ctx.fail("unknown padding_mode '{}'", pad_name);
  const bool align = ctx.attr_int("align_corners", 0) != 0;
  if (ctx.opset() < 20 && r != 2) ctx.fail("GridSample before opset 20 takes 4-D input, found rank {}", rank);

  const int64_t N = x.shape()[0], Cn = x.shape()[1];
  Shape out_shape = {N, Cn};
  for (int64_t k = 1; k <= r; ++k) out_shape.push_back(grid.shape()[k]);
  Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
  if (out.size() == 0) return;
  const int64_t spatial_in = product(x.shape(), 2, x.shape().size());
  const int64_t spatial_out = product(out_shape, 2, out_shape.size());
  std::vector<int64_t> in_strides = strides_of(Shape(x.shape().begin() + 2, x.shape().end()));
  if (spatial_in == 0) ctx.fail("X has an empty spatial dimension: {}", shape_to_string(x.shape()));

  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    if (grid.dtype() != x.dtype() && !is_floating(grid.dtype()))
      ctx.fail("grid must be a float tensor, found {}", dtype_name(grid.dtype()));
    std::vector<C> g(static_cast<std::size_t>(grid.size()));
    dispatch<FloatTypes>(grid.dtype(), ctx, [&]<typename G>() {
      const G* gp = grid.data<G>();
      for (int64_t i = 0; i < grid.size(); ++i) g[i] = static_cast<C>(convert<double>(gp[i]));
    });
    const T* xp = x.data<T>();
    T* op = out.mutable_data<T>();
    const int taps = mode == GMode::kNearest ? 1 : mode == GMode::kLinear ? 2 : 4;
    // Per dimension: tap offsets (element offsets, or -1 for a zero pixel) and weights.
    std::vector<int64_t> off(static_cast<std::size_t>(r * taps));
    std::vector<C> wt(static_cast<std::size_t>(r * taps));
    std::vector<int64_t> combo(static_cast<std::size_t>(r));
    std::vector<C> acc(static_cast<std::size_t>(Cn));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t s = 0; s < spatial_out; ++s) {
        const C* gv = g.data() + (n * spatial_out + s) * r;
        for (int64_t d = 0; d < r; ++d) {
          const int64_t dim = x.shape()[2 + d];
          const C len = static_cast<C>(dim);
          C v = gv[r - 1 - d];  // grid stores (x, y, z...): reversed spatial order
          C pos = align ? (v + 1) / 2 * (len - 1) : ((v + 1) * len - 1) / 2;
          const C lo = align ? C(0) : C(-0.5);
          const C hi = align ? len - 1 : len - C(0.5);
          if (mode == GMode::kNearest) pos = std::nearbyint(pos);
          if (pos < lo || pos > hi) {
            if (padding == Padding::kBorder) pos = std::clamp(pos, C(0), len - 1);
            else if (padding == Padding::kReflection) pos = reflect(pos, lo, hi);
          }
          if (!std::isfinite(pos)) pos = C(-2);
          pos = std::clamp(pos, C(-4) - len, len * 2 + 4);  // keeps the index arithmetic finite
          auto resolve = [&](int64_t i) -> int64_t {
            if (i >= 0 && i < dim) return i;
            if (padding == Padding::kZeros) return -1;
            if (padding == Padding::kBorder) return std::clamp<int64_t>(i, 0, dim - 1);
            int64_t j = static_cast<int64_t>(reflect(static_cast<C>(i), lo, hi));
            return std::clamp<int64_t>(j, 0, dim - 1);
          };
          int64_t* o = off.data() + d * taps;
          C* w = wt.data() + d * taps;
          if (mode == GMode::kNearest) {
            o[0] = resolve(static_cast<int64_t>(pos));
            w[0] = 1;
          } else if (mode == GMode::kLinear) {
            C f = std::floor(pos);
            int64_t i0 = static_cast<int64_t>(f);
            C t = pos - f;
            o[0] = resolve(i0);
            o[1] = resolve(i0 + 1);
            w[0] = 1 - t;
            w[1] = t;
          } else {
            C f = std::floor(pos);
            int64_t i0 = static_cast<int64_t>(f);
            cubic_coeffs<C>(pos - f, w);
            for (int q = 0; q < 4; ++q) o[q] = resolve(i0 - 1 + q);
          }
          for (int q = 0; q < taps; ++q)
            if (o[q] >= 0) o[q] *= in_strides[d];
        }
        std::fill(acc.begin(), acc.end(), C(0));
        std::fill(combo.begin(), combo.end(), 0);
        while (true) {
          C w = 1;
          int64_t offset = 0;
          bool zero = false;
          for (int64_t d = 0; d < r; ++d) {
            int64_t o = off[d * taps + combo[d]];
            if (o < 0) {
              zero = true;
              break;
            }
            offset += o;
            w *= wt[d * taps + combo[d]];
          }
          if (!zero && w != C(0)) {
            const T* base = xp + n * Cn * spatial_in + offset;
            for (int64_t c = 0; c < Cn; ++c) acc[c] += w * static_cast<C>(load(base, c * spatial_in));
          }
          int64_t d = r - 1;
          while (d >= 0 && ++combo[d] == taps) combo[d--] = 0;
          if (d < 0) break;
        }
        for (int64_t c = 0; c < Cn; ++c) op[(n * Cn + c) * spatial_out + s] = convert<T>(acc[c]);
      }
    }
  });
}

void affine_grid(KernelContext& ctx) {
  const Tensor& theta = ctx.input(0);
  std::vector<int64_t> size = read_int_list(ctx.input(1), ctx);
  const bool align = ctx.attr_int("align_corners", 0) != 0;
  const int64_t r = static_cast<int64_t>(size.size()) - 2;
  if (r != 2 && r != 3) ctx.fail("size must have 4 or 5 entries, found {}", size.size());
  const int64_t N = size[0];
  if (theta.rank() != 3 || theta.shape()[0] != N || theta.shape()[1] != r || theta.shape()[2] != r + 1)
    ctx.fail("theta shape {} must be ({}, {}, {})", shape_to_string(theta.shape()), N, r, r + 1);
  Shape out_shape = {N};
  for (int64_t k = 0; k < r; ++k) {
    if (size[2 + k] < 0) ctx.fail("size has a negative dimension");
    out_shape.push_back(size[2 + k]);
  }
  out_shape.push_back(r);
  Tensor& out = ctx.allocate_output(0, theta.dtype(), out_shape);
  if (out.size() == 0) return;
  dispatch_float(theta.dtype(), ctx, [&]<typename T, typename C>() {
    const T* th = theta.data<T>();
    T* o = out.mutable_data<T>();
    // Base coordinates per spatial dim (dims in (D,) H, W order).
    std::vector<std::vector<C>> base(static_cast<std::size_t>(r));
    for (int64_t k = 0; k < r; ++k) {
      int64_t L = size[2 + k];
      base[k].resize(static_cast<std::size_t>(L));
      for (int64_t i = 0; i < L; ++i) {
        if (align) base[k][i] = L == 1 ? C(-1) : C(-1) + static_cast<C>(i) * C(2) / static_cast<C>(L - 1);
        else base[k][i] = C(-1) + static_cast<C>(2 * i + 1) / static_cast<C>(L);
      }
    }
    const int64_t spatial = product(out_shape, 1, static_cast<std::size_t>(r + 1));
    std::vector<int64_t> counter(static_cast<std::size_t>(r), 0);
    std::vector<C> homo(static_cast<std::size_t>(r + 1));
    for (int64_t n = 0; n < N; ++n) {
      const T* t = th + n * r * (r + 1);
      std::fill(counter.begin(), counter.end(), 0);
      for (int64_t s = 0; s < spatial; ++s) {
        // homogeneous (x, y[, z], 1): x is the last spatial dim
        for (int64_t k = 0; k < r; ++k) homo[k] = base[r - 1 - k][counter[r - 1 - k]];
        homo[r] = 1;
        for (int64_t row = 0; row < r; ++row) {
          C v = 0;
          for (int64_t col = 0; col <= r; ++col) v += static_cast<C>(load(t, row * (r + 1) + col)) * homo[col];
          o[(n * spatial + s) * r + row] = convert<T>(v);
        }
        for (int64_t k = r; k-- > 0;) {
          if (++counter[k] < size[2 + k]) break;
          counter[k] = 0;
        }
      }
    }
  });
}

void col2im(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> image = read_int_list(ctx.input(1), ctx);
  std::vector<int64_t> block = read_int_list(ctx.input(2), ctx);
  const int64_t r = static_cast<int64_t>(image.size());
  if (r < 1 || static_cast<int64_t>(block.size()) != r)
    ctx.fail("image_shape ({}) and block_shape ({}) must have the same positive length", image.size(), block.size());
  std::vector<int64_t> dil = ctx.attr_ints("dilations", std::vector<int64_t>{});
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>{});
  std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>{});
  if (dil.empty()) dil.assign(static_cast<std::size_t>(r), 1);
  if (pads.empty()) pads.assign(static_cast<std::size_t>(2 * r), 0);
  if (strides.empty()) strides.assign(static_cast<std::size_t>(r), 1);
  if (static_cast<int64_t>(dil.size()) != r || static_cast<int64_t>(pads.size()) != 2 * r ||
      static_cast<int64_t>(strides.size()) != r)
    ctx.fail("dilations, pads and strides must have {}, {} and {} entries", r, 2 * r, r);
  if (x.rank() != 3) ctx.fail("input must be 3-D (N, C*prod(block), L), found shape {}", shape_to_string(x.shape()));
  int64_t kernel = 1;
  for (int64_t b : block) {
    if (b <= 0) ctx.fail("block_shape entries must be positive");
    kernel *= b;
  }
  const int64_t N = x.shape()[0];
  if (x.shape()[1] % kernel != 0)
    ctx.fail("dimension 1 ({}) is not divisible by prod(block_shape) = {}", x.shape()[1], kernel);
  const int64_t C = x.shape()[1] / kernel;
  std::vector<int64_t> cols(static_cast<std::size_t>(r));
  int64_t L = 1;
  for (int64_t k = 0; k < r; ++k) {
    if (strides[k] <= 0 || dil[k] <= 0 || image[k] < 0) ctx.fail("strides and dilations must be positive");
    cols[k] = (image[k] + pads[k] + pads[r + k] - (dil[k] * (block[k] - 1) + 1)) / strides[k] + 1;
    if (cols[k] < 0) cols[k] = 0;
    L *= cols[k];
  }
  if (x.shape()[2] != L) ctx.fail("dimension 2 is {}, expected {} sliding blocks", x.shape()[2], L);
  Shape out_shape = {N, C};
  out_shape.insert(out_shape.end(), image.begin(), image.end());
  Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
  if (out.size() == 0) return;
  const int64_t img = product(out_shape, 2, out_shape.size());
  std::vector<int64_t> img_strides = strides_of(Shape(image.begin(), image.end()));
  dispatch<NumericTypes>(x.dtype(), ctx, [&]<typename T>() {
    using A = std::conditional_t<is_float_v<T>, double, T>;
    const T* xp = x.data<T>();
    T* op = out.mutable_data<T>();
    std::vector<A> acc(static_cast<std::size_t>(img));
    std::vector<int64_t> kc(static_cast<std::size_t>(r)), cc(static_cast<std::size_t>(r));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        std::fill(acc.begin(), acc.end(), A(0));
        for (int64_t kk = 0; kk < kernel; ++kk) {
          int64_t rest = kk;
          for (int64_t k = r; k-- > 0;) {
            kc[k] = rest % block[k];
            rest /= block[k];
          }
          const T* row = xp + ((n * C + c) * kernel + kk) * L;
          for (int64_t l = 0; l < L; ++l) {
            int64_t lr = l, off = 0;
            bool inside = true;
            for (int64_t k = r; k-- > 0;) {
              cc[k] = lr % cols[k];
              lr /= cols[k];
            }
            for (int64_t k = 0; k < r && inside; ++k) {
              int64_t p = cc[k] * strides[k] - pads[k] + kc[k] * dil[k];
              if (p < 0 || p >= image[k]) inside = false;
              else off += p * img_strides[k];
            }
            if (inside) acc[off] = wrap_add(acc[off], convert<A>(row[l]));
          }
        }
        T* dst = op + (n * C + c) * img;
        for (int64_t i = 0; i < img; ++i) dst[i] = convert<T>(acc[i]);
      }
  });
}

}  // namespace

PARITY_KERNEL("", "GridSample", 16, grid_sample);
PARITY_KERNEL("", "AffineGrid", 20, affine_grid);
PARITY_KERNEL("", "Col2Im", 18, col2im);

}  // namespace parity::ops::tensor
