// HannWindow, HammingWindow, BlackmanWindow (periodic or symmetric), and MelWeightMatrix.
#include <cmath>
#include <numbers>
#include <vector>

#include "parity/ops/broadcast.h"
#include "parity/ops/dispatch.h"

namespace parity::ops {
namespace {

double scalar_double(const KernelContext& ctx, std::size_t i, const char* name) {
  const Tensor& t = ctx.input(i);
  if (t.size() != 1) ctx.fail("{} must be a scalar, found shape {}", name, shape_to_string(t.shape()));
  return dispatch<NumericTypes>(t.dtype(), ctx, [&]<typename T>() {
    return static_cast<double>(static_cast<compute_t<T>>(t.data<T>()[0]));
  });
}

// The output, of the dtype named by 'output_datatype', allocated before any work so that a size
// over the element limit is refused before the values are computed or buffered.
Tensor& allocate_values(KernelContext& ctx, const Shape& shape) {
  DType dtype = dtype_from_onnx(static_cast<int32_t>(ctx.attr_int("output_datatype")));
  return ctx.allocate_output(0, dtype, shape);
}

// Writes values (double) into `out` as its dtype.
void write_values(KernelContext& ctx, Tensor& out, const std::vector<double>& values) {
  dispatch<NumericTypes>(out.dtype(), ctx, [&]<typename T>() {
    T* o = out.mutable_data<T>();
    for (std::size_t i = 0; i < values.size(); ++i) o[i] = convert<T>(values[i]);
  });
}

// w[n] = sum_k a[k] * cos(2*pi*k*n / N) with N = size (periodic) or size - 1 (symmetric).
void cosine_window(KernelContext& ctx, std::initializer_list<double> coefficients) {
  const int64_t size = read_scalar_int(ctx, 0, "size");
  if (size < 0) ctx.fail("size must be >= 0, found {}", size);
  const bool periodic = ctx.attr_int("periodic") != 0;
  const double N = static_cast<double>(periodic ? size : size - 1);
  Tensor& out = allocate_values(ctx, {size});
  std::vector<double> w(static_cast<std::size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    double v = 0.0, k = 0.0;
    for (double a : coefficients) {
      v += a * std::cos(2.0 * std::numbers::pi * k * static_cast<double>(n) / N);
      k += 1.0;
    }
    w[static_cast<std::size_t>(n)] = N == 0.0 ? 1.0 : v;
  }
  write_values(ctx, out, w);
}

void hann_window(KernelContext& ctx) { cosine_window(ctx, {0.5, -0.5}); }
void hamming_window(KernelContext& ctx) { cosine_window(ctx, {25.0 / 46.0, -(1.0 - 25.0 / 46.0)}); }
void blackman_window(KernelContext& ctx) { cosine_window(ctx, {0.42, -0.5, 0.08}); }

// Triangular filters, peak 1, between mel-spaced points mapped to DFT bins.
void mel_weight_matrix(KernelContext& ctx) {
  const int64_t mels = read_scalar_int(ctx, 0, "num_mel_bins");
  const int64_t dft_length = read_scalar_int(ctx, 1, "dft_length");
  const int64_t rate = read_scalar_int(ctx, 2, "sample_rate");
  const double lower = scalar_double(ctx, 3, "lower_edge_hertz");
  const double upper = scalar_double(ctx, 4, "upper_edge_hertz");
  if (mels <= 0 || dft_length <= 0 || rate <= 0)
    ctx.fail("num_mel_bins, dft_length and sample_rate must be positive, found {}, {}, {}", mels, dft_length, rate);
  if (lower < 0 || upper < lower)
    ctx.fail("need 0 <= lower_edge_hertz <= upper_edge_hertz, found {} and {}", lower, upper);
  const int64_t bins = dft_length / 2 + 1;
  Tensor& out = allocate_values(ctx, {bins, mels});
  auto to_mel = [](double hz) { return 2595.0 * std::log1p(hz / 700.0) / std::log(10.0); };
  const double low_mel = to_mel(lower), high_mel = to_mel(upper);
  const double mel_step = (high_mel - low_mel) / static_cast<double>(mels + 2);
  std::vector<int64_t> points(static_cast<std::size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    double hz = 700.0 * std::expm1((static_cast<double>(i) * mel_step + low_mel) / 2595.0 * std::log(10.0));
    points[static_cast<std::size_t>(i)] =
        static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(rate)));
    if (points[static_cast<std::size_t>(i)] < 0 || points[static_cast<std::size_t>(i)] >= bins)
      ctx.fail("upper_edge_hertz {} maps past the last spectrogram bin {} (sample_rate {})", upper, bins - 1, rate);
  }
  std::vector<double> w(static_cast<std::size_t>(bins * mels), 0.0);
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t lo = points[static_cast<std::size_t>(i)], center = points[static_cast<std::size_t>(i + 1)],
                  hi = points[static_cast<std::size_t>(i + 2)];
    if (center == lo) {
      w[static_cast<std::size_t>(center * mels + i)] = 1.0;
    } else {
      for (int64_t j = lo; j <= center; ++j)
        w[static_cast<std::size_t>(j * mels + i)] = static_cast<double>(j - lo) / static_cast<double>(center - lo);
    }
    if (hi > center)
      for (int64_t j = center; j < hi; ++j)
        w[static_cast<std::size_t>(j * mels + i)] = static_cast<double>(hi - j) / static_cast<double>(hi - center);
  }
  write_values(ctx, out, w);
}

}  // namespace

PARITY_KERNEL("", "HannWindow", 17, hann_window);
PARITY_KERNEL("", "HammingWindow", 17, hamming_window);
PARITY_KERNEL("", "BlackmanWindow", 17, blackman_window);
PARITY_KERNEL("", "MelWeightMatrix", 17, mel_weight_matrix);

}  // namespace parity::ops
