#include "parity/core/shape.h"

#include <fmt/format.h>

#include "parity/core/error.h"

namespace parity {

int64_t checked_element_count(std::span<const int64_t> dims, int64_t limit) {
  int64_t count = 1;
  bool zero = false;
  for (int64_t d : dims) {
    if (d < 0) raise<InvalidInputError>("negative dimension {} in shape {}", d, shape_to_string(dims));
    if (d == 0) zero = true;
  }
  if (zero) return 0;
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(count, d, &count))
      raise<ResourceLimitError>("shape {} has more elements than fit in 64 bits", shape_to_string(dims));
  }
  if (count > limit)
    raise<ResourceLimitError>("shape {} has {} elements, over the limit of {}", shape_to_string(dims),
                              count, limit);
  return count;
}

std::string shape_to_string(std::span<const int64_t> dims) {
  if (dims.size() == 1) return fmt::format("({},)", dims[0]);
  return fmt::format("({})", fmt::join(dims, ", "));
}

}  // namespace parity
