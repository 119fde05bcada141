// Shared helpers of the tensor-family kernels (data movement, indexing, resampling).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "parity/ops/broadcast.h"
#include "parity/ops/dispatch.h"
#include "parity/ops/kernel.h"

namespace parity::ops::tensor {

// A 16-byte element (complex128) moved as opaque bytes.
struct Bytes16 {
  uint64_t lo, hi;
};

// Data-movement dispatch: calls fn<T>() with T an opaque unsigned type of the element's size
// (uint8_t, uint16_t, uint32_t, uint64_t, Bytes16), or std::string for string tensors. Every
// fixed-size element type is covered; packed sub-byte types are refused.
template <typename Fn>
decltype(auto) dispatch_bytes(DType dtype, const KernelContext& ctx, Fn&& fn) {
  if (dtype == DType::kString) return fn.template operator()<std::string>();
  if (dtype == DType::kUndefined || is_packed(dtype))
    ctx.unsupported("element type {} is not supported here", dtype_name(dtype));
  switch (storage_bytes(dtype, 1)) {
    case 1: return fn.template operator()<uint8_t>();
    case 2: return fn.template operator()<uint16_t>();
    case 4: return fn.template operator()<uint32_t>();
    case 8: return fn.template operator()<uint64_t>();
    case 16: return fn.template operator()<Bytes16>();
    default: break;
  }
  ctx.unsupported("element type {} is not supported here", dtype_name(dtype));
}

// Row-major element strides of a shape.
inline std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

inline int64_t product(const Shape& shape, std::size_t begin, std::size_t end) {
  int64_t p = 1;
  for (std::size_t i = begin; i < end && i < shape.size(); ++i) p *= shape[i];
  return p;
}

// For every index (i_0..i_{r-1}) of `shape`:
//   dst[dst_offset + sum_k i_k * dst_strides[k]] = src[sum_k maps[k][i_k]]
// maps[k] holds source element offsets (already multiplied by the source stride) per output
// coordinate along axis k. Contiguous runs on the last axis are copied with memcpy.
template <typename T>
void map_copy(T* dst, int64_t dst_offset, std::span<const int64_t> dst_strides, const Shape& shape,
              const T* src, const std::vector<std::vector<int64_t>>& maps) {
  const std::size_t rank = shape.size();
  for (int64_t d : shape)
    if (d == 0) return;
  if (rank == 0) {
    dst[dst_offset] = src[0];
    return;
  }
  const int64_t n = shape[rank - 1];
  const std::vector<int64_t>& last = maps[rank - 1];
  const int64_t dstride = dst_strides[rank - 1];
  bool contiguous = dstride == 1;
  for (int64_t j = 1; contiguous && j < n; ++j) contiguous = last[j] == last[0] + j;
  std::vector<int64_t> counter(rank, 0);
  int64_t src_base = 0, dst_base = dst_offset;
  for (std::size_t k = 0; k + 1 < rank; ++k) src_base += maps[k][0];
  while (true) {
    T* d = dst + dst_base;
    if constexpr (std::is_trivially_copyable_v<T>) {
      if (contiguous) {
        std::memcpy(d, src + src_base + last[0], static_cast<std::size_t>(n) * sizeof(T));
      } else {
        for (int64_t j = 0; j < n; ++j) d[j * dstride] = src[src_base + last[j]];
      }
    } else {
      for (int64_t j = 0; j < n; ++j) d[j * dstride] = src[src_base + last[j]];
    }
    // odometer over the outer axes
    std::size_t axis = rank - 1;
    while (true) {
      if (axis == 0) return;
      --axis;
      const auto& m = maps[axis];
      src_base -= m[counter[axis]];
      dst_base -= counter[axis] * dst_strides[axis];
      if (++counter[axis] < shape[axis]) {
        src_base += m[counter[axis]];
        dst_base += counter[axis] * dst_strides[axis];
        break;
      }
      counter[axis] = 0;
      src_base += m[0];
    }
  }
}

// Convenience: dense destination with shape `shape`.
template <typename T>
void map_copy(T* dst, const Shape& shape, const T* src, const std::vector<std::vector<int64_t>>& maps) {
  std::vector<int64_t> ds = strides_of(shape);
  map_copy<T>(dst, 0, ds, shape, src, maps);
}

// Source maps of a strided view: maps[k][j] = offset contribution j*strides[k] (+ base on axis 0).
inline std::vector<std::vector<int64_t>> strided_maps(const Shape& shape, std::span<const int64_t> strides,
                                                      int64_t base = 0) {
  std::vector<std::vector<int64_t>> maps(shape.size());
  for (std::size_t k = 0; k < shape.size(); ++k) {
    maps[k].resize(static_cast<std::size_t>(shape[k]));
    for (int64_t j = 0; j < shape[k]; ++j) maps[k][j] = j * strides[k] + (k == 0 ? base : 0);
  }
  return maps;
}

// Copies the input tensor into output `index` with the given output shape and source maps,
// for any element type.
inline Tensor& gather_copy(KernelContext& ctx, std::size_t index, const Tensor& input, const Shape& out_shape,
                           const std::vector<std::vector<int64_t>>& maps) {
  Tensor& out = ctx.allocate_output(index, input.dtype(), out_shape);
  if (out.size() == 0) return out;
  dispatch_bytes(input.dtype(), ctx, [&]<typename T>() {
    map_copy<T>(out.mutable_data<T>(), out_shape, input.data<T>(), maps);
  });
  return out;
}

// Checks the element count of `shape` against the limit; when it is zero, allocates the (empty)
// output and returns true, so that callers never build per-axis maps for huge empty dims.
inline bool allocate_if_empty(KernelContext& ctx, std::size_t index, DType dtype, const Shape& shape) {
  if (checked_element_count(shape, ctx.limits().max_elements) != 0) return false;
  ctx.allocate_output(index, dtype, shape);
  return true;
}

// Reads a scalar (or 1-element) tensor of any numeric type as double.
inline double scalar_as_double(const Tensor& t, const KernelContext& ctx, const char* what) {
  if (t.size() != 1) ctx.fail("{} must hold exactly one element, found shape {}", what, shape_to_string(t.shape()));
  return dispatch<NumericAndBoolTypes>(t.dtype(), ctx, [&]<typename T>() -> double {
    return convert<double>(t.data<T>()[0]);
  });
}

// Reads a scalar integer tensor (int32/int64) as int64.
inline int64_t scalar_as_int(const Tensor& t, const KernelContext& ctx, const char* what) {
  if (t.size() != 1) ctx.fail("{} must hold exactly one element, found shape {}", what, shape_to_string(t.shape()));
  return read_int_list(t, ctx)[0];
}

// Reads an index tensor (int32 or int64) element as int64.
struct IndexReader {
  const void* data = nullptr;
  bool is64 = true;
  IndexReader(const Tensor& t, const KernelContext& ctx) : data(t.raw()) {
    if (t.dtype() == DType::kInt64) is64 = true;
    else if (t.dtype() == DType::kInt32) is64 = false;
    else ctx.fail("indices must be int32 or int64, found {}", dtype_name(t.dtype()));
  }
  int64_t operator[](int64_t i) const {
    return is64 ? static_cast<const int64_t*>(data)[i] : static_cast<const int32_t*>(data)[i];
  }
};

// An int64 1-D tensor output.
inline void set_int64_output(KernelContext& ctx, std::size_t index, const std::vector<int64_t>& values, Shape shape) {
  Tensor& out = ctx.allocate_output(index, DType::kInt64, std::move(shape));
  if (!values.empty()) std::memcpy(out.mutable_raw(), values.data(), values.size() * sizeof(int64_t));
}

// Total order "less" used by sorting kernels; NaN sorts as the largest value.
template <typename C>
inline bool value_less(const C& a, const C& b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// Integer add / multiply that wrap around (two's complement) instead of overflowing; plain
// arithmetic for floating types.
template <typename C>
inline C wrap_add(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename C>
inline C wrap_mul(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    using U = std::make_unsigned_t<C>;
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;  // avoid int promotion
    return static_cast<C>(static_cast<U>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b))));
  } else {
    return a * b;
  }
}

// Reads the (possibly half) element as its compute type.
template <typename T>
inline compute_t<T> load(const T* p, int64_t i) {
  if constexpr (is_half_v<T>) return static_cast<float>(p[i]);
  else return p[i];
}

}  // namespace parity::ops::tensor
