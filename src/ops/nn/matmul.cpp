// MatMul, Gemm, MatMulInteger, QLinearMatMul.
#include <array>
#include <cmath>
#include <limits>

#include "nn/nn_util.h"

namespace parity::ops {
namespace {

using nn::product;

// numpy.matmul's shape rules: 1-D operands are promoted (and the added dim removed from the
// result), batch dims broadcast. `batches` lists, per output matrix, the matrix index into A and B.
struct MatMulPlan {
  Shape out_shape;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch_count = 0;
  std::vector<std::array<int64_t, 2>> batches;
  bool fold_a = false;  // B is a single matrix and A's batches are not broadcast: one (batch*M) x K product
};

MatMulPlan plan_matmul(const KernelContext& ctx, const Shape& a_in, const Shape& b_in) {
  if (a_in.empty() || b_in.empty()) ctx.fail("MatMul operands must have rank >= 1, found {} and {}",
                                             shape_to_string(a_in), shape_to_string(b_in));
  Shape a = a_in, b = b_in;
  bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  MatMulPlan p;
  p.m = a[a.size() - 2];
  p.k = a[a.size() - 1];
  p.n = b[b.size() - 1];
  if (b[b.size() - 2] != p.k)
    ctx.fail("inner dimensions differ: A is {}, B is {}", shape_to_string(a_in), shape_to_string(b_in));
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape batch = broadcast_shapes(ab, bb, &ctx);
  p.out_shape = batch;
  if (!a1) p.out_shape.push_back(p.m);
  if (!b1) p.out_shape.push_back(p.n);
  p.batch_count = checked_element_count(batch, ctx.limits().max_elements);
  if (product(bb) == 1 && product(ab) == p.batch_count) {
    p.fold_a = true;
    return p;
  }
  p.batches.resize(static_cast<std::size_t>(p.batch_count));
  if (p.batch_count > 0) {
    for_each_broadcast<2>(batch, {ab, bb}, [&](int64_t i, const std::array<int64_t, 2>& o) {
      p.batches[static_cast<std::size_t>(i)] = {o[0], o[1]};
    });
  }
  return p;
}

template <typename C>
void run_float_matmul(const MatMulPlan& p, const C* a, const C* b, C* y) {
  if (p.fold_a) {
    nn::gemm(false, false, p.batch_count * p.m, p.n, p.k, C(1), a, p.k, b, p.n, C(0), y, p.n);
    return;
  }
  for (int64_t i = 0; i < p.batch_count; ++i) {
    const auto& o = p.batches[static_cast<std::size_t>(i)];
    nn::gemm(false, false, p.m, p.n, p.k, C(1), a + o[0] * p.m * p.k, p.k, b + o[1] * p.k * p.n, p.n, C(0),
             y + i * p.m * p.n, p.n);
  }
}

template <typename TA, typename TB, typename TY>
void run_int_matmul(const MatMulPlan& p, const TA* a, const TB* b, TY* y) {
  if (p.fold_a) {
    nn::gemm_int(false, false, p.batch_count * p.m, p.n, p.k, a, p.k, b, p.n, y, p.n);
    return;
  }
  for (int64_t i = 0; i < p.batch_count; ++i) {
    const auto& o = p.batches[static_cast<std::size_t>(i)];
    nn::gemm_int(false, false, p.m, p.n, p.k, a + o[0] * p.m * p.k, p.k, b + o[1] * p.k * p.n, p.n,
                 y + i * p.m * p.n, p.n);
  }
}

void matmul(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype())
    ctx.fail("A and B must have the same element type, found {} and {}", dtype_name(a.dtype()),
             dtype_name(b.dtype()));
  MatMulPlan p = plan_matmul(ctx, a.shape(), b.shape());
  Tensor& y = ctx.allocate_output(0, a.dtype(), p.out_shape);
  if (y.size() == 0) return;
  if (is_floating(a.dtype())) {
    dispatch_float(a.dtype(), ctx, [&]<typename T, typename C>() {
      using G = std::conditional_t<std::is_same_v<C, double>, double, float>;
      std::vector<G> ab, bb;
      const G* pa = nn::as_compute<G, T>(a, ab);
      const G* pb = nn::as_compute<G, T>(b, bb);
      if constexpr (std::is_same_v<G, T>) {
        run_float_matmul<G>(p, pa, pb, y.mutable_data<T>());
      } else {
        std::vector<G> out(static_cast<std::size_t>(y.size()));
        run_float_matmul<G>(p, pa, pb, out.data());
        T* py = y.mutable_data<T>();
        for (int64_t i = 0; i < y.size(); ++i) py[i] = nn::from_compute<T>(out[i]);
      }
    });
    return;
  }
  dispatch<IntTypes>(a.dtype(), ctx, [&]<typename T>() {
    run_int_matmul<T, T, T>(p, a.data<T>(), b.data<T>(), y.mutable_data<T>());
  });
}

// --- Gemm ---------------------------------------------------------------------------------------
void gemm(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const bool ta = ctx.attr_int("transA", 0) != 0;
  const bool tb = ctx.attr_int("transB", 0) != 0;
  if (a.rank() != 2 || b.rank() != 2)
    ctx.fail("A and B must be 2-D, found {} and {}", shape_to_string(a.shape()), shape_to_string(b.shape()));
  if (a.dtype() != b.dtype())
    ctx.fail("A and B must have the same element type, found {} and {}", dtype_name(a.dtype()),
             dtype_name(b.dtype()));
  const int64_t m = ta ? a.shape()[1] : a.shape()[0];
  const int64_t k = ta ? a.shape()[0] : a.shape()[1];
  const int64_t kb = tb ? b.shape()[1] : b.shape()[0];
  const int64_t n = tb ? b.shape()[0] : b.shape()[1];
  if (k != kb) ctx.fail("inner dimensions differ: A is {} (transA={}), B is {} (transB={})",
                        shape_to_string(a.shape()), ta, shape_to_string(b.shape()), tb);
  const double alpha = ctx.attr_float("alpha", 1.0f);
  const double beta = ctx.attr_float("beta", 1.0f);
  const Tensor* c = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Shape out_shape{m, n};
  if (c) {
    if (c->dtype() != a.dtype()) ctx.fail("C must have A's element type, found {}", dtype_name(c->dtype()));
    if (c->rank() > 2) ctx.fail("C must be broadcastable to {}, found {}", shape_to_string(out_shape),
                                shape_to_string(c->shape()));
    if (broadcast_shapes(c->shape(), out_shape, &ctx) != out_shape)
      ctx.fail("C of shape {} cannot be broadcast to {}", shape_to_string(c->shape()), shape_to_string(out_shape));
  }
  Tensor& y = ctx.allocate_output(0, a.dtype(), out_shape);
  if (y.size() == 0) return;
  auto c_strides = c ? broadcast_strides(c->shape(), out_shape) : std::vector<int64_t>{0, 0};

  if (is_floating(a.dtype())) {
    dispatch_float(a.dtype(), ctx, [&]<typename T, typename C>() {
      using G = std::conditional_t<std::is_same_v<C, double>, double, float>;
      std::vector<G> ab, bb, out;
      const G* pa = nn::as_compute<G, T>(a, ab);
      const G* pb = nn::as_compute<G, T>(b, bb);
      G* py;
      if constexpr (std::is_same_v<G, T>) {
        py = y.mutable_data<T>();
      } else {
        out.assign(static_cast<std::size_t>(m * n), G(0));
        py = out.data();
      }
      G gbeta = 0;
      if (c && beta != 0.0) {
        const T* pc = c->data<T>();
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            py[i * n + j] = static_cast<G>(beta) * nn::to_compute<T, G>(pc[i * c_strides[0] + j * c_strides[1]]);
        gbeta = 1;
      }
      nn::gemm(ta, tb, m, n, k, static_cast<G>(alpha), pa, a.shape()[1], pb, b.shape()[1], gbeta, py, n);
      if constexpr (!std::is_same_v<G, T>) {
        T* dst = y.mutable_data<T>();
        for (int64_t i = 0; i < m * n; ++i) dst[i] = nn::from_compute<T>(out[i]);
      }
    });
    return;
  }
  dispatch<IntTypes>(a.dtype(), ctx, [&]<typename T>() {
    // Integer Gemm: alpha/beta applied in double on the exact int64 product.
    std::vector<int64_t> acc(static_cast<std::size_t>(m * n));
    nn::gemm_int(ta, tb, m, n, k, a.data<T>(), a.shape()[1], b.data<T>(), b.shape()[1], acc.data(), n);
    T* py = y.mutable_data<T>();
    const T* pc = c ? c->data<T>() : nullptr;
    const bool unit = alpha == 1.0 && (beta == 1.0 || !c);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t cv = pc ? static_cast<int64_t>(pc[i * c_strides[0] + j * c_strides[1]]) : 0;
        if (unit) py[i * n + j] = static_cast<T>(acc[i * n + j] + cv);
        else
          py[i * n + j] = static_cast<T>(alpha * static_cast<double>(acc[i * n + j]) + beta * static_cast<double>(cv));
      }
  });
}

// --- MatMulInteger / QLinearMatMul ---------------------------------------------------------------

using QuantTypes = TypeList<int8_t, uint8_t>;

// Subtracts a zero point (scalar, or per row of A / per column of B) and widens to int32.
// per_row: index the zero point by the row (A); otherwise by the column (B).
template <typename T>
std::vector<int32_t> centered(const KernelContext& ctx, const Tensor& x, const Tensor* zp, int64_t rows,
                              int64_t cols, bool per_row, const char* what) {
  std::vector<int32_t> out(static_cast<std::size_t>(x.size()));
  const T* px = x.data<T>();
  std::vector<int32_t> z;
  if (zp) {
    if (zp->dtype() != x.dtype())
      ctx.fail("{} zero point must have the operand's element type {}, found {}", what, dtype_name(x.dtype()),
               dtype_name(zp->dtype()));
    const T* pz = zp->data<T>();
    for (int64_t i = 0; i < zp->size(); ++i) z.push_back(static_cast<int32_t>(pz[i]));
    int64_t want = per_row ? rows : cols;
    if (z.size() != 1 && static_cast<int64_t>(z.size()) != want)
      ctx.fail("{} zero point must be a scalar or have {} values, found shape {}", what, want,
               shape_to_string(zp->shape()));
  }
  if (z.empty() || z.size() == 1) {
    int32_t zz = z.empty() ? 0 : z[0];
    for (int64_t i = 0; i < x.size(); ++i) out[i] = static_cast<int32_t>(px[i]) - zz;
  } else {
    for (int64_t i = 0; i < x.size(); ++i) {
      int64_t idx = per_row ? (i / cols) % rows : i % cols;
      out[i] = static_cast<int32_t>(px[i]) - z[idx];
    }
  }
  return out;
}

void matmul_integer(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  MatMulPlan p = plan_matmul(ctx, a.shape(), b.shape());
  const Tensor* azp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Tensor* bzp = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  std::vector<int32_t> ca = dispatch<QuantTypes>(a.dtype(), ctx, [&]<typename T>() {
    return centered<T>(ctx, a, azp, p.m, p.k, true, "A");
  });
  std::vector<int32_t> cb = dispatch<QuantTypes>(b.dtype(), ctx, [&]<typename T>() {
    return centered<T>(ctx, b, bzp, p.k, p.n, false, "B");
  });
  Tensor& y = ctx.allocate_output(0, DType::kInt32, p.out_shape);
  if (y.size() == 0) return;
  run_int_matmul<int32_t, int32_t, int32_t>(p, ca.data(), cb.data(), y.mutable_data<int32_t>());
}

// Reads a scale tensor (float, float16, bfloat16) as float values rounded as stored.
std::vector<double> read_scales(const KernelContext& ctx, const Tensor& t, const char* what) {
  std::vector<double> v;
  dispatch<TypeList<float, Float16, BFloat16>>(t.dtype(), ctx, [&]<typename T>() {
    for (int64_t i = 0; i < t.size(); ++i) v.push_back(static_cast<double>(static_cast<float>(t.data<T>()[i])));
  });
  if (v.empty()) ctx.fail("{} must not be empty", what);
  return v;
}

void qlinear_matmul(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& a_scale = ctx.input(1);
  const Tensor& a_zp = ctx.input(2);
  const Tensor& b = ctx.input(3);
  const Tensor& b_scale = ctx.input(4);
  const Tensor& b_zp = ctx.input(5);
  const Tensor& y_scale = ctx.input(6);
  const Tensor& y_zp = ctx.input(7);
  MatMulPlan p = plan_matmul(ctx, a.shape(), b.shape());
  std::vector<int32_t> ca = dispatch<QuantTypes>(a.dtype(), ctx, [&]<typename T>() {
    return centered<T>(ctx, a, &a_zp, p.m, p.k, true, "a");
  });
  std::vector<int32_t> cb = dispatch<QuantTypes>(b.dtype(), ctx, [&]<typename T>() {
    return centered<T>(ctx, b, &b_zp, p.k, p.n, false, "b");
  });
  std::vector<int64_t> acc(static_cast<std::size_t>(checked_element_count(p.out_shape, ctx.limits().max_elements)));
  if (!acc.empty()) run_int_matmul<int32_t, int32_t, int64_t>(p, ca.data(), cb.data(), acc.data());

  auto as = read_scales(ctx, a_scale, "a_scale");
  auto bs = read_scales(ctx, b_scale, "b_scale");
  auto ys = read_scales(ctx, y_scale, "y_scale");
  if (as.size() != 1 && static_cast<int64_t>(as.size()) != p.m) ctx.fail("a_scale must be a scalar or have M values");
  if (bs.size() != 1 && static_cast<int64_t>(bs.size()) != p.n) ctx.fail("b_scale must be a scalar or have N values");
  if (ys.size() != 1 && static_cast<int64_t>(ys.size()) != p.n) ctx.fail("y_scale must be a scalar or have N values");
  const bool half_scales = a_scale.dtype() != DType::kFloat32;
  // a_scale * b_scale / y_scale in the scales' own precision (rounded per operation).
  auto combined = [&](int64_t row, int64_t col) -> double {
    double s1 = as[as.size() == 1 ? 0 : row], s2 = bs[bs.size() == 1 ? 0 : col], s3 = ys[ys.size() == 1 ? 0 : col];
    if (a_scale.dtype() == DType::kFloat16) {
      float t = static_cast<float>(Float16(static_cast<float>(s1 * s2)));
      return static_cast<float>(Float16(t / static_cast<float>(s3)));
    }
    if (a_scale.dtype() == DType::kBFloat16) {
      float t = static_cast<float>(BFloat16(static_cast<float>(s1 * s2)));
      return static_cast<float>(BFloat16(t / static_cast<float>(s3)));
    }
    (void)half_scales;
    float t = static_cast<float>(s1) * static_cast<float>(s2);
    return t / static_cast<float>(s3);
  };
  Tensor& y = ctx.allocate_output(0, y_zp.dtype(), p.out_shape);
  dispatch<QuantTypes>(y_zp.dtype(), ctx, [&]<typename T>() {
    std::vector<double> yz;
    for (int64_t i = 0; i < y_zp.size(); ++i) yz.push_back(y_zp.data<T>()[i]);
    if (yz.empty()) ctx.fail("y_zero_point must not be empty");
    T* py = y.mutable_data<T>();
    const int64_t n = p.n, m = p.m;
    for (std::size_t i = 0; i < acc.size(); ++i) {
      int64_t col = static_cast<int64_t>(i) % n;
      int64_t row = (static_cast<int64_t>(i) / n) % m;
      double v = static_cast<double>(acc[i]) * combined(row, col) + yz[yz.size() == 1 ? 0 : col % yz.size()];
      v = std::nearbyint(v);
      v = std::clamp(v, static_cast<double>(std::numeric_limits<T>::min()),
                     static_cast<double>(std::numeric_limits<T>::max()));
      py[i] = static_cast<T>(v);
    }
  });
}

}  // namespace

PARITY_KERNEL("", "MatMul", 1, matmul);
PARITY_KERNEL("", "Gemm", 1, gemm);
PARITY_KERNEL("", "MatMulInteger", 10, matmul_integer);
PARITY_KERNEL("", "QLinearMatMul", 10, qlinear_matmul);

}  // namespace parity::ops
