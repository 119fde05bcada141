// Changing which tensors a model's main graph returns (Polygraphy's ModifyOutputs, behind the
// --outputs/--exclude-outputs of surgeon sanitize and --onnx-outputs/--onnx-exclude-outputs of
// convert): mark a list of tensors, mark every tensor, unmark some.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace parity::onnx {

// The tensors "mark all" makes outputs: every output of every node other than Constant, in node
// order, each once, empty (omitted optional) outputs left out (Polygraphy's all_tensor_names).
std::vector<std::string> markable_tensor_names(const ::onnx::GraphProto& graph);

// Replaces the graph outputs by `names` (duplicates kept once, in the order given). Each output
// keeps the type the graph knows for it (value_info, an existing graph output, a graph input or an
// initializer); a tensor the graph knows nothing about gets an output with no type. Throws
// InvalidInputError naming the first tensor that no node produces and no graph input is.
void mark_outputs(::onnx::GraphProto& graph, const std::vector<std::string>& names);

// mark_outputs(graph, markable_tensor_names(graph)).
void mark_all_outputs(::onnx::GraphProto& graph);

// Removes `names` from the graph outputs, keeping the others in order. Throws InvalidInputError
// naming the first tensor that no node produces and no graph input is (a tensor of the graph that
// is not an output is no error: there is nothing to remove).
void unmark_outputs(::onnx::GraphProto& graph, const std::vector<std::string>& names);

}  // namespace parity::onnx
