// Tensor (owns its bytes, shared and reference-counted) and TensorView (borrows them).
// Data are dense, C-order. String tensors hold std::string objects; packed types (int4...) hold
// storage_bytes(dtype, n) bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "parity/core/dtype.h"
#include "parity/core/error.h"
#include "parity/core/shape.h"

namespace parity {

// A block of bytes a Tensor points into: heap memory, a memory-mapped file region, or another
// owner's buffer kept alive by `keep_alive`.
class Storage {
 public:
  virtual ~Storage() = default;
  virtual std::byte* data() = 0;
  virtual std::size_t size() const = 0;
};

class TensorView {
 public:
  TensorView() = default;
  TensorView(DType dtype, Shape shape, const void* data)
      : dtype_(dtype), shape_(std::move(shape)), data_(data) {}

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size() const;            // element count
  std::size_t byte_size() const;   // storage_bytes(dtype, size())
  const void* raw() const { return data_; }

  template <typename T>
  const T* data() const { return static_cast<const T*>(data_); }
  template <typename T>
  std::span<const T> span() const { return {data<T>(), static_cast<std::size_t>(size())}; }

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  const void* data_ = nullptr;
};

class Tensor {
 public:
  Tensor() = default;

  // Zero-initialized (strings empty). Checks the element count against `limit` first.
  static Tensor zeros(DType dtype, Shape shape, int64_t element_limit = INT64_MAX);
  // Bytes left as allocated, for a caller that writes every byte before reading (not for strings,
  // whose objects must be constructed).
  static Tensor uninitialized(DType dtype, Shape shape);
  // Copies `bytes` (must equal storage_bytes(dtype, count); not for strings).
  static Tensor from_bytes(DType dtype, Shape shape, const void* bytes, std::size_t size);
  // Points into `storage` at `offset` without copying.
  static Tensor borrow(DType dtype, Shape shape, std::shared_ptr<Storage> storage,
                       std::size_t offset = 0);
  // A deep copy of a view.
  static Tensor copy_of(const TensorView& view);

  bool empty_handle() const { return storage_ == nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size() const { return count_; }
  std::size_t byte_size() const { return storage_bytes(dtype_, count_); }

  const void* raw() const { return data_; }
  void* mutable_raw() { return data_; }
  template <typename T>
  const T* data() const { return static_cast<const T*>(data_); }
  template <typename T>
  T* mutable_data() { return static_cast<T*>(data_); }
  template <typename T>
  std::span<const T> span() const { return {data<T>(), static_cast<std::size_t>(count_)}; }
  template <typename T>
  std::span<T> mutable_span() { return {mutable_data<T>(), static_cast<std::size_t>(count_)}; }

  TensorView view() const { return TensorView(dtype_, shape_, data_); }
  operator TensorView() const { return view(); }

  // Same bytes, new shape with the same element count.
  Tensor reshaped(Shape shape) const;

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  int64_t count_ = 0;
  std::shared_ptr<Storage> storage_;
  void* data_ = nullptr;
};

// Elementwise bitwise equality of dtype, shape and content (strings compared by value).
bool identical(const TensorView& a, const TensorView& b);

}  // namespace parity
