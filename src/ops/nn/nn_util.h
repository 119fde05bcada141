// Helpers shared by the nn family's kernels: BLAS matrix products, float conversions into
// compute buffers, and the spatial geometry (output sizes, pads) of convolutions and pools.
#pragma once

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "parity/ops/broadcast.h"
#include "parity/ops/dispatch.h"
#include "parity/ops/kernel.h"

namespace parity::ops::nn {

// ---------------------------------------------------------------------------------------------
// Matrix products (row-major). C[M,N] = alpha * op(A) * op(B) + beta * C.
// ---------------------------------------------------------------------------------------------
inline void check_blas_dims(int64_t m, int64_t n, int64_t k) {
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
    throw UnsupportedError("matrix product dimensions exceed the BLAS int range");
}

// One body for both float widths: cblas_sgemm or cblas_dgemm. k == 0 gives beta * C (zeros when
// beta is 0, whatever C held).
template <typename F>
void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, F alpha, const F* a, int64_t lda,
               const F* b, int64_t ldb, F beta, F* c, int64_t ldc) {
  static_assert(std::is_same_v<F, float> || std::is_same_v<F, double>);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == F(0) ? F(0) : beta * c[i * ldc + j];
    return;
  }
  check_blas_dims(m, n, k);
  const CBLAS_TRANSPOSE op_a = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE op_b = trans_b ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<F, float>) {
    cblas_sgemm(CblasRowMajor, op_a, op_b, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
                static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, op_a, op_b, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
                static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  }
}

inline void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  blas_gemm<float>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

inline void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  blas_gemm<double>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Integer product with int64 accumulation: C = A*B (+ C when accumulate). A, B of element types
// TA, TB; the result is stored as TC (wrapping like C++ conversion).
template <typename TA, typename TB, typename TC>
void gemm_int(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const TA* a, int64_t lda, const TB* b,
              int64_t ldb, TC* c, int64_t ldc, bool accumulate = false) {
  std::vector<int64_t> row(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), 0);
    for (int64_t p = 0; p < k; ++p) {
      int64_t av = static_cast<int64_t>(trans_a ? a[p * lda + i] : a[i * lda + p]);
      if (av == 0) continue;
      if (!trans_b) {
        const TB* brow = b + p * ldb;
        for (int64_t j = 0; j < n; ++j) row[j] += av * static_cast<int64_t>(brow[j]);
      } else {
        for (int64_t j = 0; j < n; ++j) row[j] += av * static_cast<int64_t>(b[j * ldb + p]);
      }
    }
    TC* crow = c + i * ldc;
    if (accumulate) {
      for (int64_t j = 0; j < n; ++j) crow[j] = static_cast<TC>(static_cast<int64_t>(crow[j]) + row[j]);
    } else {
      for (int64_t j = 0; j < n; ++j) crow[j] = static_cast<TC>(row[j]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Element conversions into compute buffers.
// ---------------------------------------------------------------------------------------------

// Pointer to a tensor's elements as C: the tensor's own data when T == C, else a converted copy
// kept in `buffer`.
template <typename C, typename T>
const C* as_compute(const Tensor& t, std::vector<C>& buffer) {
  if constexpr (std::is_same_v<C, T>) {
    return t.data<T>();
  } else {
    buffer.resize(static_cast<std::size_t>(t.size()));
    const T* p = t.data<T>();
    for (int64_t i = 0, n = t.size(); i < n; ++i) buffer[i] = static_cast<C>(convert<compute_t<T>>(p[i]));
    return buffer.data();
  }
}

// A per-thread scratch buffer of at least n elements, reused across calls (no zeroing, no fresh
// pages per call). Contents are unspecified; one buffer per element type, so a caller must not
// hold two at once.
template <typename C>
C* scratch(std::size_t n) {
  thread_local std::vector<C> buffer;
  if (buffer.size() < n) {
    buffer = std::vector<C>();
    buffer.resize(n);
  }
  return buffer.data();
}

// Stores compute values into T elements (rounding once).
template <typename T, typename C>
inline T from_compute(C v) {
  if constexpr (std::is_same_v<T, C>) return v;
  else if constexpr (is_half_v<T>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}

template <typename T, typename C>
inline C to_compute(T v) {
  return static_cast<C>(convert<compute_t<T>>(v));
}

// Any float tensor's values as double.
inline std::vector<double> read_floats(const KernelContext& ctx, const Tensor& t) {
  std::vector<double> v(static_cast<std::size_t>(t.size()));
  dispatch<FloatTypes>(t.dtype(), ctx, [&]<typename T>() {
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.size(); ++i) v[i] = static_cast<double>(convert<compute_t<T>>(p[i]));
  });
  return v;
}

// ---------------------------------------------------------------------------------------------
// Spatial geometry of convolutions and pools.
// ---------------------------------------------------------------------------------------------
struct Geometry {
  std::size_t nd = 0;
  Shape in;                     // input spatial dims
  Shape kernel;                 // kernel spatial dims
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;    // begin pads then end pads (2*nd)
  Shape out;                    // output spatial dims
  int64_t in_size() const { int64_t s = 1; for (auto d : in) s *= d; return s; }
  int64_t out_size() const { int64_t s = 1; for (auto d : out) s *= d; return s; }
  int64_t kernel_size() const { int64_t s = 1; for (auto d : kernel) s *= d; return s; }
};

// Reads strides/dilations/pads/auto_pad and computes the output dims of a convolution or pool
// over `in` with `kernel`. pool_ceil: ceil_mode of pools (the last window must start inside the
// input or its begin padding).
inline Geometry make_geometry(const KernelContext& ctx, const Shape& in, const Shape& kernel, bool ceil_mode = false,
                              bool has_dilations = true) {
  Geometry g;
  g.nd = in.size();
  g.in = in;
  g.kernel = kernel;
  const std::size_t nd = g.nd;
  if (kernel.size() != nd) ctx.fail("kernel has {} spatial dims, the input {}", kernel.size(), nd);
  for (auto k : kernel)
    if (k <= 0) ctx.fail("kernel dims must be positive, found {}", shape_to_string(kernel));
  g.strides = ctx.has_attribute("strides") ? ctx.attr_ints("strides") : std::vector<int64_t>(nd, 1);
  g.dilations = (has_dilations && ctx.has_attribute("dilations")) ? ctx.attr_ints("dilations")
                                                                  : std::vector<int64_t>(nd, 1);
  if (g.strides.empty()) g.strides.assign(nd, 1);
  if (g.dilations.empty()) g.dilations.assign(nd, 1);
  if (g.strides.size() != nd) ctx.fail("strides has {} values, expected {}", g.strides.size(), nd);
  if (g.dilations.size() != nd) ctx.fail("dilations has {} values, expected {}", g.dilations.size(), nd);
  for (std::size_t i = 0; i < nd; ++i) {
    if (g.strides[i] <= 0) ctx.fail("strides must be positive, found {}", g.strides[i]);
    if (g.dilations[i] <= 0) ctx.fail("dilations must be positive, found {}", g.dilations[i]);
  }
  std::string auto_pad = ctx.has_attribute("auto_pad") ? ctx.attr_string("auto_pad") : "NOTSET";
  g.pads.assign(2 * nd, 0);
  g.out.assign(nd, 0);
  if (auto_pad == "NOTSET" || auto_pad.empty()) {
    if (ctx.has_attribute("pads")) {
      g.pads = ctx.attr_ints("pads");
      if (g.pads.empty()) g.pads.assign(2 * nd, 0);
      if (g.pads.size() != 2 * nd) ctx.fail("pads has {} values, expected {}", g.pads.size(), 2 * nd);
    }
    for (std::size_t i = 0; i < nd; ++i) {
      if (g.pads[i] < 0 || g.pads[i + nd] < 0) ctx.fail("pads must be non-negative");
      int64_t window = (kernel[i] - 1) * g.dilations[i] + 1;
      int64_t span = in[i] + g.pads[i] + g.pads[i + nd] - window;
      if (span < 0) {
        g.out[i] = 0;
        continue;
      }
      if (ceil_mode) {
        int64_t o = (span + g.strides[i] - 1) / g.strides[i] + 1;
        if ((o - 1) * g.strides[i] >= in[i] + g.pads[i]) --o;
        g.out[i] = o;
      } else {
        g.out[i] = span / g.strides[i] + 1;
      }
    }
  } else if (auto_pad == "VALID") {
    for (std::size_t i = 0; i < nd; ++i) {
      int64_t window = (kernel[i] - 1) * g.dilations[i] + 1;
      int64_t span = in[i] - window;
      if (span < 0) g.out[i] = 0;
      else g.out[i] = ceil_mode ? (span + g.strides[i] - 1) / g.strides[i] + 1 : span / g.strides[i] + 1;
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (std::size_t i = 0; i < nd; ++i) {
      int64_t window = (kernel[i] - 1) * g.dilations[i] + 1;
      g.out[i] = (in[i] + g.strides[i] - 1) / g.strides[i];
      int64_t needed = std::max<int64_t>(0, (g.out[i] - 1) * g.strides[i] + window - in[i]);
      int64_t head = auto_pad == "SAME_UPPER" ? needed / 2 : (needed + 1) / 2;
      g.pads[i] = head;
      g.pads[i + nd] = needed - head;
    }
  } else {
    ctx.fail("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, found '{}'", auto_pad);
  }
  return g;
}

// Kernel spatial dims: the kernel_shape attribute when present, else `fallback` (W's dims).
inline Shape kernel_shape_attr(const KernelContext& ctx, const Shape& fallback) {
  if (ctx.has_attribute("kernel_shape")) {
    auto k = ctx.attr_ints("kernel_shape");
    if (!k.empty()) return k;
  }
  return fallback;
}

// Row-major strides of a shape.
inline std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

inline int64_t product(const Shape& s, std::size_t begin = 0, std::size_t end = SIZE_MAX) {
  int64_t p = 1;
  end = std::min(end, s.size());
  for (std::size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

}  // namespace parity::ops::nn
