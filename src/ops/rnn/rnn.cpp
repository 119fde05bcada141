// RNN: Ht = f(Xt*Wi^T + Ht-1*Ri^T + Wbi + Rbi), forward / reverse / bidirectional.
#include "rnn/rnn_util.h"

namespace parity::ops {
namespace {

template <typename T, typename C>
void run_rnn(KernelContext& ctx) {
  rnn::RnnProblem<C> pr = rnn::load_problem<T, C>(ctx, 1, {"Tanh"}, false);
  const int64_t S = pr.seq, B = pr.batch, H = pr.hidden, D = pr.num_dir;
  std::vector<C> y(static_cast<std::size_t>(S * D * B * H), C(0));
  std::vector<C> h_all = pr.h0;
  std::vector<C> g(static_cast<std::size_t>(B * H));
  for (int d = 0; d < D; ++d) {
    const rnn::Activation& f = pr.activations[static_cast<std::size_t>(d)];
    std::vector<C> xp = rnn::input_projection(pr, d);
    const C* rb = &pr.b[static_cast<std::size_t>(d * 2 * H + H)];
    const C* R = &pr.r[static_cast<std::size_t>(d * H * H)];
    C* h = &h_all[static_cast<std::size_t>(d * B * H)];
    for (int64_t s = 0; s < S; ++s) {
      const int64_t t = pr.reverse(d) ? S - 1 - s : s;
      std::copy_n(&xp[static_cast<std::size_t>(t * B * H)], B * H, g.data());
      rnn::gemm_nt<C>(B, H, H, h, H, R, H, C(1), g.data(), H);
      for (int64_t b = 0; b < B; ++b) {
        if (t >= pr.lens[static_cast<std::size_t>(b)]) continue;
        C* yrow = &y[static_cast<std::size_t>(((t * D + d) * B + b) * H)];
        for (int64_t j = 0; j < H; ++j) {
          C v = f(pr.clamp(g[static_cast<std::size_t>(b * H + j)] + rb[j]));
          h[b * H + j] = v;
          yrow[j] = v;
        }
      }
    }
  }
  rnn::write_sequence_output<T, C>(ctx, 0, pr, y);
  rnn::write_state_output<T, C>(ctx, 1, pr, h_all);
}

void rnn_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), ctx, [&]<typename T, typename C>() {
    if constexpr (std::is_same_v<C, double>) run_rnn<T, double>(ctx);
    else run_rnn<T, float>(ctx);
  });
}

}  // namespace

PARITY_KERNEL("", "RNN", 1, rnn_kernel);

}  // namespace parity::ops
