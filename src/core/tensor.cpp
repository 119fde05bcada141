#include "parity/core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "parity/core/allocation_limit.h"
#include "parity/core/error.h"

namespace parity {
namespace {

constexpr std::size_t kAlignment = 64;

class HeapStorage final : public Storage {
 public:
  // `zeroed`: the bytes start at zero; otherwise they are left as the allocator gives them (for
  // callers that overwrite every byte).
  HeapStorage(std::size_t size, bool zeroed) : size_(size) {
    std::size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
    data_ = static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded));
    if (!data_) raise<ResourceLimitError>("out of memory allocating {} bytes", size);
    if (zeroed) std::memset(data_, 0, size);
  }
  ~HeapStorage() override { std::free(data_); }
  std::byte* data() override { return data_; }
  std::size_t size() const override { return size_; }

 private:
  std::byte* data_;
  std::size_t size_;
};

class StringStorage final : public Storage {
 public:
  explicit StringStorage(std::size_t count) : strings_(count) {}
  std::byte* data() override { return reinterpret_cast<std::byte*>(strings_.data()); }
  std::size_t size() const override { return strings_.size() * sizeof(std::string); }

 private:
  std::vector<std::string> strings_;
};

}  // namespace

int64_t TensorView::size() const { return checked_element_count(shape_); }
std::size_t TensorView::byte_size() const { return storage_bytes(dtype_, size()); }

namespace {
// A numeric tensor over fresh heap memory, zeroed or left as allocated.
Tensor on_heap(DType dtype, Shape shape, int64_t element_limit, bool zeroed) {
  if (dtype == DType::kUndefined) raise<InvalidInputError>("cannot allocate a tensor of undefined type");
  int64_t count = checked_element_count(shape, element_limit);
  const std::size_t bytes = storage_bytes(dtype, count);
  if (bytes > allocation_limit())
    check_allocation(bytes, fmt::format("a {} tensor of shape {}", dtype_name(dtype), shape_to_string(shape)));
  auto storage = std::make_shared<HeapStorage>(bytes, zeroed);
  return Tensor::borrow(dtype, std::move(shape), std::move(storage));
}
}  // namespace

Tensor Tensor::zeros(DType dtype, Shape shape, int64_t element_limit) {
  if (dtype != DType::kString) return on_heap(dtype, std::move(shape), element_limit, /*zeroed=*/true);
  Tensor t;
  t.count_ = checked_element_count(shape, element_limit);
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.storage_ = std::make_shared<StringStorage>(static_cast<std::size_t>(t.count_));
  t.data_ = t.storage_->data();
  return t;
}

Tensor Tensor::uninitialized(DType dtype, Shape shape) {
  if (dtype == DType::kString) raise<InternalError>("Tensor::uninitialized cannot build string tensors");
  return on_heap(dtype, std::move(shape), INT64_MAX, /*zeroed=*/false);
}

Tensor Tensor::from_bytes(DType dtype, Shape shape, const void* bytes, std::size_t size) {
  if (dtype == DType::kString) raise<InternalError>("Tensor::from_bytes cannot build string tensors");
  int64_t count = checked_element_count(shape);
  std::size_t want = storage_bytes(dtype, count);
  if (size != want)
    raise<InvalidInputError>("{} bytes given for a {} tensor of shape {}, which needs {}", size,
                             dtype_name(dtype), shape_to_string(shape), want);
  Tensor t = uninitialized(dtype, std::move(shape));
  if (size) std::memcpy(t.data_, bytes, size);
  return t;
}

Tensor Tensor::borrow(DType dtype, Shape shape, std::shared_ptr<Storage> storage, std::size_t offset) {
  Tensor t;
  t.count_ = checked_element_count(shape);
  std::size_t need = storage_bytes(dtype, t.count_);
  if (!storage || offset > storage->size() || storage->size() - offset < need)
    raise<InvalidInputError>("tensor of shape {} ({} bytes) does not fit in its {}-byte buffer at offset {}",
                             shape_to_string(shape), need, storage ? storage->size() : 0, offset);
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.storage_ = std::move(storage);
  t.data_ = t.storage_->data() + offset;
  return t;
}

Tensor Tensor::copy_of(const TensorView& view) {
  // Numeric bytes are all overwritten below, so they need no zeroing first.
  Tensor t = view.dtype() == DType::kString ? zeros(view.dtype(), view.shape())
                                            : uninitialized(view.dtype(), view.shape());
  if (view.dtype() == DType::kString) {
    auto* dst = t.mutable_data<std::string>();
    const auto* src = view.data<std::string>();
    for (int64_t i = 0; i < t.count_; ++i) dst[i] = src[i];
  } else if (t.byte_size()) {
    std::memcpy(t.data_, view.raw(), t.byte_size());
  }
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  int64_t count = checked_element_count(shape);
  if (count != count_)
    raise<InvalidInputError>("cannot reshape {} ({} elements) to {} ({} elements)", shape_to_string(shape_),
                             count_, shape_to_string(shape), count);
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

bool identical(const TensorView& a, const TensorView& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == DType::kString) {
    auto x = a.span<std::string>();
    auto y = b.span<std::string>();
    return std::equal(x.begin(), x.end(), y.begin());
  }
  std::size_t n = a.byte_size();
  return n == 0 || std::memcmp(a.raw(), b.raw(), n) == 0;
}

}  // namespace parity
