// Softmax, LogSoftmax, Hardmax. Before opset 13 the input is coerced to 2-D at `axis` (default 1)
// and each row is normalized; from 13 on only `axis` (default -1) is.
#include <cmath>
#include <limits>

#include "nn/nn_util.h"

namespace parity::ops {
namespace {

enum class Kind { kSoftmax, kLogSoftmax, kHardmax };

void softmax_family(KernelContext& ctx, Kind kind) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  const bool legacy = ctx.opset() < 13;
  int64_t axis = ctx.attr_int("axis", legacy ? 1 : -1);
  int64_t outer, len, inner;
  if (rank == 0) {
    outer = len = inner = 1;
  } else if (legacy) {
    if (axis < -rank || axis > rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
    if (axis < 0) axis += rank;
    outer = nn::product(x.shape(), 0, static_cast<std::size_t>(axis));
    len = nn::product(x.shape(), static_cast<std::size_t>(axis));
    inner = 1;
  } else {
    axis = normalize_axis(axis, rank, ctx);
    outer = nn::product(x.shape(), 0, static_cast<std::size_t>(axis));
    len = x.shape()[axis];
    inner = nn::product(x.shape(), static_cast<std::size_t>(axis) + 1);
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  if (x.size() == 0) return;
  dispatch_float(x.dtype(), ctx, [&]<typename T, typename C>() {
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    std::vector<C> buf(static_cast<std::size_t>(len));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * len * inner + i;
        C mx = -std::numeric_limits<C>::infinity();
        int64_t arg = 0;
        bool nan = false;
        for (int64_t k = 0; k < len; ++k) {
          C v = nn::to_compute<T, C>(px[base + k * inner]);
          buf[k] = v;
          if (std::isnan(v)) nan = true;
          if (v > mx) {
            mx = v;
            arg = k;
          }
        }
        if (kind == Kind::kHardmax) {
          for (int64_t k = 0; k < len; ++k) py[base + k * inner] = nn::from_compute<T>(C(k == arg ? 1 : 0));
          continue;
        }
        if (nan || std::isinf(mx)) {
          // Degenerate rows (NaN, all -inf, or +inf present): follow exp/sum arithmetic directly.
          if (nan || mx < 0) {
            for (int64_t k = 0; k < len; ++k)
              py[base + k * inner] = nn::from_compute<T>(std::numeric_limits<C>::quiet_NaN());
            continue;
          }
        }
        double sum = 0;
        for (int64_t k = 0; k < len; ++k) {
          C e = std::exp(buf[k] - mx);
          sum += static_cast<double>(e);
          if (kind == Kind::kSoftmax) buf[k] = e;
        }
        if (kind == Kind::kSoftmax) {
          const C inv = static_cast<C>(1.0 / sum);
          for (int64_t k = 0; k < len; ++k) py[base + k * inner] = nn::from_compute<T>(buf[k] * inv);
        } else {
          const C ls = static_cast<C>(std::log(sum));
          for (int64_t k = 0; k < len; ++k) py[base + k * inner] = nn::from_compute<T>(buf[k] - mx - ls);
        }
      }
  });
}

void softmax(KernelContext& ctx) { softmax_family(ctx, Kind::kSoftmax); }
void log_softmax(KernelContext& ctx) { softmax_family(ctx, Kind::kLogSoftmax); }
void hardmax(KernelContext& ctx) { softmax_family(ctx, Kind::kHardmax); }

}  // namespace

PARITY_KERNEL("", "Softmax", 1, softmax);
PARITY_KERNEL("", "LogSoftmax", 1, log_softmax);
PARITY_KERNEL("", "Hardmax", 1, hardmax);

}  // namespace parity::ops
