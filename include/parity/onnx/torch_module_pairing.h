// Which ONNX tensor holds each PyTorch module call's output, for a model exported from PyTorch by
// either of torch.onnx.export's exporters:
// - TorchScript (dynamo=False): node names are scope paths, "/m/layer1/layer1.0/conv1/Conv"; each
//   component names one called module relative to an enclosing one ("layer1.0" for m.layer1.0,
//   "layer.0" for m.encoder.layer.0 under m.encoder), and a module's second call gets the suffix
//   "_1" ("/m/layer1/layer1.0/relu_1/Relu").
// - dynamo (dynamo=True): node names say nothing; each node's "namespace" metadata holds the stack
//   of modules by qualified name (onnx/torch_module.h). A module called twice has one path for both
//   calls; its calls are told apart by their nodes being disconnected.
// A module's nodes are those whose scope includes it (its submodules' nodes too); its output is the
// tensor those nodes produce that a node outside them reads, or that is a graph output. A module is
// paired only when exactly one such tensor exists; otherwise it gets a reason, never a guess.
#pragma once

#include <string>
#include <vector>

namespace onnx {
class GraphProto;
}  // namespace onnx

namespace parity::onnx {

// One entry of a module's named_modules(): its qualified name ("" for the top module) and its
// class's own name ("Conv2d").
struct TorchModule {
  std::string name;
  std::string class_name;
};

// by_name: no ONNX model; two PyTorch runs compare module outputs under the modules' qualified names.
enum class TorchExporter { torchscript, dynamo, none, by_name };

// "TorchScript (dynamo=False)", "dynamo (dynamo=True)", "no PyTorch exporter recognised" or "no ONNX
// model: by qualified name".
const char* torch_exporter_label(TorchExporter exporter);

// dynamo when a node carries "namespace" metadata; TorchScript when node names are scope paths
// ("/..."); none otherwise.
TorchExporter detect_torch_exporter(const ::onnx::GraphProto& graph);

struct TorchModulePairing {
  std::string module;      // qualified name
  std::string class_name;
  std::string tensor;      // the ONNX tensor holding the module's output; empty when unpaired
  std::string node;        // the node producing it
  std::string reason;      // why the module is not paired; empty when paired
  bool paired() const { return !tensor.empty(); }
};

struct TorchModulePairings {
  TorchExporter exporter = TorchExporter::none;
  std::vector<TorchModulePairing> modules;  // in the order of the given modules

  // The paired tensors, each once, with the innermost module outputting it (the deepest qualified
  // name: a Sequential and its last layer share a tensor; hooking the layer is enough), in module order.
  std::vector<const TorchModulePairing*> tensors() const;
  // Unpairs `module` with `reason` (what only the run tells: called twice, a tuple returned); false
  // when no module of that name is paired.
  bool unpair(const std::string& module, std::string reason);
};

// Without an ONNX model: every module but the top one (whose outputs are the runner's) paired with a
// tensor named by its qualified name, for comparing two PyTorch runs module by module.
TorchModulePairings pair_torch_modules_by_name(const std::vector<TorchModule>& modules);

// Pairs each module with its output tensor in `graph` (the main graph; nodes inside subgraphs count
// as the node that holds them).
TorchModulePairings pair_torch_modules(const ::onnx::GraphProto& graph, const std::vector<TorchModule>& modules);

}  // namespace parity::onnx
