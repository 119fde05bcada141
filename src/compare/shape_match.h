// Polygraphy's util.try_match_shape for --no-shape-check (private to compare).
#pragma once

#include "parity/core/tensor.h"

namespace parity::compare::detail {

// The array, reshaped or transposed towards `shape` where possible: a reshape when the ranks
// differ (and the volume allows it), a transpose when the dims are a permutation of `shape`, then a
// final reshape; failed reshapes only warn. Logs Polygraphy's messages. The result may keep the
// original shape when nothing applies.
Tensor try_match_shape(const Tensor& array, const Shape& shape);

// `array` transposed by `permutation` (numpy.transpose), as a new contiguous tensor.
Tensor transpose(const Tensor& array, const std::vector<int64_t>& permutation);

}  // namespace parity::compare::detail
