// onnx::pair_torch_modules on graphs built as each exporter writes them: TorchScript's scope-path node
// names and dynamo's "namespace" metadata. The exported models themselves are checked numerically in
// tests/python/test_torch_module_pairing.py.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "parity/onnx/torch_module_pairing.h"

namespace parity::onnx {
namespace {

struct GraphBuilder {
  ::onnx::GraphProto graph;
  ::onnx::NodeProto* node(const std::string& name, const std::string& op, std::vector<std::string> inputs,
                          std::vector<std::string> outputs, const std::string& stack = "") {
    auto* n = graph.add_node();
    n->set_name(name);
    n->set_op_type(op);
    for (auto& i : inputs) n->add_input(i);
    for (auto& o : outputs) n->add_output(o);
    if (!stack.empty()) {
      auto* p = n->add_metadata_props();
      p->set_key("namespace");
      p->set_value(stack);
    }
    return n;
  }
  void input(const std::string& name) { graph.add_input()->set_name(name); }
  void output(const std::string& name) { graph.add_output()->set_name(name); }
  void initializer(const std::string& name) { graph.add_initializer()->set_name(name); }
};

std::map<std::string, TorchModulePairing> by_name(const TorchModulePairings& pairings) {
  std::map<std::string, TorchModulePairing> out;
  for (const auto& p : pairings.modules) out.emplace(p.module, p);
  return out;
}

// A model as torch.onnx.export(dynamo=False) names it: m (Net) holds conv, bn (folded into conv's
// Conv), act (called twice: "act" and "act_1"), layer (a Sequential, its child "layer.0" named
// relative to m), ln_1 (a module whose own name ends in _1), skip (Identity: no node), pair (returns
// two tensors), pos (reads no input data).
GraphBuilder torchscript_graph() {
  GraphBuilder b;
  b.input("x");
  b.initializer("onnx::Conv_7");  // the folded weight: no longer m.conv.weight
  b.initializer("m.layer.0.weight");
  b.node("/m/conv/Conv", "Conv", {"x", "onnx::Conv_7"}, {"/m/conv/Conv_output_0"});
  b.node("/m/act/Relu", "Relu", {"/m/conv/Conv_output_0"}, {"/m/act/Relu_output_0"});
  b.node("/m/layer/layer.0/MatMul", "MatMul", {"/m/act/Relu_output_0", "m.layer.0.weight"},
         {"/m/layer/layer.0/MatMul_output_0"});
  b.node("/m/layer/layer.0/Constant", "Constant", {}, {"/m/layer/layer.0/Constant_output_0"});
  b.node("/m/layer/layer.0/Add", "Add", {"/m/layer/layer.0/MatMul_output_0", "/m/layer/layer.0/Constant_output_0"},
         {"/m/layer/layer.0/Add_output_0"});
  b.node("/m/act_1/Relu", "Relu", {"/m/layer/layer.0/Add_output_0"}, {"/m/act_1/Relu_output_0"});
  b.node("/m/ln_1/LayerNormalization", "LayerNormalization", {"/m/act_1/Relu_output_0"}, {"/m/ln_1/LN_output_0"});
  b.node("/m/pair/Neg", "Neg", {"/m/ln_1/LN_output_0"}, {"/m/pair/Neg_output_0"});
  b.node("/m/pair/Abs", "Abs", {"/m/ln_1/LN_output_0"}, {"/m/pair/Abs_output_0"});
  b.node("/m/Add", "Add", {"/m/pair/Neg_output_0", "/m/pair/Abs_output_0"}, {"y"});
  // A shape of the input, computed in m and read by a node outside every module: not an output.
  b.node("/m/Shape", "Shape", {"x"}, {"/m/Shape_output_0"});
  b.node("Identity_3", "Identity", {"/m/Shape_output_0"}, {"shape_copy"});
  // pos (an Embedding of positions) reads a weight and that shape only: no input data reaches it.
  b.initializer("m.pos.weight");
  b.node("/m/pos/Gather", "Gather", {"m.pos.weight", "/m/Shape_output_0"}, {"positions"});
  b.output("y");
  b.output("shape_copy");
  b.output("positions");
  return b;
}

const std::vector<TorchModule> kTorchScriptModules = {
    {"", "Wrapper"}, {"m", "Net"},         {"m.conv", "Conv2d"}, {"m.bn", "BatchNorm2d"}, {"m.act", "ReLU"},
    {"m.layer", "Sequential"}, {"m.layer.0", "Linear"}, {"m.ln_1", "LayerNorm"}, {"m.skip", "Identity"},
    {"m.pair", "Pair"}, {"m.pos", "Embedding"}};

TEST(TorchModulePairing, TorchScriptScopePaths) {
  const auto b = torchscript_graph();
  EXPECT_EQ(detect_torch_exporter(b.graph), TorchExporter::torchscript);
  const auto pairings = pair_torch_modules(b.graph, kTorchScriptModules);
  ASSERT_EQ(pairings.modules.size(), kTorchScriptModules.size());
  for (size_t i = 0; i < kTorchScriptModules.size(); ++i)
    EXPECT_EQ(pairings.modules[i].module, kTorchScriptModules[i].name);  // in the given order
  auto p = by_name(pairings);

  EXPECT_EQ(p["m.layer.0"].tensor, "/m/layer/layer.0/Add_output_0");
  EXPECT_EQ(p["m.layer.0"].node, "/m/layer/layer.0/Add");
  EXPECT_EQ(p["m.layer"].tensor, "/m/layer/layer.0/Add_output_0");  // a Sequential's output is its last child's
  EXPECT_EQ(p["m.ln_1"].tensor, "/m/ln_1/LN_output_0");  // a name ending in _1 that is a module, not a call
  EXPECT_EQ(p["m"].tensor, "y");
  EXPECT_EQ(p[""].tensor, "y");

  EXPECT_TRUE(p["m.act"].tensor.empty());
  EXPECT_EQ(p["m.act"].reason, "called 2 times (one scope per call)");
  EXPECT_NE(p["m.pair"].reason.find("2 tensors read outside it ('/m/pair/Neg_output_0', '/m/pair/Abs_output_0')"),
            std::string::npos)
      << p["m.pair"].reason;
  EXPECT_NE(p["m.skip"].reason.find("its scope has no node"), std::string::npos) << p["m.skip"].reason;
  EXPECT_NE(p["m.pos"].reason.find("depends on weights and shapes only"), std::string::npos) << p["m.pos"].reason;
  EXPECT_NE(p["m.bn"].reason.find("fused away"), std::string::npos) << p["m.bn"].reason;
  EXPECT_NE(p["m.conv"].reason.find("BatchNorm folded into it (weight 'onnx::Conv_7' instead of 'm.conv.weight')"),
            std::string::npos)
      << p["m.conv"].reason;
}

TEST(TorchModulePairing, EachTensorOnceWithItsInnermostModule) {
  auto pairings = pair_torch_modules(torchscript_graph().graph, kTorchScriptModules);
  std::vector<std::pair<std::string, std::string>> tensors;
  for (const auto* p : pairings.tensors()) tensors.emplace_back(p->tensor, p->module);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"y", "m"}, {"/m/layer/layer.0/Add_output_0", "m.layer.0"}, {"/m/ln_1/LN_output_0", "m.ln_1"}};
  EXPECT_EQ(tensors, expected);

  EXPECT_TRUE(pairings.unpair("m.ln_1", "called 2 times in the forward pass"));
  EXPECT_FALSE(pairings.unpair("m.ln_1", "again"));
  EXPECT_FALSE(pairings.unpair("m.act", "not paired in the first place"));
  auto p = by_name(pairings);
  EXPECT_FALSE(p["m.ln_1"].paired());
  EXPECT_TRUE(p["m.ln_1"].node.empty());
  EXPECT_EQ(p["m.ln_1"].reason, "called 2 times in the forward pass");
}

TEST(TorchModulePairing, TorchScriptConvWithItsOwnWeightIsPaired) {
  // Without a BatchNorm folded anywhere, a Conv reading a renamed weight is still the module's own.
  GraphBuilder b;
  b.input("x");
  b.initializer("onnx::Conv_1");
  b.node("/conv/Conv", "Conv", {"x", "onnx::Conv_1"}, {"y"});
  b.output("y");
  auto p = by_name(pair_torch_modules(b.graph, {{"", "Net"}, {"conv", "Conv2d"}}));
  EXPECT_EQ(p["conv"].tensor, "y");
  EXPECT_EQ(p[""].tensor, "y");
}

std::string stack(const std::vector<std::string>& modules, const std::string& op) {
  std::string text = ": Wrapper";
  for (const auto& m : modules) text += "/" + m;
  return text + "/" + op;
}

TEST(TorchModulePairing, DynamoNamespaceMetadata) {
  GraphBuilder b;
  b.input("x");
  b.initializer("conv.weight");  // dynamo keeps the convolution's name on the folded weight
  b.initializer("conv.weight_bias");
  b.initializer("fc.weight");
  // conv + bn folded into one Conv under bn's scope; act called twice; fc; a shape of the input
  // computed under fc and read by a node outside every module.
  b.node("node_Conv_1", "Conv", {"x", "conv.weight", "conv.weight_bias"}, {"getitem"},
         stack({"bn: torch.nn.modules.batchnorm.BatchNorm2d"}, "_native_batch_norm: aten.bn"));
  b.node("node_relu", "Relu", {"getitem"}, {"relu"}, stack({"act: torch.nn.modules.activation.ReLU"}, "relu: aten.relu"));
  b.node("node_MatMul_2", "MatMul", {"relu", "fc.weight"}, {"matmul"}, stack({"fc: Linear"}, "linear: aten.linear"));
  b.node("node_Shape_3", "Shape", {"x"}, {"shape"}, stack({"fc: Linear"}, "sym_size: aten.sym_size"));
  b.node("node_Add_4", "Add", {"matmul", "shape"}, {"add"}, stack({"fc: Linear"}, "add: aten.add"));
  b.node("node_relu_1", "Relu", {"add"}, {"relu_1"}, stack({"act: torch.nn.modules.activation.ReLU"}, "relu_1: aten.relu"));
  b.node("node_Reshape_5", "Reshape", {"relu_1", "shape"}, {"y"}, stack({}, "view: aten.view"));
  b.node("node_Cast_6", "Cast", {"shape"}, {"dims"}, "_empty_nn_module_stack_from_metadata_hook: x/sym: y");
  b.output("y");
  b.output("dims");
  EXPECT_EQ(detect_torch_exporter(b.graph), TorchExporter::dynamo);
  auto p = by_name(pair_torch_modules(b.graph, {{"", "Wrapper"}, {"conv", "Conv2d"}, {"bn", "BatchNorm2d"},
                                                {"act", "ReLU"}, {"fc", "Linear"}, {"unused", "Dropout"}}));
  EXPECT_EQ(p["bn"].tensor, "getitem");
  EXPECT_EQ(p["bn"].node, "node_Conv_1");
  EXPECT_EQ(p["conv"].reason,
            "fused away: no node of its own; its parameter 'conv.weight' is read by node 'node_Conv_1' of bn: "
            "BatchNorm2d, whose output is that module's");
  EXPECT_EQ(p["act"].reason,
            "2 unconnected groups of nodes each give an output (the module is called 2 times, or returns several "
            "tensors)");
  EXPECT_EQ(p["fc"].tensor, "add");  // the shape it computed and others read is not an output
  EXPECT_EQ(p[""].tensor, "y");
  EXPECT_NE(p["unused"].reason.find("its scope has no node"), std::string::npos);
}

TEST(TorchModulePairing, GraphWithoutScopes) {
  GraphBuilder b;
  b.input("x");
  b.node("relu", "Relu", {"x"}, {"y"});
  b.output("y");
  EXPECT_EQ(detect_torch_exporter(b.graph), TorchExporter::none);
  const auto pairings = pair_torch_modules(b.graph, {{"", "Net"}});
  ASSERT_EQ(pairings.modules.size(), 1u);
  EXPECT_FALSE(pairings.modules[0].paired());
  EXPECT_NE(pairings.modules[0].reason.find("records no module scopes"), std::string::npos);
}

}  // namespace
}  // namespace parity::onnx
