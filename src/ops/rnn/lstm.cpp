// LSTM (gates i, o, f, c; peepholes i, o, f), with input_forget, forward / reverse /
// bidirectional, outputs Y, Y_h, Y_c.
#include "rnn/rnn_util.h"

namespace parity::ops {
namespace {

template <typename T, typename C>
void run_lstm(KernelContext& ctx) {
  rnn::RnnProblem<C> pr = rnn::load_problem<T, C>(ctx, 4, {"Sigmoid", "Tanh", "Tanh"}, true);
  const bool input_forget = ctx.attr_int("input_forget", int64_t{0}) != 0;
  const int64_t S = pr.seq, B = pr.batch, H = pr.hidden, D = pr.num_dir, G4 = 4 * H;
  std::vector<C> y(static_cast<std::size_t>(S * D * B * H), C(0));
  std::vector<C> h_all = pr.h0;
  std::vector<C> c_all = pr.c0;
  std::vector<C> g(static_cast<std::size_t>(B * G4));
  const std::vector<C> zeros(static_cast<std::size_t>(3 * H), C(0));
  for (int d = 0; d < D; ++d) {
    const rnn::Activation& f = pr.activations[static_cast<std::size_t>(d * 3)];
    const rnn::Activation& gact = pr.activations[static_cast<std::size_t>(d * 3 + 1)];
    const rnn::Activation& hact = pr.activations[static_cast<std::size_t>(d * 3 + 2)];
    std::vector<C> xp = rnn::input_projection(pr, d);
    const C* rb = &pr.b[static_cast<std::size_t>(d * 2 * G4 + G4)];
    const C* R = &pr.r[static_cast<std::size_t>(d * G4 * H)];
    const C* P = pr.p.empty() ? zeros.data() : &pr.p[static_cast<std::size_t>(d * 3 * H)];
    const C *pi = P, *po = P + H, *pf = P + 2 * H;
    C* h = &h_all[static_cast<std::size_t>(d * B * H)];
    C* c = &c_all[static_cast<std::size_t>(d * B * H)];
    for (int64_t s = 0; s < S; ++s) {
      const int64_t t = pr.reverse(d) ? S - 1 - s : s;
      std::copy_n(&xp[static_cast<std::size_t>(t * B * G4)], B * G4, g.data());
      rnn::gemm_nt<C>(B, G4, H, h, H, R, H, C(1), g.data(), G4);
      for (int64_t b = 0; b < B; ++b) {
        if (t >= pr.lens[static_cast<std::size_t>(b)]) continue;
        const C* gb = &g[static_cast<std::size_t>(b * G4)];
        C* hb = h + b * H;
        C* cb = c + b * H;
        C* yrow = &y[static_cast<std::size_t>(((t * D + d) * B + b) * H)];
        for (int64_t j = 0; j < H; ++j) {
          const C c_prev = cb[j];
          C i_gate = f(pr.clamp(gb[j] + rb[j] + pi[j] * c_prev));
          C f_gate = input_forget ? C(1) - i_gate : f(pr.clamp(gb[2 * H + j] + rb[2 * H + j] + pf[j] * c_prev));
          C c_tilde = gact(pr.clamp(gb[3 * H + j] + rb[3 * H + j]));
          C c_new = f_gate * c_prev + i_gate * c_tilde;
          C o_gate = f(pr.clamp(gb[H + j] + rb[H + j] + po[j] * c_new));
          C h_new = o_gate * hact(c_new);
          cb[j] = c_new;
          hb[j] = h_new;
          yrow[j] = h_new;
        }
      }
    }
  }
  rnn::write_sequence_output<T, C>(ctx, 0, pr, y);
  rnn::write_state_output<T, C>(ctx, 1, pr, h_all);
  rnn::write_state_output<T, C>(ctx, 2, pr, c_all);
}

void lstm_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), ctx, [&]<typename T, typename C>() {
    if constexpr (std::is_same_v<C, double>) run_lstm<T, double>(ctx);
    else run_lstm<T, float>(ctx);
  });
}

}  // namespace

PARITY_KERNEL("", "LSTM", 1, lstm_kernel);

}  // namespace parity::ops
