// Order statistics of float32 values (private to statistics): the values at given ranks of an unsorted
// array, by radix selection on the values' ordered bit patterns (a histogram of 11 bits at a time
// over the candidates, narrowed to the buckets that hold a wanted rank), ending in nth_element once
// few candidates are left. One pass over the data serves every wanted rank, and a pass costs a
// table increment per value instead of nth_element's data-dependent branches.
#pragma once

#include <cstdint>
#include <vector>

namespace parity::statistics::detail {

// The values at ascending, distinct `ranks` (positions in ascending order) among values[0, count),
// which are finite (NaN has no rank); -0 reads as +0, so which of two equal zeros sits at a rank
// does not matter.
std::vector<float> select_float_ranks(const float* values, int64_t count, const std::vector<int64_t>& ranks);
// The same for values known to lie within [low, high] (a window's): no pass to find their range.
std::vector<float> select_float_ranks_within(const float* values, int64_t count, const std::vector<int64_t>& ranks,
                                             float low, float high);

}  // namespace parity::statistics::detail
