// Complex DFT of one line, in double: radix-2 FFT for power-of-two lengths, Bluestein's chirp-z
// algorithm (through a power-of-two FFT) for other lengths above 32, direct sums with an exact
// twiddle table for short ones.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <memory>
#include <numbers>
#include <vector>

namespace parity::ops::signal {

using cplx = std::complex<double>;

// Twiddles w[k] = exp(sign * 2*pi*i * k / n), k in [0, n).
inline std::vector<cplx> twiddles(int64_t n, double sign) {
  std::vector<cplx> w(static_cast<std::size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    double a = sign * 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
    w[static_cast<std::size_t>(k)] = cplx(std::cos(a), std::sin(a));
  }
  return w;
}

// Plans and runs out[k] = sum_t in[t] * exp(sign * 2*pi*i * k*t / n) for k in [0, n).
class Dft {
 public:
  Dft(int64_t n, bool inverse) : n_(n) {
    pow2_ = n > 1 && (n & (n - 1)) == 0;
    const double sign = inverse ? 1.0 : -1.0;
    if (!pow2_ && n > 32) {
      // Bluestein: X_k = c_k * sum_t (x_t c_t) conj(c_{k-t}), c_j = exp(sign*i*pi*j^2/n), a
      // convolution done with FFTs of a power-of-two size m >= 2n - 1.
      int64_t m = 1;
      while (m < 2 * n - 1) m <<= 1;
      fwd_ = std::make_unique<Dft>(m, false);
      inv_ = std::make_unique<Dft>(m, true);
      chirp_.resize(static_cast<std::size_t>(n));
      for (int64_t j = 0, r = 0; j < n; r = (r + 2 * j + 1) % (2 * n), ++j) {  // r = j^2 mod 2n
        const double a = sign * std::numbers::pi * static_cast<double>(r) / static_cast<double>(n);
        chirp_[static_cast<std::size_t>(j)] = cplx(std::cos(a), std::sin(a));
      }
      std::vector<cplx> b(static_cast<std::size_t>(m), cplx(0.0, 0.0));
      b[0] = std::conj(chirp_[0]);
      for (int64_t j = 1; j < n; ++j)
        b[static_cast<std::size_t>(j)] = b[static_cast<std::size_t>(m - j)] =
            std::conj(chirp_[static_cast<std::size_t>(j)]);
      bfft_.resize(static_cast<std::size_t>(m));
      fwd_->run(b.data(), bfft_.data());
      buf_a_.resize(static_cast<std::size_t>(m));
      buf_b_.resize(static_cast<std::size_t>(m));
      return;
    }
    w_ = twiddles(n, sign);
    if (pow2_) {
      rev_.resize(static_cast<std::size_t>(n));
      int bits = 0;
      while ((int64_t{1} << bits) < n) ++bits;
      for (int64_t i = 0; i < n; ++i) {
        int64_t r = 0;
        for (int b = 0; b < bits; ++b)
          if (i & (int64_t{1} << b)) r |= int64_t{1} << (bits - 1 - b);
        rev_[static_cast<std::size_t>(i)] = r;
      }
    }
  }
  int64_t size() const { return n_; }

  // in and out have n elements each and must not alias. Not thread-safe (scratch buffers).
  void run(const cplx* in, cplx* out) {
    if (fwd_) {
      const int64_t m = fwd_->size();
      for (int64_t t = 0; t < m; ++t)
        buf_a_[static_cast<std::size_t>(t)] = t < n_ ? in[t] * chirp_[static_cast<std::size_t>(t)] : cplx(0.0, 0.0);
      fwd_->run(buf_a_.data(), buf_b_.data());
      for (int64_t t = 0; t < m; ++t) buf_b_[static_cast<std::size_t>(t)] *= bfft_[static_cast<std::size_t>(t)];
      inv_->run(buf_b_.data(), buf_a_.data());
      const double scale = 1.0 / static_cast<double>(m);
      for (int64_t k = 0; k < n_; ++k)
        out[k] = chirp_[static_cast<std::size_t>(k)] * buf_a_[static_cast<std::size_t>(k)] * scale;
      return;
    }
    if (pow2_) {
      for (int64_t i = 0; i < n_; ++i) out[rev_[static_cast<std::size_t>(i)]] = in[i];
      for (int64_t len = 2; len <= n_; len <<= 1) {
        const int64_t half = len / 2, stride = n_ / len;
        for (int64_t s = 0; s < n_; s += len)
          for (int64_t j = 0; j < half; ++j) {
            cplx t = w_[static_cast<std::size_t>(j * stride)] * out[s + j + half];
            cplx u = out[s + j];
            out[s + j] = u + t;
            out[s + j + half] = u - t;
          }
      }
      return;
    }
    for (int64_t k = 0; k < n_; ++k) {
      cplx acc(0.0, 0.0);
      int64_t idx = 0;
      for (int64_t t = 0; t < n_; ++t) {
        acc += in[t] * w_[static_cast<std::size_t>(idx)];
        idx += k;
        if (idx >= n_) idx -= n_;
      }
      out[k] = acc;
    }
  }

 private:
  int64_t n_;
  std::vector<cplx> w_;
  bool pow2_ = false;
  std::vector<int64_t> rev_;
  std::unique_ptr<Dft> fwd_, inv_;  // Bluestein
  std::vector<cplx> chirp_, bfft_, buf_a_, buf_b_;
};

}  // namespace parity::ops::signal
