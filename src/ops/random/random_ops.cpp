// RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike, Multinomial, Bernoulli.
// The generator is std::mt19937_64, seeded from the 'seed' attribute, or without one from the
// node's output name (reproducible runs). Values cannot match other runtimes'.
#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "parity/ops/dispatch.h"
#include "parity/ops/kernel.h"

namespace parity::ops {
namespace {

std::mt19937_64 make_generator(const KernelContext& ctx) {
  if (ctx.has_attribute("seed")) {
    const float seed = ctx.attr_float("seed");
    return std::mt19937_64(static_cast<uint64_t>(std::bit_cast<uint32_t>(seed)) * 0x9E3779B97F4A7C15ull + 1);
  }
  // No seed: a fixed one derived from the node's first output name (FNV-1a), so reference runs
  // are reproducible while distinct nodes draw distinct streams.
  uint64_t h = 0xcbf29ce484222325ull;
  const std::string& name = ctx.node().output_size() > 0 ? ctx.node().output(0) : ctx.node().name();
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return std::mt19937_64(h);
}

DType attr_dtype(const KernelContext& ctx, DType fallback) {
  if (!ctx.has_attribute("dtype")) return fallback;
  return dtype_from_onnx(static_cast<int32_t>(ctx.attr_int("dtype")));
}

template <typename Draw>
void fill_float(KernelContext& ctx, DType dtype, const Shape& shape, Draw&& draw) {
  Tensor& out = ctx.allocate_output(0, dtype, shape);
  dispatch<FloatTypes>(dtype, ctx, [&]<typename T>() {
    T* o = out.mutable_data<T>();
    for (int64_t i = 0; i < out.size(); ++i) o[i] = convert<T>(draw());
  });
}

void random_fill(KernelContext& ctx, const Shape& shape, DType dtype, bool normal) {
  auto gen = make_generator(ctx);
  if (normal) {
    std::normal_distribution<double> dist(ctx.attr_float("mean"), ctx.attr_float("scale"));
    fill_float(ctx, dtype, shape, [&] { return dist(gen); });
  } else {
    const double low = ctx.attr_float("low"), high = ctx.attr_float("high");
    if (!(high >= low)) ctx.fail("high ({}) must be >= low ({})", high, low);
    std::uniform_real_distribution<double> dist(low, high);
    fill_float(ctx, dtype, shape, [&] { return dist(gen); });
  }
}

Shape shape_attr(const KernelContext& ctx) {
  Shape shape = ctx.attr_ints("shape");
  for (int64_t d : shape)
    if (d < 0) ctx.fail("shape must not have negative dimensions, found {}", shape_to_string(shape));
  return shape;
}

void random_uniform(KernelContext& ctx) { random_fill(ctx, shape_attr(ctx), attr_dtype(ctx, DType::kFloat32), false); }
void random_normal(KernelContext& ctx) { random_fill(ctx, shape_attr(ctx), attr_dtype(ctx, DType::kFloat32), true); }
void random_uniform_like(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  random_fill(ctx, x.shape(), attr_dtype(ctx, x.dtype()), false);
}
void random_normal_like(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  random_fill(ctx, x.shape(), attr_dtype(ctx, x.dtype()), true);
}

// input [batch, classes] of unnormalized log-probabilities -> [batch, sample_size] class indices.
void multinomial(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2) ctx.fail("input must be [batch_size, class_size], found {}", shape_to_string(x.shape()));
  const int64_t batch = x.shape()[0], classes = x.shape()[1];
  const int64_t samples = ctx.attr_int("sample_size");
  if (samples < 0) ctx.fail("sample_size must be >= 0, found {}", samples);
  const DType dtype = attr_dtype(ctx, DType::kInt32);
  if (dtype != DType::kInt32 && dtype != DType::kInt64) ctx.fail("dtype must be int32 or int64");
  if (classes == 0 && samples > 0 && batch > 0) ctx.fail("cannot sample from zero classes");
  auto gen = make_generator(ctx);
  Tensor& out = ctx.allocate_output(0, dtype, {batch, samples});
  dispatch<FloatTypes>(x.dtype(), ctx, [&]<typename T>() {
    std::vector<double> cdf(static_cast<std::size_t>(classes));
    std::uniform_real_distribution<double> uni(0.0, 1.0);
    for (int64_t b = 0; b < batch; ++b) {
      const T* row = x.data<T>() + b * classes;
      double mx = -INFINITY;
      for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, static_cast<double>(static_cast<compute_t<T>>(row[c])));
      double total = 0.0;
      for (int64_t c = 0; c < classes; ++c) {
        total += std::exp(static_cast<double>(static_cast<compute_t<T>>(row[c])) - mx);
        cdf[static_cast<std::size_t>(c)] = total;
      }
      for (int64_t s = 0; s < samples; ++s) {
        const double u = uni(gen) * total;
        int64_t k = static_cast<int64_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
        if (k >= classes) k = classes - 1;
        if (dtype == DType::kInt32) out.mutable_data<int32_t>()[b * samples + s] = static_cast<int32_t>(k);
        else out.mutable_data<int64_t>()[b * samples + s] = k;
      }
    }
  });
}

void bernoulli(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const DType dtype = attr_dtype(ctx, x.dtype());
  auto gen = make_generator(ctx);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  std::vector<uint8_t> bits(static_cast<std::size_t>(x.size()));
  dispatch<FloatTypes>(x.dtype(), ctx, [&]<typename T>() {
    for (int64_t i = 0; i < x.size(); ++i) {
      const double p = static_cast<double>(static_cast<compute_t<T>>(x.data<T>()[i]));
      bits[static_cast<std::size_t>(i)] = uni(gen) < p ? 1 : 0;
    }
  });
  Tensor& out = ctx.allocate_output(0, dtype, x.shape());
  dispatch<NumericAndBoolTypes>(dtype, ctx, [&]<typename T>() {
    T* o = out.mutable_data<T>();
    for (int64_t i = 0; i < x.size(); ++i) o[i] = convert<T>(static_cast<int>(bits[static_cast<std::size_t>(i)]));
  });
}

}  // namespace

PARITY_KERNEL("", "RandomUniform", 1, random_uniform);
PARITY_KERNEL("", "RandomNormal", 1, random_normal);
PARITY_KERNEL("", "RandomUniformLike", 1, random_uniform_like);
PARITY_KERNEL("", "RandomNormalLike", 1, random_normal_like);
PARITY_KERNEL("", "Multinomial", 7, multinomial);
PARITY_KERNEL("", "Bernoulli", 15, bernoulli);

}  // namespace parity::ops
