#include "shape_match.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/core/shape.h"

namespace parity::compare::detail {
namespace {

int64_t volume(const Shape& shape) {
  int64_t v = 1;
  for (int64_t d : shape) v *= d;
  return v;
}

std::string list_text(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

Tensor try_reshape(const Tensor& array, const Shape& shape) {
  if (volume(array.shape()) != volume(shape)) {
    log::warning("Could not reshape array from shape: {} to {}. Skipping reshape.", shape_to_string(array.shape()),
                 shape_to_string(shape));
    return array;
  }
  if (array.shape() == shape) return array;
  log::info("Reshaped array from shape: {} to: {}", shape_to_string(array.shape()), shape_to_string(shape));
  return array.reshaped(shape);
}

Tensor try_permute(const Tensor& array, const Shape& shape) {
  Shape sorted_have = array.shape(), sorted_want = shape;
  std::sort(sorted_have.begin(), sorted_have.end());
  std::sort(sorted_want.begin(), sorted_want.end());
  if (sorted_have != sorted_want) {
    log::extra_verbose("Array of shape: {} cannot be permuted to: {}", shape_to_string(array.shape()),
                       shape_to_string(shape));
    return array;
  }
  // For each wanted dim, the first unused axis of that length.
  std::map<int64_t, int64_t> unused;  // axis -> length (ordered by axis)
  for (std::size_t i = 0; i < array.shape().size(); ++i) unused[static_cast<int64_t>(i)] = array.shape()[i];
  std::vector<int64_t> permutation;
  for (int64_t dim : shape) {
    for (auto it = unused.begin(); it != unused.end(); ++it) {
      if (it->second == dim) {
        permutation.push_back(it->first);
        unused.erase(it);
        break;
      }
    }
  }
  Tensor out = transpose(array, permutation);
  if (out.shape() != array.shape())
    log::info("Permuted array of shape: {} to: {} using permutation {}", shape_to_string(array.shape()),
              shape_to_string(out.shape()), list_text(permutation));
  return out;
}

}  // namespace

Tensor transpose(const Tensor& array, const std::vector<int64_t>& permutation) {
  const Shape& in_shape = array.shape();
  const std::size_t rank = in_shape.size();
  bool identity = true;
  for (std::size_t i = 0; i < permutation.size(); ++i) identity &= permutation[i] == static_cast<int64_t>(i);
  if (identity) return array;
  if (is_packed(array.dtype()) || array.dtype() == DType::kString)
    raise<UnsupportedError>("cannot transpose a {} tensor", dtype_name(array.dtype()));
  Shape out_shape(rank);
  for (std::size_t i = 0; i < rank; ++i) out_shape[i] = in_shape[static_cast<std::size_t>(permutation[i])];
  std::vector<int64_t> in_strides(rank, 1);
  for (std::size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * in_shape[i];
  const std::size_t element = static_cast<std::size_t>(dtype_bits(array.dtype()) / 8);
  Tensor out = Tensor::zeros(array.dtype(), out_shape);
  const auto* src = static_cast<const unsigned char*>(array.raw());
  auto* dst = static_cast<unsigned char*>(out.mutable_raw());
  std::vector<int64_t> index(rank, 0);
  const int64_t n = out.size();
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t offset = 0;
    for (std::size_t i = 0; i < rank; ++i) offset += index[i] * in_strides[static_cast<std::size_t>(permutation[i])];
    std::memcpy(dst + static_cast<std::size_t>(flat) * element, src + static_cast<std::size_t>(offset) * element,
                element);
    for (std::size_t i = rank; i-- > 0;) {
      if (++index[i] < out_shape[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

Tensor try_match_shape(const Tensor& array, const Shape& shape) {
  if (array.shape() == shape) return array;
  Tensor current = array;
  if (current.shape().size() != shape.size()) current = try_reshape(current, shape);
  if (current.shape().size() == shape.size()) current = try_permute(current, shape);
  return try_reshape(current, shape);
}

}  // namespace parity::compare::detail
