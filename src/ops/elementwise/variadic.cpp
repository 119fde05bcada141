// Variadic elementwise ops with numpy broadcasting across all inputs: Sum, Mean, Max, Min.
// Sum / Mean accumulate in the compute type (float for half types, double in fp64 mode) and round
// once; Max / Min propagate NaN like numpy's maximum / minimum.
#include <cmath>
#include <vector>

#include "elementwise/elementwise_util.h"

namespace parity::ops {
namespace {

using namespace elementwise;

// Folds every input into acc (indexed by output element): acc = init(x0), acc = step(acc, xk),
// then writes finish(acc) to output 0 as T.
template <typename T, typename A, typename Init, typename Step, typename Finish>
void fold_inputs(KernelContext& ctx, Init&& init, Step&& step, Finish&& finish) {
  const std::size_t count = ctx.num_inputs();
  std::vector<const Tensor*> inputs;
  std::vector<Shape> shapes;
  for (std::size_t k = 0; k < count; ++k) {
    if (!ctx.has_input(k)) continue;
    inputs.push_back(&ctx.input(k));
    shapes.push_back(inputs.back()->shape());
  }
  if (inputs.empty()) ctx.fail("expected at least one input");
  for (const Tensor* t : inputs)
    if (t->dtype() != inputs[0]->dtype())
      ctx.fail("inputs have different element types: {} and {}", dtype_name(inputs[0]->dtype()),
               dtype_name(t->dtype()));
  Shape out_shape = broadcast_shapes(shapes, &ctx);
  Tensor& out = ctx.allocate_output(0, dtype_of<T>(), out_shape);
  const int64_t n = out.size();
  std::vector<A> acc(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const T* x = inputs[k]->data<T>();
    if (shapes[k] == out_shape) {
      if (k == 0) for (int64_t i = 0; i < n; ++i) acc[i] = init(x[i]);
      else for (int64_t i = 0; i < n; ++i) acc[i] = step(acc[i], x[i]);
      continue;
    }
    for_each_broadcast<1>(out_shape, {shapes[k]}, [&](int64_t i, const std::array<int64_t, 1>& o) {
      acc[i] = k == 0 ? init(x[o[0]]) : step(acc[i], x[o[0]]);
    });
  }
  T* po = out.mutable_data<T>();
  for (int64_t i = 0; i < n; ++i) po[i] = finish(acc[i]);
}

void sum_or_mean(KernelContext& ctx, bool mean) {
  if (!ctx.has_input(0)) ctx.fail("expected at least one input");
  int64_t count = 0;
  for (std::size_t k = 0; k < ctx.num_inputs(); ++k) count += ctx.has_input(k) ? 1 : 0;
  dispatch_float(ctx.input(0).dtype(), ctx, [&]<typename T, typename C>() {
    const C divisor = mean ? static_cast<C>(count) : C(1);
    fold_inputs<T, C>(
        ctx, [](T x) { return load<C>(x); }, [](C a, T x) { return a + load<C>(x); },
        [&](C a) { return store<T>(mean ? a / divisor : a); });
  });
}

void sum_kernel(KernelContext& ctx) { sum_or_mean(ctx, false); }
void mean_kernel(KernelContext& ctx) { sum_or_mean(ctx, true); }

void max_or_min(KernelContext& ctx, bool max) {
  if (!ctx.has_input(0)) ctx.fail("expected at least one input");
  dispatch<NumericTypes>(ctx.input(0).dtype(), ctx, [&]<typename T>() {
    using C = compute_t<T>;
    if constexpr (is_float_v<T>) {
      fold_inputs<T, C>(
          ctx, [](T x) { return load<C>(x); },
          [max](C a, T t) {
            C x = load<C>(t);
            if (std::isnan(a)) return a;
            if (std::isnan(x)) return x;
            return (max ? x > a : x < a) ? x : a;
          },
          [](C a) { return store<T>(a); });
    } else {
      fold_inputs<T, T>(
          ctx, [](T x) { return x; }, [max](T a, T x) { return (max ? x > a : x < a) ? x : a; },
          [](T a) { return a; });
    }
  });
}

void max_kernel(KernelContext& ctx) { max_or_min(ctx, true); }
void min_kernel(KernelContext& ctx) { max_or_min(ctx, false); }

}  // namespace

PARITY_KERNEL("", "Sum", 1, sum_kernel);
PARITY_KERNEL("", "Mean", 1, mean_kernel);
PARITY_KERNEL("", "Max", 1, max_kernel);
PARITY_KERNEL("", "Min", 1, min_kernel);

}  // namespace parity::ops
