// DFT (opset 17: axis attribute; opset 20: axis input), forward or inverse, full or one-sided,
// real ([..., 1]) or complex ([..., 2]) input. inverse + onesided is the inverse real FFT: the
// one-sided spectrum is extended Hermitian-symmetrically and the real signal ([..., 1]) returned.
#include <vector>

#include "misc/misc_util.h"
#include "parity/ops/broadcast.h"
#include "parity/ops/dispatch.h"
#include "signal/signal_util.h"

namespace parity::ops {
namespace {

using signal::cplx;

template <typename T>
void run_dft(KernelContext& ctx, const Tensor& x, int64_t axis, int64_t n, bool inverse, bool onesided) {
  const Shape& in_shape = x.shape();
  const int64_t comps = in_shape.back();
  const int64_t in_len = in_shape[static_cast<std::size_t>(axis)];
  const bool irfft = inverse && onesided;
  const int64_t out_len = irfft ? n : (onesided ? n / 2 + 1 : n);
  Shape out_shape = in_shape;
  out_shape[static_cast<std::size_t>(axis)] = out_len;
  out_shape.back() = irfft ? 1 : 2;
  Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
  const int64_t outer = misc::dims_product(in_shape, 0, static_cast<std::size_t>(axis));
  const int64_t inner = misc::dims_product(in_shape, static_cast<std::size_t>(axis) + 1, in_shape.size() - 1);
  const int64_t out_comps = out_shape.back();
  const T* px = x.data<T>();
  T* po = out.mutable_data<T>();
  signal::Dft dft(n, inverse);
  std::vector<cplx> line(static_cast<std::size_t>(n)), spec(static_cast<std::size_t>(n));
  const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t t) -> cplx {
        const T* e = px + ((o * in_len + t) * inner + i) * comps;
        double re = static_cast<double>(static_cast<compute_t<T>>(e[0]));
        double im = comps == 2 ? static_cast<double>(static_cast<compute_t<T>>(e[1])) : 0.0;
        return {re, im};
      };
      if (irfft) {
        // Hermitian extension of the first n/2+1 bins; DC (and Nyquist) imaginary parts dropped.
        const int64_t half = n / 2 + 1;
        for (int64_t k = 0; k < n; ++k) line[static_cast<std::size_t>(k)] = cplx(0.0, 0.0);
        for (int64_t k = 0; k < half && k < in_len; ++k) line[static_cast<std::size_t>(k)] = at(k);
        line[0] = cplx(line[0].real(), 0.0);
        if (n % 2 == 0 && n / 2 < static_cast<int64_t>(line.size()))
          line[static_cast<std::size_t>(n / 2)] = cplx(line[static_cast<std::size_t>(n / 2)].real(), 0.0);
        for (int64_t k = half; k < n; ++k)
          line[static_cast<std::size_t>(k)] = std::conj(line[static_cast<std::size_t>(n - k)]);
      } else {
        for (int64_t t = 0; t < n; ++t) line[static_cast<std::size_t>(t)] = t < in_len ? at(t) : cplx(0.0, 0.0);
      }
      if (n > 0) dft.run(line.data(), spec.data());
      for (int64_t k = 0; k < out_len; ++k) {
        T* e = po + ((o * out_len + k) * inner + i) * out_comps;
        cplx v = spec[static_cast<std::size_t>(k)] * scale;
        e[0] = convert<T>(v.real());
        if (out_comps == 2) e[1] = convert<T>(v.imag());
      }
    }
}

void dft_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  if (rank < 2) ctx.fail("input must have rank >= 2, found shape {}", shape_to_string(x.shape()));
  const int64_t comps = x.shape().back();
  if (comps != 1 && comps != 2) ctx.fail("the last dimension must be 1 (real) or 2 (complex), found {}", comps);
  int64_t axis;
  if (ctx.opset() >= 20) {
    axis = -2;
    if (ctx.has_input(2)) {
      const Tensor& a = ctx.input(2);
      if (a.size() != 1) ctx.fail("axis must be a scalar");
      axis = read_int_list(a, ctx)[0];
    }
  } else {
    axis = ctx.attr_int("axis");
  }
  if (axis < -rank || axis >= rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
  if (axis < 0) axis += rank;
  if (axis == rank - 1) ctx.fail("axis {} is the complex-component dimension", axis);
  const bool inverse = ctx.attr_int("inverse") != 0;
  const bool onesided = ctx.attr_int("onesided") != 0;
  const int64_t in_len = x.shape()[static_cast<std::size_t>(axis)];
  int64_t n = inverse && onesided ? 2 * (in_len - 1) : in_len;
  if (ctx.has_input(1)) {
    const Tensor& l = ctx.input(1);
    if (l.size() != 1) ctx.fail("dft_length must be a scalar");
    n = read_int_list(l, ctx)[0];
    if (n <= 0) ctx.fail("dft_length must be positive, found {}", n);
  }
  if (n < 0) ctx.fail("cannot infer the signal length from a one-sided input of length {}", in_len);
  // A one-sided output would still have one bin, read from a transform of nothing.
  if (n == 0) ctx.fail("the signal along axis {} is empty (shape {}): a DFT needs at least one sample", axis,
                       shape_to_string(x.shape()));
  dispatch<FloatTypes>(x.dtype(), ctx, [&]<typename T>() { run_dft<T>(ctx, x, axis, n, inverse, onesided); });
}

}  // namespace

PARITY_KERNEL("", "DFT", 17, dft_kernel);
PARITY_KERNEL("", "DFT", 20, dft_kernel);

}  // namespace parity::ops
