// Unbounded data-dependent shapes (DDS): tensors whose runtime values set the size of a Range,
// Pad, Resize, Tile or Expand output with no upper bound, found as Polygraphy finds them (its
// get_unbounded_dds_tensors, behind `inspect model --list-unbounded-dds`), and bounded as its
// SetUpperBound does (`surgeon sanitize --set-unbounded-dds-upper-bound`): a Min node between the
// tensor and its readers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

namespace parity::onnx {

// The main graph's tensors with unbounded DDS, in the order found. Nodes are visited in
// ONNX-GraphSurgeon's topological order (by depth, stable); a node is checked when one of its
// outputs has no declared shape (value_info, graph input or output) or introduces a dim name not
// seen before (the graph inputs' names count as seen); the tensor feeding its size input is
// reported when it is computed at runtime (not an initializer) by a node other than Min. The
// result is only as good as the shapes the graph declares: run shape inference first.
std::vector<std::string> find_unbounded_dds_tensors(const ::onnx::GraphProto& graph);

struct UpperBounds {
  // The bound of every unbounded DDS tensor not listed in per_tensor; none: only those listed.
  std::optional<int64_t> default_bound;
  // Bounds of named tensors, unbounded DDS or not (Polygraphy bounds a listed tensor either way).
  std::vector<std::pair<std::string, int64_t>> per_tensor;
};

struct UpperBoundReport {
  std::vector<std::pair<std::string, int64_t>> applied;  // tensor and its bound, in the order bounded
  std::vector<std::string> not_unbounded;                // per_tensor names find_unbounded_dds_tensors does not list
};

// Bounds the unbounded DDS tensors (and those named in `bounds.per_tensor`): the node producing
// tensor T writes T_copy instead, and a new node Min(T_copy, T_upper_bound) writes T, placed right
// after the producer so the graph stays topologically sorted. T_upper_bound is an initializer of
// T's element type (int64 when unknown): a scalar when T's shape is unknown or scalar, else a 1-D
// tensor of one element (what Polygraphy writes for the 1-D size inputs; for a tensor of higher
// rank Polygraphy writes rank(T) copies, which do not broadcast). Then removes what no output needs
// (cleanup, graph inputs kept). Names that are taken get a numeric suffix. Throws InvalidInputError
// naming the tensor when a listed tensor is not in the graph, when no node produces a tensor to
// bound (a graph input, an initializer), or when a bound does not fit T's element type.
UpperBoundReport set_unbounded_dds_upper_bounds(::onnx::GraphProto& graph, const UpperBounds& bounds);

}  // namespace parity::onnx
