// RoiAlign and MaxRoiPool.
#include <cmath>
#include <limits>

#include "nn/nn_util.h"

namespace parity::ops {
namespace {

struct Tap {
  int64_t pos[4];
  double w[4];
};

void roi_align(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const Tensor& batch_idx = ctx.input(2);
  if (x.rank() != 4) ctx.fail("X must be 4-D (N, C, H, W), found {}", shape_to_string(x.shape()));
  if (rois.rank() != 2 || rois.shape()[1] != 4)
    ctx.fail("rois must be (num_rois, 4), found {}", shape_to_string(rois.shape()));
  if (rois.dtype() != x.dtype()) ctx.fail("rois must have X's element type");
  const int64_t num_rois = rois.shape()[0];
  if (batch_idx.size() != num_rois) ctx.fail("batch_indices must have {} values, found {}", num_rois, batch_idx.size());
  auto bidx = read_int_list(batch_idx, ctx);
  const std::string mode = ctx.attr_string("mode");
  const bool max_mode = mode == "max";
  if (!max_mode && mode != "avg") ctx.fail("mode must be 'avg' or 'max', found '{}'", mode);
  const std::string ctm = ctx.opset() >= 16 ? ctx.attr_string("coordinate_transformation_mode") : "output_half_pixel";
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    ctx.fail("coordinate_transformation_mode must be 'half_pixel' or 'output_half_pixel', found '{}'", ctm);
  const bool half_pixel = ctm == "half_pixel";
  const int64_t oh = ctx.attr_int("output_height"), ow = ctx.attr_int("output_width");
  const int64_t sampling_ratio = ctx.attr_int("sampling_ratio");
  const double scale = ctx.attr_float("spatial_scale");
  if (oh <= 0 || ow <= 0) ctx.fail("output_height and output_width must be positive");
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  Tensor& y = ctx.allocate_output(0, x.dtype(), Shape{num_rois, C, oh, ow});
  if (y.size() == 0 || H == 0 || W == 0) return;  // an empty feature map samples zeros
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename Cm>() {
    const T* px = x.data<T>();
    const T* pr = rois.data<T>();
    T* py = y.mutable_data<T>();
    std::vector<Tap> taps;
    for (int64_t n = 0; n < num_rois; ++n) {
      const int64_t b = bidx[static_cast<std::size_t>(n)];
      if (b < 0 || b >= N) ctx.fail("batch index {} is out of range [0, {})", b, N);
      const double offset = half_pixel ? 0.5 : 0.0;
      auto roi = [&](int i) { return static_cast<double>(nn::to_compute<T, Cm>(pr[n * 4 + i])); };
      const double x0 = roi(0) * scale - offset, y0 = roi(1) * scale - offset;
      const double x1 = roi(2) * scale - offset, y1 = roi(3) * scale - offset;
      double rw = x1 - x0, rh = y1 - y0;
      if (!half_pixel) {
        rw = std::max(rw, 1.0);
        rh = std::max(rh, 1.0);
      }
      const double bin_h = rh / static_cast<double>(oh), bin_w = rw / static_cast<double>(ow);
      const int64_t grid_h =
          sampling_ratio > 0 ? sampling_ratio : static_cast<int64_t>(std::ceil(rh / static_cast<double>(oh)));
      const int64_t grid_w =
          sampling_ratio > 0 ? sampling_ratio : static_cast<int64_t>(std::ceil(rw / static_cast<double>(ow)));
      const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
      taps.clear();
      for (int64_t ph = 0; ph < oh; ++ph)
        for (int64_t pw = 0; pw < ow; ++pw)
          for (int64_t iy = 0; iy < grid_h; ++iy) {
            const double yy = y0 + static_cast<double>(ph) * bin_h +
                              (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              const double xx = x0 + static_cast<double>(pw) * bin_w +
                                (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
              Tap t{};
              if (yy < -1.0 || yy > static_cast<double>(H) || xx < -1.0 || xx > static_cast<double>(W)) {
                taps.push_back(t);
                continue;
              }
              double yv = std::max(yy, 0.0), xv = std::max(xx, 0.0);
              int64_t ylo = static_cast<int64_t>(yv), xlo = static_cast<int64_t>(xv), yhi, xhi;
              if (ylo >= H - 1) {
                yhi = ylo = H - 1;
                yv = static_cast<double>(ylo);
              } else {
                yhi = ylo + 1;
              }
              if (xlo >= W - 1) {
                xhi = xlo = W - 1;
                xv = static_cast<double>(xlo);
              } else {
                xhi = xlo + 1;
              }
              const double ly = yv - static_cast<double>(ylo), lx = xv - static_cast<double>(xlo);
              const double hy = 1.0 - ly, hx = 1.0 - lx;
              t.pos[0] = ylo * W + xlo;
              t.pos[1] = ylo * W + xhi;
              t.pos[2] = yhi * W + xlo;
              t.pos[3] = yhi * W + xhi;
              t.w[0] = hy * hx;
              t.w[1] = hy * lx;
              t.w[2] = ly * hx;
              t.w[3] = ly * lx;
              taps.push_back(t);
            }
          }
      const int64_t per_bin = grid_h * grid_w;
      for (int64_t c = 0; c < C; ++c) {
        const T* img = px + (b * C + c) * H * W;
        T* out = py + (n * C + c) * oh * ow;
        for (int64_t bin = 0; bin < oh * ow; ++bin) {
          const Tap* tb = taps.data() + bin * per_bin;
          double v = 0.0;
          for (int64_t s = 0; s < per_bin; ++s) {
            const Tap& t = tb[s];
            if (max_mode) {
              double m = -std::numeric_limits<double>::infinity();
              for (int q = 0; q < 4; ++q)
                m = std::max(m, t.w[q] * static_cast<double>(nn::to_compute<T, Cm>(img[t.pos[q]])));
              v = s == 0 ? m : std::max(v, m);
            } else {
              for (int q = 0; q < 4; ++q) v += t.w[q] * static_cast<double>(nn::to_compute<T, Cm>(img[t.pos[q]]));
            }
          }
          if (!max_mode) v /= count;
          out[bin] = nn::from_compute<T>(static_cast<Cm>(v));
        }
      }
    }
  });
}

void max_roi_pool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  if (x.rank() != 4) ctx.fail("X must be 4-D (N, C, H, W), found {}", shape_to_string(x.shape()));
  if (rois.rank() != 2 || rois.shape()[1] != 5)
    ctx.fail("rois must be (num_rois, 5), found {}", shape_to_string(rois.shape()));
  if (rois.dtype() != x.dtype()) ctx.fail("rois must have X's element type");
  auto pooled = ctx.attr_ints("pooled_shape");
  if (pooled.size() != 2 || pooled[0] <= 0 || pooled[1] <= 0) ctx.fail("pooled_shape must be two positive values");
  const double scale = ctx.attr_float("spatial_scale", 1.0f);
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t num_rois = rois.shape()[0], PH = pooled[0], PW = pooled[1];
  Tensor& y = ctx.allocate_output(0, x.dtype(), Shape{num_rois, C, PH, PW});
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename Cm>() {
    const T* px = x.data<T>();
    const T* pr = rois.data<T>();
    T* py = y.mutable_data<T>();
    for (int64_t n = 0; n < num_rois; ++n) {
      auto r = [&](int i) { return static_cast<double>(nn::to_compute<T, Cm>(pr[n * 5 + i])); };
      const int64_t b = static_cast<int64_t>(r(0));
      if (b < 0 || b >= N) ctx.fail("roi batch index {} is out of range [0, {})", b, N);
      const int64_t sw = static_cast<int64_t>(std::round(r(1) * scale));
      const int64_t sh = static_cast<int64_t>(std::round(r(2) * scale));
      const int64_t ew = static_cast<int64_t>(std::round(r(3) * scale));
      const int64_t eh = static_cast<int64_t>(std::round(r(4) * scale));
      const int64_t rw = std::max<int64_t>(ew - sw + 1, 1), rh = std::max<int64_t>(eh - sh + 1, 1);
      const double bh = static_cast<double>(rh) / static_cast<double>(PH);
      const double bw = static_cast<double>(rw) / static_cast<double>(PW);
      for (int64_t c = 0; c < C; ++c) {
        const T* img = px + (b * C + c) * H * W;
        T* out = py + (n * C + c) * PH * PW;
        for (int64_t ph = 0; ph < PH; ++ph) {
          int64_t hs = std::clamp<int64_t>(static_cast<int64_t>(std::floor(static_cast<double>(ph) * bh)) + sh, 0, H);
          int64_t he =
              std::clamp<int64_t>(static_cast<int64_t>(std::ceil(static_cast<double>(ph + 1) * bh)) + sh, 0, H);
          for (int64_t pw = 0; pw < PW; ++pw) {
            int64_t ws = std::clamp<int64_t>(static_cast<int64_t>(std::floor(static_cast<double>(pw) * bw)) + sw, 0, W);
            int64_t we =
                std::clamp<int64_t>(static_cast<int64_t>(std::ceil(static_cast<double>(pw + 1) * bw)) + sw, 0, W);
            Cm best = 0;
            bool any = false;
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w) {
                Cm v = nn::to_compute<T, Cm>(img[h * W + w]);
                if (!any || v > best) best = v;
                any = true;
              }
            out[ph * PW + pw] = nn::from_compute<T>(any ? best : Cm(0));
          }
        }
      }
    }
  });
}

}  // namespace

PARITY_KERNEL("", "RoiAlign", 10, roi_align);
PARITY_KERNEL("", "MaxRoiPool", 1, max_roi_pool);

}  // namespace parity::ops
