// GRU (gates z, r, h), with linear_before_reset, forward / reverse / bidirectional.
#include "rnn/rnn_util.h"

namespace parity::ops {
namespace {

template <typename T, typename C>
void run_gru(KernelContext& ctx) {
  rnn::RnnProblem<C> pr = rnn::load_problem<T, C>(ctx, 3, {"Sigmoid", "Tanh"}, false);
  const bool lbr = ctx.attr_int("linear_before_reset", int64_t{0}) != 0;
  const int64_t S = pr.seq, B = pr.batch, H = pr.hidden, D = pr.num_dir, G3 = 3 * H;
  std::vector<C> y(static_cast<std::size_t>(S * D * B * H), C(0));
  std::vector<C> h_all = pr.h0;
  std::vector<C> hr(static_cast<std::size_t>(B * G3));  // H_prev * R^T (z, r and, with lbr, h parts)
  std::vector<C> z(static_cast<std::size_t>(B * H)), rh(static_cast<std::size_t>(B * H)),
      r_h(static_cast<std::size_t>(B * H));
  for (int d = 0; d < D; ++d) {
    const rnn::Activation& f = pr.activations[static_cast<std::size_t>(d * 2)];
    const rnn::Activation& gact = pr.activations[static_cast<std::size_t>(d * 2 + 1)];
    std::vector<C> xp = rnn::input_projection(pr, d);
    const C* rb = &pr.b[static_cast<std::size_t>(d * 2 * G3 + G3)];
    const C* R = &pr.r[static_cast<std::size_t>(d * G3 * H)];
    const C* Rh = R + 2 * H * H;
    C* h = &h_all[static_cast<std::size_t>(d * B * H)];
    for (int64_t s = 0; s < S; ++s) {
      const int64_t t = pr.reverse(d) ? S - 1 - s : s;
      const C* x = &xp[static_cast<std::size_t>(t * B * G3)];
      rnn::gemm_nt<C>(B, lbr ? G3 : 2 * H, H, h, H, R, H, C(0), hr.data(), G3);
      // z and r, then either (r . H_prev) * Rh^T or r . (H_prev * Rh^T + Rbh).
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < H; ++j) {
          const std::size_t i = static_cast<std::size_t>(b * H + j);
          const C* xb = x + b * G3;
          const C* hb = &hr[static_cast<std::size_t>(b * G3)];
          z[i] = f(pr.clamp(xb[j] + hb[j] + rb[j]));
          C r = f(pr.clamp(xb[H + j] + hb[H + j] + rb[H + j]));
          if (lbr) r_h[i] = r * (hb[2 * H + j] + rb[2 * H + j]);
          else rh[i] = r * h[i];
        }
      if (!lbr) rnn::gemm_nt<C>(B, H, H, rh.data(), H, Rh, H, C(0), r_h.data(), H);
      for (int64_t b = 0; b < B; ++b) {
        if (t >= pr.lens[static_cast<std::size_t>(b)]) continue;
        const C* xb = x + b * G3;
        C* yrow = &y[static_cast<std::size_t>(((t * D + d) * B + b) * H)];
        for (int64_t j = 0; j < H; ++j) {
          const std::size_t i = static_cast<std::size_t>(b * H + j);
          C pre = xb[2 * H + j] + r_h[i];
          if (!lbr) pre += rb[2 * H + j];
          C ht = gact(pr.clamp(pre));
          C v = (C(1) - z[i]) * ht + z[i] * h[i];
          h[i] = v;
          yrow[j] = v;
        }
      }
    }
  }
  rnn::write_sequence_output<T, C>(ctx, 0, pr, y);
  rnn::write_state_output<T, C>(ctx, 1, pr, h_all);
}

void gru_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), ctx, [&]<typename T, typename C>() {
    if constexpr (std::is_same_v<C, double>) run_gru<T, double>(ctx);
    else run_gru<T, float>(ctx);
  });
}

}  // namespace

PARITY_KERNEL("", "GRU", 1, gru_kernel);

}  // namespace parity::ops
