// Shared machinery of RNN, GRU and LSTM: activation functions, input loading (layouts,
// directions, optional inputs), BLAS GEMM, and output writing.
#pragma once

#include <cblas.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "parity/ops/broadcast.h"
#include "parity/ops/dispatch.h"
#include "parity/ops/kernel.h"

namespace parity::ops::rnn {

struct Activation {
  enum class Kind { kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid,
                    kElu, kSoftsign, kSoftplus };
  Kind kind = Kind::kTanh;
  double alpha = 0;
  double beta = 0;

  // Defined in rnn_activation.cpp for C = float and double: out of line, so the kernels' inner
  // loops (four calls per element in LSTM, in every <T, C> instantiation) do not each inline the
  // whole switch, which made rnn/*.cpp the slowest units of ops to compile.
  template <typename C>
  C operator()(C x) const;
};

// Parses 'activations' / 'activation_alpha' / 'activation_beta' into per_dir * num_dir functions
// (direction-major). Alphas and betas are consumed in order by the functions that take them.
inline std::vector<Activation> parse_activations(const KernelContext& ctx, int num_dir,
                                                 const std::vector<std::string>& defaults) {
  // The schema's default list is not used: RNN's ("Tanh", "Tanh") is meant for two directions.
  std::vector<std::string> names;
  if (ctx.has_attribute("activations")) names = ctx.attr_strings("activations");
  const std::size_t per_dir = defaults.size();
  if (names.empty()) {
    for (int d = 0; d < num_dir; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() == per_dir && num_dir == 2) {
    std::vector<std::string> twice = names;
    names.insert(names.end(), twice.begin(), twice.end());
  } else if (names.size() == 2 * per_dir && num_dir == 1) {
    names.resize(per_dir);  // a bidirectional-style list on a one-direction node: the first set
  } else if (names.size() != per_dir * static_cast<std::size_t>(num_dir)) {
    ctx.fail("expected {} activations, found {}", per_dir * static_cast<std::size_t>(num_dir), names.size());
  }
  std::vector<float> alphas = ctx.has_attribute("activation_alpha") ? ctx.attr_floats("activation_alpha")
                                                                    : std::vector<float>{};
  std::vector<float> betas = ctx.has_attribute("activation_beta") ? ctx.attr_floats("activation_beta")
                                                                  : std::vector<float>{};
  std::size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string& raw : names) {
    std::string n;
    for (char ch : raw) n += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    Activation a;
    bool uses_alpha = false, uses_beta = false;
    using K = Activation::Kind;
    if (n == "relu") a.kind = K::kRelu;
    else if (n == "tanh") a.kind = K::kTanh;
    else if (n == "sigmoid") a.kind = K::kSigmoid;
    else if (n == "affine") { a.kind = K::kAffine; a.alpha = 1.0; a.beta = 0.0; uses_alpha = uses_beta = true; }
    else if (n == "leakyrelu") { a.kind = K::kLeakyRelu; a.alpha = 0.01; uses_alpha = true; }
    else if (n == "thresholdedrelu") { a.kind = K::kThresholdedRelu; a.alpha = 1.0; uses_alpha = true; }
    else if (n == "scaledtanh") { a.kind = K::kScaledTanh; a.alpha = 1.0; a.beta = 1.0; uses_alpha = uses_beta = true;
    } else if (n == "hardsigmoid") {
      a.kind = K::kHardSigmoid;
      a.alpha = 0.2;
      a.beta = 0.5;
      uses_alpha = uses_beta = true;
    } else if (n == "elu") {
      a.kind = K::kElu;
      a.alpha = 1.0;
      uses_alpha = true;
    } else if (n == "softsign")
      a.kind = K::kSoftsign;
    else if (n == "softplus") a.kind = K::kSoftplus;
    else ctx.unsupported("activation function '{}' is not supported", raw);
    if (uses_alpha && ai < alphas.size()) a.alpha = alphas[ai++];
    if (uses_beta && bi < betas.size()) a.beta = betas[bi++];
    out.push_back(a);
  }
  return out;
}

// C[M,N] = A[M,K] * B[N,K]^T + beta * C  (row-major; lda/ldb/ldc are row strides).
template <typename C>
void gemm_nt(int64_t M, int64_t N, int64_t K, const C* A, int64_t lda, const C* B, int64_t ldb, C beta, C* Cm,
             int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) Cm[i * ldc + j] = beta == C(0) ? C(0) : beta * Cm[i * ldc + j];
    return;
  }
  if constexpr (std::is_same_v<C, float>) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(M), static_cast<int>(N),
                static_cast<int>(K), 1.0f, A, static_cast<int>(lda), B, static_cast<int>(ldb), beta, Cm,
                static_cast<int>(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(M), static_cast<int>(N),
                static_cast<int>(K), 1.0, A, static_cast<int>(lda), B, static_cast<int>(ldb), beta, Cm,
                static_cast<int>(ldc));
  }
}

enum class Direction { kForward, kReverse, kBidirectional };

// Everything a recurrent kernel needs, converted to the compute type C and to layout 0.
template <typename C>
struct RnnProblem {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, gates = 1;
  int num_dir = 1;
  Direction direction = Direction::kForward;
  int64_t layout = 0;
  std::vector<C> x;                  // [seq, batch, input]
  std::vector<C> w;                  // [num_dir, gates*hidden, input]
  std::vector<C> r;                  // [num_dir, gates*hidden, hidden]
  std::vector<C> b;                  // [num_dir, 2*gates*hidden] (zeros when absent)
  std::vector<int64_t> lens;         // [batch]
  std::vector<C> h0;                 // [num_dir, batch, hidden]
  std::vector<C> c0;                 // [num_dir, batch, hidden] (LSTM)
  std::vector<C> p;                  // [num_dir, 3*hidden] (LSTM peepholes)
  std::vector<Activation> activations;
  bool has_clip = false;
  C clip = C(0);

  bool reverse(int d) const {
    return direction == Direction::kReverse || (direction == Direction::kBidirectional && d == 1);
  }
  C clamp(C v) const { return has_clip ? std::min(std::max(v, -clip), clip) : v; }
};

template <typename T, typename C>
std::vector<C> to_compute(const Tensor& t) {
  std::vector<C> out(static_cast<std::size_t>(t.size()));
  const T* p = t.data<T>();
  for (int64_t i = 0; i < t.size(); ++i) out[static_cast<std::size_t>(i)] = convert<C>(static_cast<compute_t<T>>(p[i]));
  return out;
}

inline void expect_shape(const KernelContext& ctx, const Tensor& t, const char* name, const Shape& expected) {
  if (t.shape() != expected)
    ctx.fail("{} has shape {}, expected {}", name, shape_to_string(t.shape()), shape_to_string(expected));
}

// Reads the common inputs X, W, R, B, sequence_lens, initial_h (and for LSTM initial_c, P).
template <typename T, typename C>
RnnProblem<C> load_problem(const KernelContext& ctx, int64_t gates, const std::vector<std::string>& default_acts,
                           bool lstm) {
  RnnProblem<C> pr;
  pr.gates = gates;
  std::string dir = ctx.attr_string("direction", std::string("forward"));
  if (dir == "forward") pr.direction = Direction::kForward;
  else if (dir == "reverse") pr.direction = Direction::kReverse;
  else if (dir == "bidirectional") pr.direction = Direction::kBidirectional;
  else ctx.fail("direction must be forward, reverse or bidirectional, found '{}'", dir);
  pr.num_dir = pr.direction == Direction::kBidirectional ? 2 : 1;
  pr.layout = ctx.attr_int("layout", int64_t{0});
  if (pr.layout != 0 && pr.layout != 1) ctx.fail("layout must be 0 or 1, found {}", pr.layout);

  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor& R = ctx.input(2);
  if (X.rank() != 3) ctx.fail("X must be 3-D, found shape {}", shape_to_string(X.shape()));
  if (W.rank() != 3) ctx.fail("W must be 3-D, found shape {}", shape_to_string(W.shape()));
  if (W.dtype() != X.dtype() || R.dtype() != X.dtype()) ctx.fail("X, W and R must have one element type");
  pr.seq = pr.layout == 0 ? X.shape()[0] : X.shape()[1];
  pr.batch = pr.layout == 0 ? X.shape()[1] : X.shape()[0];
  pr.input = X.shape()[2];
  if (W.shape()[0] != pr.num_dir)
    ctx.fail("W's first dimension is {}, expected num_directions = {}", W.shape()[0], pr.num_dir);
  if (W.shape()[1] % gates != 0) ctx.fail("W's second dimension {} is not a multiple of {}", W.shape()[1], gates);
  pr.hidden = ctx.has_attribute("hidden_size") ? ctx.attr_int("hidden_size") : W.shape()[1] / gates;
  const int64_t H = pr.hidden, B = pr.batch, D = pr.num_dir, G = gates;
  if (H <= 0) ctx.fail("hidden_size must be positive, found {}", H);
  expect_shape(ctx, W, "W", {D, G * H, pr.input});
  expect_shape(ctx, R, "R", {D, G * H, H});

  // X to [seq, batch, input].
  std::vector<C> x = to_compute<T, C>(X);
  if (pr.layout == 1 && pr.seq > 1 && B > 1) {
    pr.x.resize(x.size());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < pr.seq; ++t)
        std::copy_n(&x[static_cast<std::size_t>((b * pr.seq + t) * pr.input)], pr.input,
                    &pr.x[static_cast<std::size_t>((t * B + b) * pr.input)]);
  } else {
    pr.x = std::move(x);
  }
  pr.w = to_compute<T, C>(W);
  pr.r = to_compute<T, C>(R);
  if (ctx.has_input(3)) {
    const Tensor& Bt = ctx.input(3);
    if (Bt.dtype() != X.dtype()) ctx.fail("B must have X's element type");
    expect_shape(ctx, Bt, "B", {D, 2 * G * H});
    pr.b = to_compute<T, C>(Bt);
  } else {
    pr.b.assign(static_cast<std::size_t>(D * 2 * G * H), C(0));
  }
  pr.lens.assign(static_cast<std::size_t>(B), pr.seq);
  if (ctx.has_input(4)) {
    const Tensor& L = ctx.input(4);
    if (L.size() != B) ctx.fail("sequence_lens has {} values, expected batch_size = {}", L.size(), B);
    pr.lens = read_int_list(L, ctx);
    for (int64_t v : pr.lens)
      if (v < 0 || v > pr.seq) ctx.fail("sequence_lens value {} is outside [0, {}]", v, pr.seq);
  }
  auto load_state = [&](std::size_t index, const char* name) {
    std::vector<C> s(static_cast<std::size_t>(D * B * H), C(0));
    if (!ctx.has_input(index)) return s;
    const Tensor& t = ctx.input(index);
    if (t.dtype() != X.dtype()) ctx.fail("{} must have X's element type", name);
    expect_shape(ctx, t, name, pr.layout == 0 ? Shape{D, B, H} : Shape{B, D, H});
    std::vector<C> v = to_compute<T, C>(t);
    if (pr.layout == 0) return v;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t d = 0; d < D; ++d)
        std::copy_n(&v[static_cast<std::size_t>((b * D + d) * H)], H, &s[static_cast<std::size_t>((d * B + b) * H)]);
    return s;
  };
  pr.h0 = load_state(5, "initial_h");
  if (lstm) {
    pr.c0 = load_state(6, "initial_c");
    if (ctx.has_input(7)) {
      const Tensor& P = ctx.input(7);
      if (P.dtype() != X.dtype()) ctx.fail("P must have X's element type");
      expect_shape(ctx, P, "P", {D, 3 * H});
      pr.p = to_compute<T, C>(P);
    }
  }
  pr.activations = parse_activations(ctx, pr.num_dir, default_acts);
  if (ctx.has_attribute("clip")) {
    float clip = ctx.attr_float("clip");
    if (!(clip > 0)) ctx.fail("clip must be positive, found {}", clip);
    pr.has_clip = true;
    pr.clip = C(clip);
  }
  return pr;
}

// Writes Y ([seq, D, batch, H] buffer in layout 0 order), and a [D, batch, H] state, honouring layout.
template <typename T, typename C>
void write_sequence_output(KernelContext& ctx, std::size_t index, const RnnProblem<C>& pr, const std::vector<C>& y) {
  if (!ctx.output_requested(index)) return;
  const int64_t S = pr.seq, D = pr.num_dir, B = pr.batch, H = pr.hidden;
  Shape shape = pr.layout == 0 ? Shape{S, D, B, H} : Shape{B, S, D, H};
  Tensor& out = ctx.allocate_output(index, dtype_of<T>(), shape);
  T* o = out.mutable_data<T>();
  for (int64_t t = 0; t < S; ++t)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t b = 0; b < B; ++b) {
        const C* src = &y[static_cast<std::size_t>(((t * D + d) * B + b) * H)];
        T* dst = pr.layout == 0 ? o + ((t * D + d) * B + b) * H : o + ((b * S + t) * D + d) * H;
        for (int64_t h = 0; h < H; ++h) dst[h] = convert<T>(static_cast<compute_t<T>>(src[h]));
      }
}

template <typename T, typename C>
void write_state_output(KernelContext& ctx, std::size_t index, const RnnProblem<C>& pr, const std::vector<C>& s) {
  if (!ctx.output_requested(index)) return;
  const int64_t D = pr.num_dir, B = pr.batch, H = pr.hidden;
  Tensor& out = ctx.allocate_output(index, dtype_of<T>(), pr.layout == 0 ? Shape{D, B, H} : Shape{B, D, H});
  T* o = out.mutable_data<T>();
  for (int64_t d = 0; d < D; ++d)
    for (int64_t b = 0; b < B; ++b) {
      const C* src = &s[static_cast<std::size_t>((d * B + b) * H)];
      T* dst = pr.layout == 0 ? o + (d * B + b) * H : o + (b * D + d) * H;
      for (int64_t h = 0; h < H; ++h) dst[h] = convert<T>(static_cast<compute_t<T>>(src[h]));
    }
}

// X projections for one direction: out[seq*batch, G*H] = X * W_d^T + Wb_d.
template <typename C>
std::vector<C> input_projection(const RnnProblem<C>& pr, int d) {
  const int64_t GH = pr.gates * pr.hidden, M = pr.seq * pr.batch;
  std::vector<C> out(static_cast<std::size_t>(M * GH));
  gemm_nt<C>(M, GH, pr.input, pr.x.data(), pr.input, &pr.w[static_cast<std::size_t>(d * GH * pr.input)], pr.input,
             C(0), out.data(), GH);
  const C* wb = &pr.b[static_cast<std::size_t>(d * 2 * GH)];
  for (int64_t m = 0; m < M; ++m) {
    C* row = &out[static_cast<std::size_t>(m * GH)];
    for (int64_t j = 0; j < GH; ++j) row[j] += wb[j];
  }
  return out;
}

}  // namespace parity::ops::rnn
