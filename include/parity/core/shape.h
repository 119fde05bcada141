// Concrete tensor shapes and checked element counts.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace parity {

using Shape = std::vector<int64_t>;

// Product of dims. Throws InvalidInputError for a negative dim and ResourceLimitError when the
// product overflows int64 or exceeds `limit` elements.
int64_t checked_element_count(std::span<const int64_t> dims,
                              int64_t limit = INT64_MAX);

// "(1, 3, 224, 224)"; a scalar is "()" and a 1-D shape "(5,)", as numpy prints them.
std::string shape_to_string(std::span<const int64_t> dims);

}  // namespace parity
