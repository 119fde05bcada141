// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum,
// ReduceLogSumExp, ReduceSumSquare. Axes come from the attribute before opset 13 (ReduceSum) or
// 18 (the others), from the optional second input after; empty axes reduce everything unless
// noop_with_empty_axes. Float reductions accumulate in double.
#include <cmath>
#include <limits>

#include "nn/nn_util.h"

namespace parity::ops {
namespace {

enum class Op { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

struct ReducePlan {
  Shape out_shape;    // with or without kept dims
  Shape kept_shape;   // input rank, reduced dims set to 1
  int64_t count = 1;  // elements per reduction
  // Contiguous form: input viewed as outer x r x inner, reducing r.
  bool contiguous = false;
  int64_t outer = 1, r = 1, inner = 1;
  bool identity = false;
};

ReducePlan plan_reduce(KernelContext& ctx, const Tensor& x, int since_axes_input) {
  const int64_t rank = x.rank();
  std::vector<int64_t> axes;
  bool noop = false;
  if (ctx.opset() >= since_axes_input) {
    noop = ctx.attr_int("noop_with_empty_axes", 0) != 0;
    if (ctx.has_input(1)) axes = read_int_list(ctx.input(1), ctx);
  } else if (ctx.has_attribute("axes")) {
    axes = ctx.attr_ints("axes");
  }
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  ReducePlan p;
  std::vector<bool> red(static_cast<std::size_t>(rank), false);
  if (axes.empty()) {
    if (noop) {
      p.identity = true;
      p.out_shape = x.shape();
      return p;
    }
    std::fill(red.begin(), red.end(), true);
  } else {
    for (auto a : axes) {
      if (a < -rank || a >= rank) ctx.fail("axis {} is out of range for rank {}", a, rank);
      red[static_cast<std::size_t>(a < 0 ? a + rank : a)] = true;
    }
  }
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t dim = x.shape()[d];
    p.kept_shape.push_back(red[d] ? 1 : dim);
    if (red[d]) {
      p.count *= dim;
      if (keepdims) p.out_shape.push_back(1);
    } else {
      p.out_shape.push_back(dim);
    }
  }
  // Contiguous when the reduced dims of size > 1 form one block.
  int64_t first = -1, last = -1;
  for (int64_t d = 0; d < rank; ++d)
    if (red[d] && x.shape()[d] != 1) {
      if (first < 0) first = d;
      last = d;
    }
  bool block = true;
  for (int64_t d = first; first >= 0 && d <= last; ++d)
    if (!red[d] && x.shape()[d] != 1) block = false;
  if (block) {
    p.contiguous = true;
    if (first < 0) {
      p.outer = x.size();
      p.r = 1;
      p.inner = 1;
    } else {
      p.outer = nn::product(x.shape(), 0, static_cast<std::size_t>(first));
      p.r = nn::product(x.shape(), static_cast<std::size_t>(first), static_cast<std::size_t>(last) + 1);
      p.inner = nn::product(x.shape(), static_cast<std::size_t>(last) + 1);
    }
  }
  return p;
}

// Calls fn(out_index, in_index) for every input element.
template <typename Fn>
void visit(const ReducePlan& p, const Tensor& x, Fn&& fn) {
  if (x.size() == 0) return;
  if (p.contiguous) {
    int64_t in = 0;
    for (int64_t o = 0; o < p.outer; ++o)
      for (int64_t k = 0; k < p.r; ++k) {
        const int64_t base = o * p.inner;
        for (int64_t i = 0; i < p.inner; ++i) fn(base + i, in++);
      }
    return;
  }
  for_each_broadcast<1>(x.shape(), {p.kept_shape}, [&](int64_t i, const std::array<int64_t, 1>& o) { fn(o[0], i); });
}

template <typename T>
void reduce_typed(KernelContext& ctx, const Tensor& x, const ReducePlan& p, Op op, Tensor& y) {
  const int64_t out_n = y.size();
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> acc(static_cast<std::size_t>(out_n), op == Op::kMin ? 1 : 0);
    visit(p, x, [&](int64_t o, int64_t i) {
      if (op == Op::kMin) acc[o] = acc[o] && px[i];
      else acc[o] = acc[o] || px[i];
    });
    for (int64_t o = 0; o < out_n; ++o) py[o] = acc[o] != 0;
  } else if constexpr (is_float_v<T>) {
    using C = compute_t<T>;
    const bool fp64 = ctx.fp64();
    auto load = [&](int64_t i) -> double {
      if (fp64) return static_cast<double>(nn::to_compute<T, C>(px[i]));
      return static_cast<double>(static_cast<C>(nn::to_compute<T, C>(px[i])));
    };
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> acc(static_cast<std::size_t>(out_n));
    std::vector<double> mx;
    double init = 0;
    if (op == Op::kProd) init = 1;
    if (op == Op::kMax) init = -inf;
    if (op == Op::kMin) init = inf;
    std::fill(acc.begin(), acc.end(), init);
    if (op == Op::kLogSumExp) {
      mx.assign(static_cast<std::size_t>(out_n), -inf);
      visit(p, x, [&](int64_t o, int64_t i) {
        double v = load(i);
        if (v > mx[o] || std::isnan(v)) mx[o] = v;
      });
    }
    switch (op) {
      case Op::kSum:
      case Op::kMean:
      case Op::kLogSum:
        visit(p, x, [&](int64_t o, int64_t i) { acc[o] += load(i); });
        break;
      case Op::kProd:
        visit(p, x, [&](int64_t o, int64_t i) { acc[o] *= load(i); });
        break;
      case Op::kMax:
        visit(p, x, [&](int64_t o, int64_t i) {
          double v = load(i);
          if (v > acc[o] || std::isnan(v)) acc[o] = v;
        });
        break;
      case Op::kMin:
        visit(p, x, [&](int64_t o, int64_t i) {
          double v = load(i);
          if (v < acc[o] || std::isnan(v)) acc[o] = v;
        });
        break;
      case Op::kL1:
        visit(p, x, [&](int64_t o, int64_t i) { acc[o] += std::abs(load(i)); });
        break;
      case Op::kL2:
      case Op::kSumSquare:
        visit(p, x, [&](int64_t o, int64_t i) {
          double v = load(i);
          acc[o] += v * v;
        });
        break;
      case Op::kLogSumExp:
        visit(p, x, [&](int64_t o, int64_t i) {
          double m = std::isfinite(mx[o]) ? mx[o] : 0.0;
          acc[o] += std::exp(load(i) - m);
        });
        break;
    }
    for (int64_t o = 0; o < out_n; ++o) {
      double v = acc[o];
      switch (op) {
        case Op::kMean: v = v / static_cast<double>(p.count); break;
        case Op::kL2: v = std::sqrt(v); break;
        case Op::kLogSum: v = std::log(v); break;
        case Op::kLogSumExp: v = (std::isfinite(mx[o]) ? mx[o] : 0.0) + std::log(v); break;
        default: break;
      }
      py[o] = nn::from_compute<T>(static_cast<C>(v));
    }
  } else {
    // Integers: exact int64 (uint64 for unsigned 64-bit) accumulation, wrapping on overflow as
    // numpy's does (two's complement, computed in uint64: signed overflow is undefined in C++).
    using A = std::conditional_t<std::is_same_v<T, uint64_t>, uint64_t, int64_t>;
    auto wrap = [](uint64_t v) { return static_cast<A>(v); };
    auto bits = [](A v) { return static_cast<uint64_t>(v); };
    std::vector<A> acc(static_cast<std::size_t>(out_n));
    A init = 0;
    if (op == Op::kProd) init = 1;
    if (op == Op::kMax) init = static_cast<A>(std::numeric_limits<T>::lowest());
    if (op == Op::kMin) init = static_cast<A>(std::numeric_limits<T>::max());
    std::fill(acc.begin(), acc.end(), init);
    std::vector<double> dacc;
    if (op == Op::kLogSumExp) {
      dacc.assign(static_cast<std::size_t>(out_n), 0.0);
      visit(p, x, [&](int64_t o, int64_t i) { dacc[o] += std::exp(static_cast<double>(px[i])); });
    }
    visit(p, x, [&](int64_t o, int64_t i) {
      A v = static_cast<A>(px[i]);
      switch (op) {
        case Op::kSum: case Op::kMean: case Op::kLogSum: acc[o] = wrap(bits(acc[o]) + bits(v)); break;
        case Op::kProd: acc[o] = wrap(bits(acc[o]) * bits(v)); break;
        case Op::kMax: if (v > acc[o]) acc[o] = v; break;
        case Op::kMin: if (v < acc[o]) acc[o] = v; break;
        case Op::kL1: acc[o] = wrap(bits(acc[o]) + (v < 0 ? uint64_t{0} - bits(v) : bits(v))); break;
        case Op::kL2: case Op::kSumSquare: acc[o] = wrap(bits(acc[o]) + bits(v) * bits(v)); break;
        case Op::kLogSumExp: break;
      }
    });
    for (int64_t o = 0; o < out_n; ++o) {
      switch (op) {
        case Op::kMean: py[o] = p.count > 0 ? static_cast<T>(acc[o] / static_cast<A>(p.count)) : T(0); break;
        case Op::kL2: py[o] = static_cast<T>(std::sqrt(static_cast<double>(acc[o]))); break;
        case Op::kLogSum: py[o] = static_cast<T>(std::log(static_cast<double>(acc[o]))); break;
        case Op::kLogSumExp: py[o] = static_cast<T>(std::log(dacc[o])); break;
        default: py[o] = static_cast<T>(acc[o]); break;
      }
    }
  }
}

template <Op op, int since_axes_input>
void reduce(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ReducePlan p = plan_reduce(ctx, x, since_axes_input);
  if (p.identity) {
    ctx.set_output(0, x);
    return;
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), p.out_shape);
  if constexpr (op == Op::kMax || op == Op::kMin) {
    dispatch<NumericAndBoolTypes>(x.dtype(), ctx, [&]<typename T>() { reduce_typed<T>(ctx, x, p, op, y); });
  } else {
    dispatch<NumericTypes>(x.dtype(), ctx, [&]<typename T>() { reduce_typed<T>(ctx, x, p, op, y); });
  }
}

}  // namespace

PARITY_KERNEL("", "ReduceSum", 1, (reduce<Op::kSum, 13>));
PARITY_KERNEL("", "ReduceMean", 1, (reduce<Op::kMean, 18>));
PARITY_KERNEL("", "ReduceMax", 1, (reduce<Op::kMax, 18>));
PARITY_KERNEL("", "ReduceMin", 1, (reduce<Op::kMin, 18>));
PARITY_KERNEL("", "ReduceProd", 1, (reduce<Op::kProd, 18>));
PARITY_KERNEL("", "ReduceL1", 1, (reduce<Op::kL1, 18>));
PARITY_KERNEL("", "ReduceL2", 1, (reduce<Op::kL2, 18>));
PARITY_KERNEL("", "ReduceLogSum", 1, (reduce<Op::kLogSum, 18>));
PARITY_KERNEL("", "ReduceLogSumExp", 1, (reduce<Op::kLogSumExp, 18>));
PARITY_KERNEL("", "ReduceSumSquare", 1, (reduce<Op::kSumSquare, 18>));

}  // namespace parity::ops
