// Det: determinant of the trailing M x M matrices, by LU decomposition with partial pivoting in
// double precision.
#include <cmath>

#include "nn/nn_util.h"

namespace parity::ops {
namespace {

void det(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2, found {}", shape_to_string(x.shape()));
  const int64_t m = x.shape()[x.rank() - 1];
  if (x.shape()[x.rank() - 2] != m) ctx.fail("the last two dims must be equal, found {}", shape_to_string(x.shape()));
  Shape out_shape(x.shape().begin(), x.shape().end() - 2);
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  const int64_t batches = y.size();
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    std::vector<double> a(static_cast<std::size_t>(m * m));
    for (int64_t b = 0; b < batches; ++b) {
      for (int64_t i = 0; i < m * m; ++i) a[i] = static_cast<double>(nn::to_compute<T, C>(px[b * m * m + i]));
      double d = 1.0;
      for (int64_t c = 0; c < m; ++c) {
        int64_t piv = c;
        for (int64_t r = c + 1; r < m; ++r)
          if (std::abs(a[r * m + c]) > std::abs(a[piv * m + c])) piv = r;
        if (a[piv * m + c] == 0.0) {
          d = 0.0;
          break;
        }
        if (piv != c) {
          for (int64_t j = 0; j < m; ++j) std::swap(a[c * m + j], a[piv * m + j]);
          d = -d;
        }
        const double p = a[c * m + c];
        d *= p;
        for (int64_t r = c + 1; r < m; ++r) {
          const double f = a[r * m + c] / p;
          if (f == 0.0) continue;
          for (int64_t j = c; j < m; ++j) a[r * m + j] -= f * a[c * m + j];
        }
      }
      py[b] = nn::from_compute<T>(static_cast<C>(d));
    }
  });
}

}  // namespace

PARITY_KERNEL("", "Det", 11, det);

}  // namespace parity::ops
