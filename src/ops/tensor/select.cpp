// Compress, NonZero, Unique.
#include <algorithm>
#include <numeric>

#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

template <typename T>
bool is_nonzero(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) return !v.empty();
  else if constexpr (is_half_v<T>) return static_cast<float>(v) != 0.0f;
  else return v != T(0);
}

std::vector<bool> read_condition(const KernelContext& ctx, const Tensor& c) {
  if (c.rank() != 1) ctx.fail("condition must be 1-D, found shape {}", shape_to_string(c.shape()));
  std::vector<bool> out(static_cast<std::size_t>(c.size()));
  dispatch<NumericAndBoolTypes>(c.dtype(), ctx, [&]<typename T>() {
    const T* p = c.data<T>();
    for (int64_t i = 0; i < c.size(); ++i) out[i] = is_nonzero(p[i]);
  });
  return out;
}

void compress(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<bool> cond = read_condition(ctx, ctx.input(1));
  const bool flat = !ctx.has_attribute("axis");
  Shape shape = flat ? Shape{x.size()} : x.shape();
  const int64_t axis = flat ? 0 : normalize_axis(ctx.attr_int("axis"), x.rank(), ctx);
  if (!flat && x.rank() == 0) ctx.fail("axis given for a scalar input");
  const int64_t dim = shape[axis];
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < static_cast<int64_t>(cond.size()); ++i) {
    if (!cond[i]) continue;
    if (i >= dim)
      ctx.fail("condition has {} entries, longer than the dimension {} with a true past the end", cond.size(), dim);
    keep.push_back(i);
  }
  Shape out_shape = shape;
  out_shape[axis] = static_cast<int64_t>(keep.size());
  if (allocate_if_empty(ctx, 0, x.dtype(), out_shape)) return;
  std::vector<int64_t> strides = strides_of(shape);
  std::vector<std::vector<int64_t>> maps = strided_maps(out_shape, strides);
  for (std::size_t j = 0; j < keep.size(); ++j) maps[axis][j] = keep[j] * strides[axis];
  Tensor flat_x = x.reshaped(shape);
  gather_copy(ctx, 0, flat_x, out_shape, maps);
}

void non_zero(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape shape = x.rank() == 0 ? Shape{1} : x.shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> hits;
  dispatch<AllTypes>(x.dtype(), ctx, [&]<typename T>() {
    const T* p = x.data<T>();
    for (int64_t i = 0; i < x.size(); ++i)
      if (is_nonzero(p[i])) hits.push_back(i);
  });
  const int64_t nnz = static_cast<int64_t>(hits.size());
  Tensor& out = ctx.allocate_output(0, DType::kInt64, {rank, nnz});
  int64_t* o = out.mutable_data<int64_t>();
  std::vector<int64_t> strides = strides_of(shape);
  for (int64_t j = 0; j < nnz; ++j) {
    int64_t rest = hits[j];
    for (int64_t k = 0; k < rank; ++k) {
      o[k * nnz + j] = rest / strides[k];
      rest %= strides[k];
    }
  }
}

void unique(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool sorted = ctx.attr_int("sorted", 1) != 0;
  const bool has_axis = ctx.has_attribute("axis");
  Shape shape = has_axis ? x.shape() : Shape{x.size()};
  if (has_axis && x.rank() == 0) ctx.fail("axis given for a scalar input");
  const int64_t axis = has_axis ? normalize_axis(ctx.attr_int("axis"), x.rank(), ctx) : 0;
  const int64_t dim = shape[axis];
  const int64_t outer = product(shape, 0, static_cast<std::size_t>(axis));
  const int64_t inner = product(shape, static_cast<std::size_t>(axis) + 1, shape.size());

  std::vector<int64_t> order(static_cast<std::size_t>(dim));
  std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> group_of(static_cast<std::size_t>(dim));  // slice -> group (in sorted order)
  std::vector<int64_t> group_first;                              // group -> first slice index
  std::vector<int64_t> group_count;
  dispatch<AllTypes>(x.dtype(), ctx, [&]<typename T>() {
    const T* p = x.data<T>();
    using C = std::conditional_t<is_half_v<T>, float, T>;
    auto at = [&](int64_t s, int64_t o, int64_t i) -> C {
      if constexpr (is_half_v<T>) return static_cast<float>(p[(o * dim + s) * inner + i]);
      else return p[(o * dim + s) * inner + i];
    };
    // -1 / 0 / 1 lexicographic comparison of slices a and b (NaN sorts last, NaNs equal).
    auto compare = [&](int64_t a, int64_t b) {
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          C va = at(a, o, i), vb = at(b, o, i);
          if (value_less(va, vb)) return -1;
          if (value_less(vb, va)) return 1;
        }
      return 0;
    };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
    for (std::size_t k = 0; k < order.size(); ++k) {
      if (k == 0 || compare(order[k - 1], order[k]) != 0) {
        group_first.push_back(order[k]);
        group_count.push_back(0);
      }
      group_of[order[k]] = static_cast<int64_t>(group_first.size()) - 1;
      ++group_count.back();
    }
  });
  const int64_t groups = static_cast<int64_t>(group_first.size());
  // Output position of each group: sorted order, or order of first occurrence.
  std::vector<int64_t> position(static_cast<std::size_t>(groups));
  std::iota(position.begin(), position.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(static_cast<std::size_t>(groups));
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return group_first[a] < group_first[b]; });
    for (int64_t k = 0; k < groups; ++k) position[by_first[k]] = k;
  }
  std::vector<int64_t> first(static_cast<std::size_t>(groups)), counts(static_cast<std::size_t>(groups));
  for (int64_t g = 0; g < groups; ++g) {
    first[position[g]] = group_first[g];
    counts[position[g]] = group_count[g];
  }
  std::vector<int64_t> inverse(static_cast<std::size_t>(dim));
  for (int64_t s = 0; s < dim; ++s) inverse[s] = position[group_of[s]];

  Shape y_shape = shape;
  y_shape[axis] = groups;
  if (!allocate_if_empty(ctx, 0, x.dtype(), y_shape)) {
    std::vector<int64_t> strides = strides_of(shape);
    std::vector<std::vector<int64_t>> maps = strided_maps(y_shape, strides);
    for (int64_t g = 0; g < groups; ++g) maps[axis][g] = first[g] * strides[axis];
    gather_copy(ctx, 0, x.reshaped(shape), y_shape, maps);
  }
  if (ctx.output_requested(1)) set_int64_output(ctx, 1, first, {groups});
  if (ctx.output_requested(2)) set_int64_output(ctx, 2, inverse, {dim});
  if (ctx.output_requested(3)) set_int64_output(ctx, 3, counts, {groups});
}

}  // namespace

PARITY_KERNEL("", "Compress", 9, compress);
PARITY_KERNEL("", "NonZero", 9, non_zero);
PARITY_KERNEL("", "Unique", 11, unique);

}  // namespace parity::ops::tensor
