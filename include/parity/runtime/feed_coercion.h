// What Polygraphy's DataLoaderCache does with a fed buffer whose dtype is not the model input's
// (comparator/data_loader.py, coerce_cached_input): it warns and casts, as numpy's astype does
// (float64 -> float32 rounds to nearest, float -> int truncates toward zero, anything -> bool is
// "not zero"), with a second warning when some values are out of the target type's range.
#pragma once

#include "parity/core/dtype.h"
#include "parity/core/tensor.h"
#include "parity/core/tensor_metadata.h"
#include "parity/runtime/runner.h"

namespace parity::runtime {

// Whether cast_like_numpy converts between these two types: the real numeric types and bool
// (float16/32/64, bfloat16, [u]int8..64, bool). Strings, complex numbers and the sub-byte and
// 8-bit float formats are not cast: such a mismatch stays an error (validate_feed).
bool castable_like_numpy(DType from, DType to);

// A copy of `tensor` as `dtype`, element by element as numpy's astype(dtype) (bfloat16 as
// ml_dtypes: through float32). Requires castable_like_numpy(tensor.dtype(), dtype).
// `out_of_range` (optional) is set when a finite value lies outside the target's finite range, or a
// NaN/infinity goes to an integer type.
Tensor cast_like_numpy(const Tensor& tensor, DType dtype, bool* out_of_range = nullptr);

// For each feed entry named as a model input of another (known, castable) dtype: Polygraphy's
// warning "Input tensor: X | Buffer dtype (float64) does not match expected input dtype (float32),
// attempting to cast.", its out-of-range warning where it applies, and the cast. Entries of
// another name, or types that are not castable, are left for validate_feed to judge.
void coerce_feed_dtypes(const TensorMetadata& metadata, NamedTensors& feed);

}  // namespace parity::runtime
