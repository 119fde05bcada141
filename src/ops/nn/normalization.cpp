// BatchNormalization, InstanceNormalization, LayerNormalization, GroupNormalization,
// RMSNormalization, MeanVarianceNormalization, LRN, LpNormalization.
#include <cmath>

#include "nn/nn_util.h"

namespace parity::ops {
namespace {

// Statistics of one contiguous row, accumulated in double (two passes).
template <typename T>
void row_stats(const T* x, int64_t n, double& mean, double& var) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(convert<compute_t<T>>(x[i]));
  mean = n > 0 ? s / static_cast<double>(n) : 0.0;
  double q = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(convert<compute_t<T>>(x[i])) - mean;
    q += d * d;
  }
  var = n > 0 ? q / static_cast<double>(n) : 0.0;
}

// Calls visit(batch, channel, offset) for every block of `inner` contiguous elements of an
// [n, channels, inner] layout, in memory order: offset = (batch * channels + channel) * inner.
template <typename Visit>
void for_each_channel_block(int64_t n, int64_t channels, int64_t inner, Visit&& visit) {
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < channels; ++ch) visit(b, ch, (b * channels + ch) * inner);
}

// y = (x - mean) * scale + bias over `count` contiguous elements, in the compute type C.
template <typename T, typename C>
void normalize_block(const T* x, T* y, int64_t count, C mean, C scale, C bias) {
  for (int64_t i = 0; i < count; ++i) y[i] = nn::from_compute<T>((nn::to_compute<T, C>(x[i]) - mean) * scale + bias);
}

// --- BatchNormalization ---------------------------------------------------------------------------
void batch_normalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 1) ctx.fail("X must have rank >= 1");
  const int64_t n = x.shape()[0];
  const int64_t c = x.rank() > 1 ? x.shape()[1] : 1;
  const int64_t inner = nn::product(x.shape(), 2);
  auto scale = nn::read_floats(ctx, ctx.input(1));
  auto bias = nn::read_floats(ctx, ctx.input(2));
  auto mean = nn::read_floats(ctx, ctx.input(3));
  auto var = nn::read_floats(ctx, ctx.input(4));
  const double eps = ctx.attr_float("epsilon");
  bool training = false;
  if (ctx.opset() >= 14) training = ctx.attr_int("training_mode", 0) != 0;
  else if (ctx.opset() < 7) training = ctx.attr_int("is_test", 0) == 0 && ctx.output_requested(1);
  else training = ctx.output_requested(1);  // opsets 7-13: the training outputs select training mode
  // Parameters per channel, or (spatial=0 before opset 9) per element of C x spatial.
  int64_t per = c;
  if (static_cast<int64_t>(scale.size()) == c * inner && inner != 1 && !training) per = c * inner;
  for (auto* v : {&scale, &bias, &mean, &var})
    if (static_cast<int64_t>(v->size()) != per)
      ctx.fail("scale, B, mean and var must have {} values, found {}", per, v->size());
  const double momentum = ctx.attr_float("momentum", 0.9f);
  std::vector<double> used_mean = mean, used_var = var;
  if (training) {
    // Batch statistics per channel over N and the spatial dims (biased variance).
    std::vector<double> bm(c, 0.0), bv(c, 0.0);
    const double count = static_cast<double>(n * inner);
    dispatch<FloatTypes>(x.dtype(), ctx, [&]<typename T>() {
      const T* px = x.data<T>();
      for_each_channel_block(n, c, inner, [&](int64_t, int64_t ch, int64_t offset) {
        for (int64_t i = 0; i < inner; ++i) bm[ch] += static_cast<double>(convert<compute_t<T>>(px[offset + i]));
      });
      for (auto& v : bm) v = count > 0 ? v / count : 0.0;
      for_each_channel_block(n, c, inner, [&](int64_t, int64_t ch, int64_t offset) {
        for (int64_t i = 0; i < inner; ++i) {
          double d = static_cast<double>(convert<compute_t<T>>(px[offset + i])) - bm[ch];
          bv[ch] += d * d;
        }
      });
      for (auto& v : bv) v = count > 0 ? v / count : 0.0;
    });
    used_mean = bm;
    used_var = bv;
    std::vector<double> run_mean(c), run_var(c);
    for (int64_t ch = 0; ch < c; ++ch) {
      run_mean[ch] = mean[ch] * momentum + bm[ch] * (1.0 - momentum);
      run_var[ch] = var[ch] * momentum + bv[ch] * (1.0 - momentum);
    }
    auto emit = [&](std::size_t idx, const std::vector<double>& v, const Tensor& like) {
      if (!ctx.output_requested(idx)) return;
      Tensor& t = ctx.allocate_output(idx, like.dtype(), Shape{c});
      dispatch<FloatTypes>(like.dtype(), ctx, [&]<typename T>() {
        for (int64_t ch = 0; ch < c; ++ch)
          t.mutable_data<T>()[ch] = nn::from_compute<T>(static_cast<compute_t<T>>(v[ch]));
      });
    };
    emit(1, run_mean, ctx.input(3));
    emit(2, run_var, ctx.input(4));
    if (ctx.opset() < 14) {
      emit(3, bm, ctx.input(3));
      emit(4, bv, ctx.input(4));
    }
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    const int64_t block = per == c ? inner : 1;
    const int64_t groups = per == c ? c : c * inner;
    for_each_channel_block(n, groups, block, [&](int64_t, int64_t g, int64_t offset) {
      const C a = static_cast<C>(scale[g] / std::sqrt(used_var[g] + eps));
      normalize_block<T, C>(px + offset, py + offset, block, static_cast<C>(used_mean[g]), a, static_cast<C>(bias[g]));
    });
  });
}

// --- InstanceNormalization ------------------------------------------------------------------------
void instance_normalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2");
  const int64_t n = x.shape()[0], c = x.shape()[1], inner = nn::product(x.shape(), 2);
  auto scale = nn::read_floats(ctx, ctx.input(1));
  auto bias = nn::read_floats(ctx, ctx.input(2));
  if (static_cast<int64_t>(scale.size()) != c || static_cast<int64_t>(bias.size()) != c)
    ctx.fail("scale and B must have {} values", c);
  const double eps = ctx.attr_float("epsilon");
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    for_each_channel_block(n, c, inner, [&](int64_t, int64_t ch, int64_t offset) {
      double mean, var;
      row_stats(px + offset, inner, mean, var);
      const C a = static_cast<C>(scale[ch] / std::sqrt(var + eps));
      normalize_block<T, C>(px + offset, py + offset, inner, static_cast<C>(mean), a, static_cast<C>(bias[ch]));
    });
  });
}

// --- LayerNormalization / RMSNormalization --------------------------------------------------------
// Scale/B broadcast against X.shape[axis:]; returns their element strides over that inner shape.
std::vector<int64_t> inner_strides(const KernelContext& ctx, const Tensor& t, const Shape& inner, const char* what) {
  if (t.rank() > static_cast<int64_t>(inner.size()) || broadcast_shapes(t.shape(), inner, &ctx) != inner)
    ctx.fail("{} of shape {} cannot be broadcast to the normalized shape {}", what, shape_to_string(t.shape()),
             shape_to_string(inner));
  return broadcast_strides(t.shape(), inner);
}

// Flat offsets into a broadcast parameter for every inner element (or empty when it matches).
std::vector<int64_t> param_offsets(const Tensor& t, const Shape& inner, const std::vector<int64_t>& strides) {
  if (t.shape() == inner) return {};
  std::vector<int64_t> offs(static_cast<std::size_t>(nn::product(inner)));
  for_each_broadcast<1>(inner, {t.shape()}, [&](int64_t i, const std::array<int64_t, 1>& o) { offs[i] = o[0]; });
  (void)strides;
  return offs;
}

void layer_or_rms_norm(KernelContext& ctx, bool rms) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* bias = (!rms && ctx.has_input(2)) ? &ctx.input(2) : nullptr;
  const int64_t rank = x.rank();
  if (rank < 1) ctx.fail("X must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.attr_int("axis", -1), rank, ctx);
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  Shape inner_shape(x.shape().begin() + axis, x.shape().end());
  const int64_t rows = nn::product(x.shape(), 0, static_cast<std::size_t>(axis));
  const int64_t cols = nn::product(inner_shape);
  auto ss = inner_strides(ctx, scale, inner_shape, "Scale");
  auto soff = param_offsets(scale, inner_shape, ss);
  std::vector<int64_t> boff;
  if (bias) boff = param_offsets(*bias, inner_shape, inner_strides(ctx, *bias, inner_shape, "B"));
  auto sv = nn::read_floats(ctx, scale);
  std::vector<double> bv = bias ? nn::read_floats(ctx, *bias) : std::vector<double>{};
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  Shape stat_shape(x.shape().begin(), x.shape().begin() + axis);
  stat_shape.resize(static_cast<std::size_t>(rank), 1);
  // Mean / InvStdDev have the stash type (float32 unless X is double).
  const DType stat_type = x.dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  float* mean_out = nullptr;
  float* inv_out = nullptr;
  double* mean_out_d = nullptr;
  double* inv_out_d = nullptr;
  if (!rms && ctx.output_requested(1)) {
    Tensor& t = ctx.allocate_output(1, stat_type, stat_shape);
    if (stat_type == DType::kFloat32) mean_out = t.mutable_data<float>(); else mean_out_d = t.mutable_data<double>();
  }
  if (!rms && ctx.output_requested(2)) {
    Tensor& t = ctx.allocate_output(2, stat_type, stat_shape);
    if (stat_type == DType::kFloat32) inv_out = t.mutable_data<float>(); else inv_out_d = t.mutable_data<double>();
  }
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    std::vector<C> sc(static_cast<std::size_t>(cols)), bc(static_cast<std::size_t>(bias ? cols : 0));
    for (int64_t j = 0; j < cols; ++j) {
      sc[j] = static_cast<C>(sv[soff.empty() ? j : soff[j]]);
      if (bias) bc[j] = static_cast<C>(bv[boff.empty() ? j : boff[j]]);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = px + r * cols;
      T* yr = py + r * cols;
      double mean = 0, var = 0;
      if (rms) {
        double q = 0;
        for (int64_t j = 0; j < cols; ++j) {
          double v = static_cast<double>(nn::to_compute<T, C>(xr[j]));
          q += v * v;
        }
        var = cols > 0 ? q / static_cast<double>(cols) : 0.0;
      } else {
        row_stats(xr, cols, mean, var);
      }
      const double inv = 1.0 / std::sqrt(var + eps);
      const C ci = static_cast<C>(inv), cm = static_cast<C>(mean);
      if (bias) {
        for (int64_t j = 0; j < cols; ++j)
          yr[j] = nn::from_compute<T>((nn::to_compute<T, C>(xr[j]) - cm) * ci * sc[j] + bc[j]);
      } else {
        for (int64_t j = 0; j < cols; ++j) yr[j] = nn::from_compute<T>((nn::to_compute<T, C>(xr[j]) - cm) * ci * sc[j]);
      }
      if (mean_out) mean_out[r] = static_cast<float>(mean);
      if (inv_out) inv_out[r] = static_cast<float>(inv);
      if (mean_out_d) mean_out_d[r] = mean;
      if (inv_out_d) inv_out_d[r] = inv;
    }
  });
}

void layer_normalization(KernelContext& ctx) { layer_or_rms_norm(ctx, false); }
void rms_normalization(KernelContext& ctx) { layer_or_rms_norm(ctx, true); }

// --- GroupNormalization ---------------------------------------------------------------------------
void group_normalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("X must have rank >= 2");
  const int64_t groups = ctx.attr_int("num_groups");
  const int64_t n = x.shape()[0], c = x.shape()[1], inner = nn::product(x.shape(), 2);
  if (groups <= 0 || c % groups != 0) ctx.fail("num_groups={} must divide the {} channels", groups, c);
  if (c == 0) {  // every group is empty: no statistics to take, and num_groups may be any positive number
    ctx.allocate_output(0, x.dtype(), x.shape());
    return;
  }
  auto scale = nn::read_floats(ctx, ctx.input(1));
  auto bias = nn::read_floats(ctx, ctx.input(2));
  // Opset 18: one scale/bias per group; opset 21: per channel.
  const bool per_group = static_cast<int64_t>(scale.size()) == groups && groups != c;
  const int64_t want = per_group ? groups : c;
  if (static_cast<int64_t>(scale.size()) != want || static_cast<int64_t>(bias.size()) != want)
    ctx.fail("scale and bias must have {} values, found {} and {}", want, scale.size(), bias.size());
  const double eps = ctx.attr_float("epsilon");
  const int64_t cpg = c / groups;
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    // A group's channels are contiguous: one block of cpg * inner elements per (batch, group).
    for_each_channel_block(n, groups, cpg * inner, [&](int64_t, int64_t g, int64_t offset) {
      double mean, var;
      row_stats(px + offset, cpg * inner, mean, var);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t ch = 0; ch < cpg; ++ch) {
        const int64_t pi = per_group ? g : g * cpg + ch;
        const int64_t channel_offset = offset + ch * inner;
        normalize_block<T, C>(px + channel_offset, py + channel_offset, inner, static_cast<C>(mean),
                              static_cast<C>(scale[pi] * inv), static_cast<C>(bias[pi]));
      }
    });
  });
}

// --- MeanVarianceNormalization --------------------------------------------------------------------
void mean_variance_normalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> axes = ctx.attr_ints("axes", std::vector<int64_t>{0, 2, 3});
  std::vector<bool> reduced(static_cast<std::size_t>(rank), false);
  for (auto a : axes) reduced[static_cast<std::size_t>(normalize_axis(a, rank, ctx))] = true;
  // Kept-index of every element (odometer over the shape).
  Shape kept_shape;
  for (int64_t d = 0; d < rank; ++d) kept_shape.push_back(reduced[d] ? 1 : x.shape()[d]);
  const int64_t groups = nn::product(kept_shape);
  const int64_t total = x.size();
  std::vector<int64_t> gidx(static_cast<std::size_t>(total));
  if (total > 0)
    for_each_broadcast<1>(x.shape(), {kept_shape}, [&](int64_t i, const std::array<int64_t, 1>& o) { gidx[i] = o[0]; });
  const int64_t count = groups > 0 ? total / groups : 0;
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    std::vector<double> mean(static_cast<std::size_t>(groups), 0.0), var(static_cast<std::size_t>(groups), 0.0);
    for (int64_t i = 0; i < total; ++i) mean[gidx[i]] += static_cast<double>(nn::to_compute<T, C>(px[i]));
    for (auto& m : mean) m /= static_cast<double>(std::max<int64_t>(count, 1));
    for (int64_t i = 0; i < total; ++i) {
      double d = static_cast<double>(nn::to_compute<T, C>(px[i])) - mean[gidx[i]];
      var[gidx[i]] += d * d;
    }
    for (auto& v : var) v = std::sqrt(v / static_cast<double>(std::max<int64_t>(count, 1))) + 1e-9;
    for (int64_t i = 0; i < total; ++i)
      py[i] = nn::from_compute<T>(
          static_cast<C>((static_cast<double>(nn::to_compute<T, C>(px[i])) - mean[gidx[i]]) / var[gidx[i]]));
  });
}

// --- LRN ------------------------------------------------------------------------------------------
void lrn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("X must have rank >= 2 (N, C, ...)");
  const int64_t size = ctx.attr_int("size");
  if (size <= 0) ctx.fail("size must be positive, found {}", size);
  const double alpha = ctx.attr_float("alpha"), beta = ctx.attr_float("beta"), bias = ctx.attr_float("bias");
  const int64_t n = x.shape()[0], c = x.shape()[1], inner = nn::product(x.shape(), 2);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;  // floor / ceil of (size-1)/2
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    for_each_channel_block(n, c, inner, [&](int64_t b, int64_t ch, int64_t offset) {
      const int64_t lo = std::max<int64_t>(0, ch - before), hi = std::min<int64_t>(c - 1, ch + after);
      for (int64_t i = 0; i < inner; ++i) {
        double sq = 0;
        for (int64_t k = lo; k <= hi; ++k) {
          double v = static_cast<double>(nn::to_compute<T, C>(px[(b * c + k) * inner + i]));
          sq += v * v;
        }
        const int64_t o = offset + i;
        double v = static_cast<double>(nn::to_compute<T, C>(px[o]));
        py[o] = nn::from_compute<T>(static_cast<C>(v / std::pow(bias + alpha / static_cast<double>(size) * sq, beta)));
      }
    });
  });
}

// --- LpNormalization ------------------------------------------------------------------------------
void lp_normalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  const int64_t axis = normalize_axis(ctx.attr_int("axis", -1), rank, ctx);
  const int64_t p = ctx.attr_int("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, found {}", p);
  const int64_t outer = nn::product(x.shape(), 0, static_cast<std::size_t>(axis));
  const int64_t len = rank > 0 ? x.shape()[axis] : 1;
  const int64_t inner = nn::product(x.shape(), static_cast<std::size_t>(axis) + 1);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * len * inner + i;
        double s = 0;
        for (int64_t k = 0; k < len; ++k) {
          double v = static_cast<double>(nn::to_compute<T, C>(px[base + k * inner]));
          s += p == 1 ? std::abs(v) : v * v;
        }
        const double norm = p == 1 ? s : std::sqrt(s);
        for (int64_t k = 0; k < len; ++k) {
          const int64_t idx = base + k * inner;
          const double v = static_cast<double>(nn::to_compute<T, C>(px[idx]));
          py[idx] = nn::from_compute<T>(static_cast<C>(norm == 0.0 ? 0.0 : v / norm));
        }
      }
  });
}

}  // namespace

PARITY_KERNEL("", "BatchNormalization", 1, batch_normalization);
PARITY_KERNEL("", "InstanceNormalization", 1, instance_normalization);
PARITY_KERNEL("", "LayerNormalization", 17, layer_normalization);
PARITY_KERNEL("", "RMSNormalization", 23, rms_normalization);
PARITY_KERNEL("", "GroupNormalization", 18, group_normalization);
PARITY_KERNEL("", "MeanVarianceNormalization", 9, mean_variance_normalization);
PARITY_KERNEL("", "LRN", 1, lrn);
PARITY_KERNEL("", "LpNormalization", 1, lp_normalization);

}  // namespace parity::ops
