// What a failing tensor of a layerwise comparison means, beyond Polygraphy's verdict: the verdict
// (and each tensor's log lines) stay Polygraphy's, and the layerwise summary (first divergence,
// worst tensors, report) ranks only the tensors a user can act on.
//
//   - Equal infinities: a -inf both runs produced (an attention mask) has a NaN error in
//     Polygraphy's arithmetic (inf - inf) and fails `simple` unless --infinities-compare-equal. The
//     summary's errors count such elements as no error (LayerwiseEntry::infinities_equal_errors),
//     and a tensor that fails only there is no divergence.
//   - Integer clamping: an int64 value beyond int32's range that one runner returns clamped to
//     int32 (OpenVINO computes shape arithmetic in int32: ONNX Runtime's INT64_MAX Slice end comes
//     back as INT32_MAX) is the backend's representation, not a numeric divergence.
#pragma once

#include "parity/compare/layerwise.h"
#include "parity/core/tensor.h"

namespace parity::compare {

// Sets entry.infinities_equal_errors and entry.not_a_divergence for a failing `simple` comparison
// of `out0` and `out1` (the tensors compared, after postprocessing); `infinities_compare_equal`:
// the comparison already counted equal infinities as equal. Other entries are left as they are.
void review_layer(LayerwiseEntry& entry, const TensorView& out0, const TensorView& out1,
                  bool infinities_compare_equal);

}  // namespace parity::compare
