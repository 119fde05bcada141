// A contiguous range of a main graph's nodes (in the graph's order) as a model of its own: what
// `inspect capability` saves and the hybrid runner runs, one backend per range.
#pragma once

#include <string>

#include "parity/onnx/model.h"

namespace parity::onnx {

// The nodes [begin, end) of model's main graph as a model. Its inputs are the tensors those nodes
// read (subgraph reads of outer values included) that no node of the range produces: initializers
// are copied, Constant nodes outside the range producing them are copied in front, the rest become
// graph inputs. Its outputs are the tensors the range produces that are graph outputs, that a node
// after or before the range reads, or that nothing reads. Opsets, functions and metadata are kept.
// The types of tensors crossing the boundary must be known (run infer_shapes first): otherwise
// InvalidInputError naming the tensor. Throws InvalidInputError for an empty or out-of-bounds
// range.
Model extract_node_range(const Model& model, int begin, int end);

// "nodes 3-7" (inclusive), or "node 3", for messages.
std::string describe_node_range(int begin, int end);

}  // namespace parity::onnx
