// Resize (opsets 10, 11, 13, 18, 19) and Upsample (opsets 7, 9).
//
// Resize is separable: each resized axis gets a list of (input index, weight) taps per output
// coordinate. Nearest mode copies elements (exact for every type); linear and cubic (with optional
// antialias) accumulate in double, one axis at a time, and round once into the output type.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

struct ResizeParams {
  Mode mode = Mode::kNearest;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  std::string coord = "half_pixel";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0.0;
};

struct AxisTaps {
  int64_t in = 0, out = 0;
  bool identity = false;
  std::vector<int64_t> begin;  // out+1 offsets into idx / w
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<uint8_t> extrapolated;  // per output coordinate
  bool any_extrapolated = false;
};

double cubic_kernel(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

// Source coordinate of output coordinate y (NaN-free); sets `extrapolate` for tf_crop_and_resize
// positions outside the input.
double source_coordinate(const ResizeParams& p, double y, int64_t in, int64_t out, double scale, double length,
                         double roi_start, double roi_end, bool& extrapolate) {
  extrapolate = false;
  const std::string& c = p.coord;
  if (c == "half_pixel") return (y + 0.5) / scale - 0.5;
  if (c == "asymmetric") return y / scale;
  if (c == "pytorch_half_pixel") return out > 1 ? (y + 0.5) / scale - 0.5 : 0.0;
  if (c == "tf_half_pixel_for_nn") return (y + 0.5) / scale;
  if (c == "align_corners") return length == 1.0 ? 0.0 : y * static_cast<double>(in - 1) / (length - 1.0);
  if (c == "half_pixel_symmetric") {
    double adjustment = static_cast<double>(out) / length;
    double center = static_cast<double>(in) / 2.0;
    double offset = center * (1.0 - adjustment);
    return offset + (y + 0.5) / scale - 0.5;
  }
  if (c == "tf_crop_and_resize") {
    double x = length == 1.0 ? (roi_end - roi_start) * static_cast<double>(in - 1) / 2.0
                             : y * (roi_end - roi_start) * static_cast<double>(in - 1) / (length - 1.0);
    x += roi_start * static_cast<double>(in - 1);
    if (x < 0 || x > static_cast<double>(in - 1)) extrapolate = true;
    return x;
  }
  throw InvalidInputError("unknown coordinate_transformation_mode '" + c + "'");
}

AxisTaps make_taps(const KernelContext& ctx, const ResizeParams& p, int64_t in, int64_t out, double scale,
                   double length, double roi_start, double roi_end) {
  AxisTaps t;
  t.in = in;
  t.out = out;
  t.begin.reserve(static_cast<std::size_t>(out) + 1);
  t.begin.push_back(0);
  t.extrapolated.assign(static_cast<std::size_t>(out), 0);
  if (!(scale > 0) || !std::isfinite(scale)) ctx.fail("scale {} must be positive and finite", scale);
  for (int64_t yo = 0; yo < out; ++yo) {
    bool extrap = false;
    double x;
    try {
      x = source_coordinate(p, static_cast<double>(yo), in, out, scale, length, roi_start, roi_end, extrap);
    } catch (const InvalidInputError& e) {
      ctx.fail("{}", e.what());
    }
    if (extrap) {
      t.extrapolated[yo] = 1;
      t.any_extrapolated = true;
    }
    if (!std::isfinite(x)) x = 0;
    x = std::clamp(x, -1e15, 1e15);
    if (p.mode == Mode::kNearest) {
      double fl = std::floor(x);
      double frac = x - fl;
      int64_t i;
      switch (p.nearest) {
        case NearestMode::kRoundPreferFloor: i = static_cast<int64_t>(frac <= 0.5 ? fl : fl + 1); break;
        case NearestMode::kRoundPreferCeil: i = static_cast<int64_t>(frac < 0.5 ? fl : fl + 1); break;
        case NearestMode::kFloor: i = static_cast<int64_t>(fl); break;
        case NearestMode::kCeil: i = static_cast<int64_t>(std::ceil(x)); break;
        default: i = static_cast<int64_t>(scale < 1.0 ? std::ceil(x) : std::trunc(x)); break;
      }
      t.idx.push_back(std::clamp<int64_t>(i, 0, in - 1));
      t.w.push_back(1.0);
      t.begin.push_back(static_cast<int64_t>(t.idx.size()));
      continue;
    }
    const double support = p.mode == Mode::kLinear ? 1.0 : 2.0;
    const double s = p.antialias ? std::min(scale, 1.0) : 1.0;  // kernel stretch when downsampling
    const double radius = support / s;
    const int64_t lo = static_cast<int64_t>(std::floor(x - radius));
    const int64_t hi = static_cast<int64_t>(std::ceil(x + radius));
    std::size_t first = t.idx.size();
    double sum = 0;
    for (int64_t i = lo; i <= hi; ++i) {
      double d = (static_cast<double>(i) - x) * s;
      double wgt = p.mode == Mode::kLinear ? std::max(0.0, 1.0 - std::abs(d)) : cubic_kernel(d, p.cubic_a);
      if (wgt == 0.0) continue;
      t.idx.push_back(i);
      t.w.push_back(wgt);
      sum += wgt;
    }
    if (p.antialias && sum != 0) {
      for (std::size_t k = first; k < t.w.size(); ++k) t.w[k] /= sum;
    }
    if (p.exclude_outside) {
      double inside = 0;
      for (std::size_t k = first; k < t.w.size(); ++k) {
        if (t.idx[k] < 0 || t.idx[k] >= in) t.w[k] = 0;
        inside += t.w[k];
      }
      if (inside != 0)
        for (std::size_t k = first; k < t.w.size(); ++k) t.w[k] /= inside;
    }
    for (std::size_t k = first; k < t.idx.size(); ++k) t.idx[k] = std::clamp<int64_t>(t.idx[k], 0, in - 1);
    t.begin.push_back(static_cast<int64_t>(t.idx.size()));
  }
  return t;
}

template <typename T>
T store_value(double v) {
  if constexpr (is_float_v<T>) {
    return convert<T>(v);
  } else {
    if (std::isnan(v)) return T(0);
    double r = std::nearbyint(v);
    double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (r <= lo) return std::numeric_limits<T>::lowest();
    if (r >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(r);
  }
}

// Runs the resize of x into output 0 given per-axis taps (axes not resized are identity).
void run_resize(KernelContext& ctx, const Tensor& x, const ResizeParams& p, const std::vector<AxisTaps>& taps) {
  const int64_t rank = x.rank();
  Shape out_shape(static_cast<std::size_t>(rank));
  for (int64_t k = 0; k < rank; ++k) out_shape[k] = taps[k].out;
  if (allocate_if_empty(ctx, 0, x.dtype(), out_shape)) return;
  if (x.size() == 0)
    ctx.fail("cannot resize an empty input {} to {}", shape_to_string(x.shape()), shape_to_string(out_shape));
  bool any_extrap = false;
  for (const auto& t : taps) any_extrap |= t.any_extrapolated;

  if (p.mode == Mode::kNearest) {
    std::vector<int64_t> in_strides = strides_of(x.shape());
    std::vector<std::vector<int64_t>> maps(static_cast<std::size_t>(rank));
    for (int64_t k = 0; k < rank; ++k) {
      maps[k].resize(static_cast<std::size_t>(out_shape[k]));
      for (int64_t j = 0; j < out_shape[k]; ++j)
        maps[k][j] = (taps[k].identity ? j : taps[k].idx[taps[k].begin[j]]) * in_strides[k];
    }
    Tensor& out = gather_copy(ctx, 0, x, out_shape, maps);
    if (any_extrap) {
      dispatch<NumericTypes>(x.dtype(), ctx, [&]<typename T>() {
        T value = store_value<T>(p.extrapolation);
        T* o = out.mutable_data<T>();
        std::vector<int64_t> counter(static_cast<std::size_t>(rank), 0);
        for (int64_t i = 0, n = out.size(); i < n; ++i) {
          bool e = false;
          for (int64_t k = 0; k < rank && !e; ++k) e = !taps[k].identity && taps[k].extrapolated[counter[k]];
          if (e) o[i] = value;
          for (int64_t k = rank; k-- > 0;) {
            if (++counter[k] < out_shape[k]) break;
            counter[k] = 0;
          }
        }
      });
    }
    return;
  }

  dispatch<NumericTypes>(x.dtype(), ctx, [&]<typename T>() {
    const T* src = x.data<T>();
    std::vector<double> cur(static_cast<std::size_t>(x.size()));
    for (int64_t i = 0; i < x.size(); ++i) cur[i] = convert<double>(src[i]);
    Shape shape = x.shape();
    for (int64_t k = 0; k < rank; ++k) {
      const AxisTaps& t = taps[k];
      if (t.identity) continue;
      const int64_t outer = product(shape, 0, static_cast<std::size_t>(k));
      const int64_t inner = product(shape, static_cast<std::size_t>(k) + 1, shape.size());
      Shape next_shape = shape;
      next_shape[k] = t.out;
      std::vector<double> next(static_cast<std::size_t>(checked_element_count(next_shape, ctx.limits().max_elements)),
                               0.0);
      for (int64_t o = 0; o < outer; ++o) {
        const double* in_base = cur.data() + o * t.in * inner;
        double* out_base = next.data() + o * t.out * inner;
        for (int64_t y = 0; y < t.out; ++y) {
          double* dst = out_base + y * inner;
          if (t.extrapolated[y]) {
            for (int64_t i = 0; i < inner; ++i) dst[i] = p.extrapolation;
            continue;
          }
          for (int64_t q = t.begin[y]; q < t.begin[y + 1]; ++q) {
            const double wgt = t.w[q];
            const double* s = in_base + t.idx[q] * inner;
            for (int64_t i = 0; i < inner; ++i) dst[i] += wgt * s[i];
          }
        }
      }
      cur.swap(next);
      shape = next_shape;
    }
    Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
    T* o = out.mutable_data<T>();
    for (int64_t i = 0, n = out.size(); i < n; ++i) o[i] = store_value<T>(cur[i]);
  });
}

Mode parse_mode(const KernelContext& ctx, const std::string& m) {
  if (m == "nearest") return Mode::kNearest;
  if (m == "linear" || m == "bilinear" || m == "trilinear") return Mode::kLinear;
  if (m == "cubic" || m == "bicubic") return Mode::kCubic;
  ctx.fail("unknown mode '{}'", m);
}

std::vector<double> read_floats(const KernelContext& ctx, const Tensor& t) {
  std::vector<double> v(static_cast<std::size_t>(t.size()));
  dispatch<FloatTypes>(t.dtype(), ctx, [&]<typename T>() {
    for (int64_t i = 0; i < t.size(); ++i) v[i] = convert<double>(t.data<T>()[i]);
  });
  return v;
}

// Identity axes, output sizes from scales (floor(in * scale)), asymmetric / legacy nearest: the
// Upsample-7/9 and Resize-10 behaviour.
void legacy_resize(KernelContext& ctx, const Tensor& x, const std::vector<double>& scales, const std::string& mode) {
  const int64_t rank = x.rank();
  if (static_cast<int64_t>(scales.size()) != rank)
    ctx.fail("scales has {} entries, expected {} (the input rank)", scales.size(), rank);
  Shape out_shape(static_cast<std::size_t>(rank));
  for (int64_t k = 0; k < rank; ++k) {
    if (!(scales[k] > 0) || !std::isfinite(scales[k])) ctx.fail("scales must be positive, found {}", scales[k]);
    double o = std::floor(static_cast<double>(x.shape()[k]) * scales[k]);
    if (o > static_cast<double>(ctx.limits().max_elements)) ctx.fail("output dimension {} is too large", o);
    out_shape[k] = static_cast<int64_t>(o);
  }
  checked_element_count(out_shape, ctx.limits().max_elements);
  ResizeParams p;
  p.mode = parse_mode(ctx, mode);
  if (p.mode == Mode::kCubic) ctx.fail("mode '{}' is not available before opset 11", mode);
  p.nearest = NearestMode::kSimple;
  p.coord = "asymmetric";
  std::vector<AxisTaps> taps(static_cast<std::size_t>(rank));
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t in = x.shape()[k];
    if (!(scales[k] > 0)) ctx.fail("scales must be positive, found {}", scales[k]);
    double outd = std::floor(static_cast<double>(in) * scales[k]);
    if (outd > static_cast<double>(ctx.limits().max_elements)) ctx.fail("output dimension {} is too large", outd);
    const int64_t out = static_cast<int64_t>(outd);
    if (scales[k] == 1.0 && out == in) {
      taps[k].identity = true;
      taps[k].in = taps[k].out = in;
      continue;
    }
    taps[k] = make_taps(ctx, p, in, out, scales[k], scales[k] * static_cast<double>(in), 0.0, 1.0);
  }
  run_resize(ctx, x, p, taps);
}

void upsample(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<double> scales;
  if (ctx.opset() < 9) {
    for (float f : ctx.attr_floats("scales")) scales.push_back(f);
  } else {
    scales = read_floats(ctx, ctx.input(1));
  }
  legacy_resize(ctx, x, scales, ctx.attr_string("mode", "nearest"));
}

void resize(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  const int64_t opset = ctx.opset();
  if (opset < 11) {
    legacy_resize(ctx, x, read_floats(ctx, ctx.input(1)), ctx.attr_string("mode", "nearest"));
    return;
  }
  ResizeParams p;
  p.mode = parse_mode(ctx, ctx.attr_string("mode", "nearest"));
  p.coord = ctx.attr_string("coordinate_transformation_mode", "half_pixel");
  std::string nm = ctx.attr_string("nearest_mode", "round_prefer_floor");
  if (nm == "round_prefer_floor") p.nearest = NearestMode::kRoundPreferFloor;
  else if (nm == "round_prefer_ceil") p.nearest = NearestMode::kRoundPreferCeil;
  else if (nm == "floor") p.nearest = NearestMode::kFloor;
  else if (nm == "ceil") p.nearest = NearestMode::kCeil;
  else ctx.fail("unknown nearest_mode '{}'", nm);
  p.cubic_a = ctx.attr_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = ctx.attr_int("exclude_outside", 0) != 0;
  p.extrapolation = ctx.attr_float("extrapolation_value", 0.0f);
  std::string policy = "stretch";
  std::vector<int64_t> axes;
  if (opset >= 18) {
    p.antialias = ctx.attr_int("antialias", 0) != 0;
    policy = ctx.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
      ctx.fail("unknown keep_aspect_ratio_policy '{}'", policy);
    axes = ctx.attr_ints("axes", std::vector<int64_t>{});
  }
  if (p.antialias && p.mode == Mode::kNearest) p.antialias = false;  // antialias applies to linear / cubic
  if (p.coord == "half_pixel_symmetric" && opset < 19) ctx.fail("half_pixel_symmetric needs opset 19");
  if (axes.empty()) {
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  } else {
    std::vector<bool> seen(static_cast<std::size_t>(rank), false);
    for (int64_t& a : axes) {
      a = normalize_axis(a, rank, ctx);
      if (seen[a]) ctx.fail("axis {} is repeated", a);
      seen[a] = true;
    }
  }
  const std::size_t na = axes.size();

  std::vector<double> roi;
  if (ctx.has_input(1) && ctx.input(1).size() > 0) roi = read_floats(ctx, ctx.input(1));
  std::vector<double> scales;
  if (ctx.has_input(2) && ctx.input(2).size() > 0) scales = read_floats(ctx, ctx.input(2));
  std::vector<int64_t> sizes;
  bool have_sizes = false;
  if (ctx.has_input(3) && ctx.input(3).size() > 0) {
    sizes = read_int_list(ctx.input(3), ctx);
    have_sizes = true;
  }
  if (have_sizes == !scales.empty()) ctx.fail("exactly one of scales and sizes must be given");
  if (!scales.empty() && scales.size() != na) ctx.fail("scales has {} entries, expected {}", scales.size(), na);
  if (have_sizes && sizes.size() != na) ctx.fail("sizes has {} entries, expected {}", sizes.size(), na);
  if (!roi.empty() && roi.size() != 2 * na) ctx.fail("roi has {} entries, expected {}", roi.size(), 2 * na);

  // Per-axis scale, output size and "length" (scale * in, as the coordinate formulas use it).
  std::vector<double> scale(static_cast<std::size_t>(rank), 1.0), length(static_cast<std::size_t>(rank));
  std::vector<double> roi_start(static_cast<std::size_t>(rank), 0.0), roi_end(static_cast<std::size_t>(rank), 1.0);
  Shape out = x.shape();
  std::vector<bool> resized(static_cast<std::size_t>(rank), false);
  for (std::size_t i = 0; i < na; ++i) {
    resized[axes[i]] = true;
    if (!roi.empty()) {
      roi_start[axes[i]] = roi[i];
      roi_end[axes[i]] = roi[na + i];
    }
  }
  for (int64_t k = 0; k < rank; ++k) length[k] = static_cast<double>(x.shape()[k]);
  if (!scales.empty()) {
    for (std::size_t i = 0; i < na; ++i) {
      int64_t a = axes[i];
      if (!(scales[i] > 0) || !std::isfinite(scales[i])) ctx.fail("scales must be positive, found {}", scales[i]);
      scale[a] = scales[i];
      double o = std::floor(static_cast<double>(x.shape()[a]) * scales[i]);
      if (o > static_cast<double>(ctx.limits().max_elements)) ctx.fail("output dimension {} is too large", o);
      out[a] = static_cast<int64_t>(o);
      length[a] = scales[i] * static_cast<double>(x.shape()[a]);
    }
  } else {
    for (std::size_t i = 0; i < na; ++i)
      if (sizes[i] < 0) ctx.fail("sizes must be non-negative, found {}", sizes[i]);
    if (policy == "stretch") {
      for (std::size_t i = 0; i < na; ++i) {
        int64_t a = axes[i];
        out[a] = sizes[i];
        if (x.shape()[a] == 0) ctx.fail("cannot resize an empty dimension {}", a);
        scale[a] = static_cast<double>(sizes[i]) / static_cast<double>(x.shape()[a]);
        length[a] = static_cast<double>(sizes[i]);
      }
    } else {
      double common = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
      for (std::size_t i = 0; i < na; ++i) {
        int64_t a = axes[i];
        if (x.shape()[a] == 0) ctx.fail("cannot resize an empty dimension {}", a);
        double s = static_cast<double>(sizes[i]) / static_cast<double>(x.shape()[a]);
        common = policy == "not_larger" ? std::min(common, s) : std::max(common, s);
      }
      for (std::size_t i = 0; i < na; ++i) {
        int64_t a = axes[i];
        scale[a] = common;
        out[a] = static_cast<int64_t>(std::floor(common * static_cast<double>(x.shape()[a]) + 0.5));
        length[a] = common * static_cast<double>(x.shape()[a]);
      }
    }
  }
  checked_element_count(out, ctx.limits().max_elements);
  std::vector<AxisTaps> taps(static_cast<std::size_t>(rank));
  const bool crop = p.coord == "tf_crop_and_resize";
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t in = x.shape()[k];
    bool identity = !resized[k] ||
                    (std::abs(scale[k] - 1.0) <= 1e-9 && out[k] == in &&
                     (!crop || (std::abs(roi_start[k]) <= 1e-9 && std::abs(roi_end[k] - 1.0) <= 1e-9)));
    if (identity) {
      taps[k].identity = true;
      taps[k].in = taps[k].out = in;
      continue;
    }
    if (out[k] > 0 && in == 0) ctx.fail("cannot resize an empty dimension {}", k);
    taps[k] = make_taps(ctx, p, in, out[k], scale[k], length[k], roi_start[k], roi_end[k]);
  }
  run_resize(ctx, x, p, taps);
}

}  // namespace

PARITY_KERNEL("", "Upsample", 7, upsample);
PARITY_KERNEL("", "Resize", 10, resize);

}  // namespace parity::ops::tensor
