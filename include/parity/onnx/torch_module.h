// The PyTorch module a node was exported from, as torch.onnx.export(dynamo=True) records it in the
// node's metadata_props: "namespace" = "<path>: <class>/<path>: <class>/.../<fx node>: <target>",
// the stack of modules from the top one (whose path is empty) to the innermost, then the exported
// operation itself. Node names of that exporter (node_MatMul_82) say nothing of the module; the
// TorchScript exporter (dynamo=False) puts the path in the node name instead and records nothing.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include <onnx/onnx_pb.h>

namespace parity::onnx {

// The innermost module in a compact form: its path and its class's own name
// ("m.encoder.layer.0.attention.self.query: Linear"), the class alone for the top module;
// nullopt when the node has no "namespace" metadata or it names no module (an operation outside
// every module, such as the size of a dynamic dim, has a placeholder stack without the top module).
std::optional<std::string> torch_module(const ::onnx::NodeProto& node);

// torch_module of every named node of the graph and of its subgraphs, by node name (nodes without
// one left out).
std::unordered_map<std::string, std::string> torch_modules(const ::onnx::GraphProto& graph);

}  // namespace parity::onnx
