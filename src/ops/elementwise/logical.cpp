// Comparisons (Equal, Greater, GreaterOrEqual, Less, LessOrEqual), logical And / Or / Xor,
// BitwiseAnd / Or / Xor and BitShift, with numpy broadcasting.
#include <string>

#include "elementwise/elementwise_util.h"

namespace parity::ops {
namespace {

using namespace elementwise;

void check_same_dtype(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    ctx.fail("inputs have different element types: {} and {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
}

// out(bool) = cmp(a, b); half types compared as float.
template <typename List, typename Cmp>
void compare(KernelContext& ctx, Cmp&& cmp) {
  const Tensor& a = ctx.input(0);
  Tensor b = legacy_broadcast_rhs(ctx, a, ctx.input(1));
  check_same_dtype(ctx, a, b);
  dispatch<List>(a.dtype(), ctx, [&]<typename T>() {
    if constexpr (is_half_v<T>) {
      binary_elementwise<T, T, bool>(ctx, 0, a, b, [&](T x, T y) { return cmp(load<float>(x), load<float>(y)); });
    } else {
      binary_elementwise<T, T, bool>(ctx, 0, a, b, [&](const T& x, const T& y) { return cmp(x, y); });
    }
  });
}

void equal_kernel(KernelContext& ctx) {
  compare<AllTypes>(ctx, [](const auto& x, const auto& y) { return x == y; });
}
void greater_kernel(KernelContext& ctx) {
  compare<NumericTypes>(ctx, [](auto x, auto y) { return x > y; });
}
void greater_equal_kernel(KernelContext& ctx) {
  compare<NumericTypes>(ctx, [](auto x, auto y) { return x >= y; });
}
void less_kernel(KernelContext& ctx) {
  compare<NumericTypes>(ctx, [](auto x, auto y) { return x < y; });
}
void less_equal_kernel(KernelContext& ctx) {
  compare<NumericTypes>(ctx, [](auto x, auto y) { return x <= y; });
}

template <typename Op>
void logical(KernelContext& ctx, Op&& op) {
  const Tensor& a = ctx.input(0);
  Tensor b = legacy_broadcast_rhs(ctx, a, ctx.input(1));
  if (a.dtype() != DType::kBool || b.dtype() != DType::kBool)
    ctx.fail("expected bool inputs, found {} and {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
  binary_elementwise<bool, bool, bool>(ctx, 0, a, b, [&](bool x, bool y) { return op(x, y); });
}

void and_kernel(KernelContext& ctx) { logical(ctx, [](bool x, bool y) { return x && y; }); }
void or_kernel(KernelContext& ctx) { logical(ctx, [](bool x, bool y) { return x || y; }); }
void xor_kernel(KernelContext& ctx) { logical(ctx, [](bool x, bool y) { return x != y; }); }

template <typename Op>
void bitwise(KernelContext& ctx, Op&& op) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  check_same_dtype(ctx, a, b);
  dispatch<IntTypes>(a.dtype(), ctx, [&]<typename T>() {
    binary_elementwise<T, T, T>(ctx, 0, a, b, [&](T x, T y) { return static_cast<T>(op(x, y)); });
  });
}

void bitwise_and_kernel(KernelContext& ctx) { bitwise(ctx, [](auto x, auto y) { return x & y; }); }
void bitwise_or_kernel(KernelContext& ctx) { bitwise(ctx, [](auto x, auto y) { return x | y; }); }
void bitwise_xor_kernel(KernelContext& ctx) { bitwise(ctx, [](auto x, auto y) { return x ^ y; }); }

// Shifts by y bits; y < 0 or y >= the width leaves only the sign fill: -1 for a right shift of
// a negative signed x, 0 otherwise. Right shifts of signed values are arithmetic.
void bitshift_kernel(KernelContext& ctx) {
  const std::string direction = ctx.attr_string("direction");
  bool left;
  if (direction == "LEFT") left = true;
  else if (direction == "RIGHT") left = false;
  else ctx.fail("direction is '{}', expected 'LEFT' or 'RIGHT'", direction);
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  check_same_dtype(ctx, a, b);
  dispatch<IntTypes>(a.dtype(), ctx, [&]<typename T>() {
    constexpr int kBits = static_cast<int>(sizeof(T) * 8);
    using U = unsigned_t<T>;
    binary_elementwise<T, T, T>(ctx, 0, a, b, [left](T x, T y) -> T {
      bool out_of_range = y >= static_cast<T>(kBits);
      if constexpr (std::is_signed_v<T>) out_of_range = out_of_range || y < 0;
      if (out_of_range) {
        if constexpr (std::is_signed_v<T>) return (!left && x < 0) ? T(-1) : T(0);
        return T(0);
      }
      int shift = static_cast<int>(y);
      if (left) return static_cast<T>(static_cast<U>(static_cast<U>(x) << shift));
      if constexpr (std::is_signed_v<T>) return static_cast<T>(static_cast<int64_t>(x) >> shift);
      return static_cast<T>(static_cast<U>(x) >> shift);
    });
  });
}

}  // namespace

PARITY_KERNEL("", "Equal", 1, equal_kernel);
PARITY_KERNEL("", "Greater", 1, greater_kernel);
PARITY_KERNEL("", "GreaterOrEqual", 12, greater_equal_kernel);
PARITY_KERNEL("", "Less", 1, less_kernel);
PARITY_KERNEL("", "LessOrEqual", 12, less_equal_kernel);
PARITY_KERNEL("", "And", 1, and_kernel);
PARITY_KERNEL("", "Or", 1, or_kernel);
PARITY_KERNEL("", "Xor", 1, xor_kernel);
PARITY_KERNEL("", "BitwiseAnd", 18, bitwise_and_kernel);
PARITY_KERNEL("", "BitwiseOr", 18, bitwise_or_kernel);
PARITY_KERNEL("", "BitwiseXor", 18, bitwise_xor_kernel);
PARITY_KERNEL("", "BitShift", 11, bitshift_kernel);

}  // namespace parity::ops
