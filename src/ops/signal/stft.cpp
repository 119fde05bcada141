// STFT: frames of frame_length samples every frame_step samples, multiplied by the window,
// each transformed by a DFT; output [batch, frames, bins, 2] (bins = n/2+1 when onesided).
#include <vector>

#include "parity/ops/broadcast.h"
#include "parity/ops/dispatch.h"
#include "signal/signal_util.h"

namespace parity::ops {
namespace {

using signal::cplx;

void stft_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 3 || (x.shape()[2] != 1 && x.shape()[2] != 2))
    ctx.fail("signal must have shape [batch, length, 1 or 2], found {}", shape_to_string(x.shape()));
  const int64_t batch = x.shape()[0], len = x.shape()[1], comps = x.shape()[2];
  const int64_t step = read_scalar_int(ctx, 1, "frame_step");
  if (step <= 0) ctx.fail("frame_step must be positive, found {}", step);
  const bool has_window = ctx.has_input(2);
  int64_t frame = len;
  if (ctx.has_input(3)) frame = read_scalar_int(ctx, 3, "frame_length");
  else if (has_window) frame = ctx.input(2).size();
  if (has_window) {
    const Tensor& w = ctx.input(2);
    if (w.rank() != 1 || w.size() != frame)
      ctx.fail("window must be 1-D of length frame_length = {}, found shape {}", frame, shape_to_string(w.shape()));
  }
  if (frame <= 0 || frame > len) ctx.fail("frame_length {} must be in [1, signal length {}]", frame, len);
  const bool onesided = ctx.attr_int("onesided") != 0;
  const int64_t frames = (len - frame) / step + 1;
  const int64_t bins = onesided ? frame / 2 + 1 : frame;
  Tensor& out = ctx.allocate_output(0, x.dtype(), {batch, frames, bins, 2});
  dispatch<FloatTypes>(x.dtype(), ctx, [&]<typename T>() {
    std::vector<double> window(static_cast<std::size_t>(frame), 1.0);
    if (has_window) {
      const Tensor& w = ctx.input(2);
      dispatch<FloatTypes>(w.dtype(), ctx, [&]<typename W>() {
        for (int64_t k = 0; k < frame; ++k)
          window[static_cast<std::size_t>(k)] = static_cast<double>(static_cast<compute_t<W>>(w.data<W>()[k]));
      });
    }
    const T* px = x.data<T>();
    T* po = out.mutable_data<T>();
    signal::Dft dft(frame, false);
    std::vector<cplx> line(static_cast<std::size_t>(frame)), spec(static_cast<std::size_t>(frame));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t f = 0; f < frames; ++f) {
        for (int64_t t = 0; t < frame; ++t) {
          const T* e = px + (b * len + f * step + t) * comps;
          double re = static_cast<double>(static_cast<compute_t<T>>(e[0]));
          double im = comps == 2 ? static_cast<double>(static_cast<compute_t<T>>(e[1])) : 0.0;
          line[static_cast<std::size_t>(t)] = cplx(re, im) * window[static_cast<std::size_t>(t)];
        }
        dft.run(line.data(), spec.data());
        T* o = po + (b * frames + f) * bins * 2;
        for (int64_t k = 0; k < bins; ++k) {
          o[2 * k] = convert<T>(spec[static_cast<std::size_t>(k)].real());
          o[2 * k + 1] = convert<T>(spec[static_cast<std::size_t>(k)].imag());
        }
      }
  });
}

}  // namespace

PARITY_KERNEL("", "STFT", 17, stft_kernel);

}  // namespace parity::ops
