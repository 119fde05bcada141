// Helpers shared by the misc-family kernels (sequences, optionals, strings, signal, ml, ...).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "parity/core/tensor.h"
#include "parity/ops/kernel.h"

namespace parity::ops::misc {

// A zeroed tensor that is not (yet) an output, checked against the element limit.
inline Tensor new_tensor(const KernelContext& ctx, DType dtype, Shape shape) {
  try {
    return Tensor::zeros(dtype, std::move(shape), ctx.limits().max_elements);
  } catch (Error& e) {
    e.add_context(ctx.label());
    throw;
  }
}

// Copies n elements src[src_off..] -> dst[dst_off..] (strings by value; packed types refused).
inline void copy_elements(const KernelContext& ctx, DType dtype, const void* src, int64_t src_off, void* dst,
                          int64_t dst_off, int64_t n) {
  if (n <= 0) return;
  if (dtype == DType::kString) {
    const auto* s = static_cast<const std::string*>(src) + src_off;
    auto* d = static_cast<std::string*>(dst) + dst_off;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    return;
  }
  if (is_packed(dtype)) ctx.unsupported("element type {} is not supported here", dtype_name(dtype));
  const std::size_t es = storage_bytes(dtype, 1);
  std::memcpy(static_cast<std::byte*>(dst) + dst_off * es, static_cast<const std::byte*>(src) + src_off * es,
              n * es);
}

// A deep copy of a tensor (so a sequence element never aliases an input's buffer).
inline Tensor clone(const KernelContext& ctx, const Tensor& t) {
  if (t.dtype() == DType::kString || !is_packed(t.dtype())) {
    Tensor out = new_tensor(ctx, t.dtype(), t.shape());
    copy_elements(ctx, t.dtype(), t.raw(), 0, out.mutable_raw(), 0, t.size());
    return out;
  }
  return Tensor::copy_of(t.view());
}

// Product of dims [begin, end).
inline int64_t dims_product(const Shape& s, std::size_t begin, std::size_t end) {
  int64_t p = 1;
  for (std::size_t i = begin; i < end && i < s.size(); ++i) p *= s[i];
  return p;
}

}  // namespace parity::ops::misc
