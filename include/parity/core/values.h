// Reading elements of any numeric tensor as double, for summaries and statistics.
#pragma once

#include <cstdint>
#include <string>

#include "parity/core/tensor.h"

namespace parity {

// Element i as double: floats (incl. float16/bfloat16) and integers exactly where representable,
// bool as 0/1. NaN for types with no plain numeric value (string, complex, float8, packed types).
double element_as_double(const TensorView& tensor, int64_t index);
bool has_numeric_values(DType dtype);

// Python-like rendering of a small tensor's values: "[1, 2, 3]", "[[0.5, 1.0], [2.0, 3.0]]".
std::string format_values(const TensorView& tensor, int64_t max_elements = 64);

}  // namespace parity
