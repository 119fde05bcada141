// 2:4 structured sparsity of an ONNX model's weights, as Polygraphy's SparsityPruner sees it
// (`inspect sparsity`, `surgeon prune`, and the SPARSE_2_4 marks of `surgeon weight-strip`):
// the weights are the main graph's initializers read by MatMul (A along axis 1, B along axis 0),
// Gemm (along the reduction axis, transA/transB considered) and Conv (W along axis 1), looking back
// through Cast, QuantizeLinear and DequantizeLinear (same axis) and Transpose (the axis through
// `perm`). A float32/float16/bfloat16 weight whose axis is a multiple of 4 long is eligible; it
// follows 2:4 sparsity when each run of 4 consecutive values along that axis holds at least two
// zeros. Pruning zeroes the two smallest magnitudes of each run (the first of equal ones).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "parity/core/tensor.h"
#include "parity/onnx/model.h"

namespace parity::onnx {

// An initializer eligible for 2:4 sparsity and the axis its runs of 4 lie along.
struct SparsityCandidate {
  std::string name;
  int64_t axis = 0;
};

// Eligible initializers of the main graph, in the order the nodes first read them (the last
// reader's axis stands when several read one). `skip`: names left out (with a warning). Logs as
// Polygraphy does ("Found: N weight tensor(s) eligible for pruning.", warnings for unsupported
// producers and types).
std::vector<SparsityCandidate> find_sparsity_candidates(const ::onnx::GraphProto& graph,
                                                        const std::set<std::string>& skip = {});

// Whether every run of 4 along `axis` holds at least two zeros (float32, float16 or bfloat16;
// the length of `axis` a multiple of 4). Polygraphy's rule exactly: the two smallest magnitudes,
// found as Python's min() finds them, must both be zero.
bool follows_2_4_sparsity(const TensorView& values, int64_t axis);

// Zeroes the two smallest magnitudes of every run of 4 along `axis`, in place.
void prune_2_4(Tensor& values, int64_t axis);

// Checks every candidate of the model, logging "Found sparse tensor: X" or "[W] Found non-sparse
// tensor: X" for each; returns the names of the sparse ones.
std::set<std::string> check_sparsity(const Model& model);

// Prunes every candidate not in `skip` (their data become raw_data); returns how many were pruned.
// A model with pruned weights gets producer_name "parity surgeon prune".
int64_t prune_sparsity(Model& model, const std::set<std::string>& skip = {});

}  // namespace parity::onnx
