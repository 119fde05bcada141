// A layerwise result against a runner that produced PyTorch modules' outputs under ONNX tensor names
// (parity/compare/layerwise_torch_modules.h): each compared tensor named by its modules, the first
// diverging module in the summary and the report, the unpaired modules with their reasons.
#include <gtest/gtest.h>

#include "parity/compare/layerwise.h"
#include "parity/compare/layerwise_torch_modules.h"
#include "test_compare_helpers.h"

namespace parity::compare {
namespace {

using testing::f32;
using testing::LogCapture;

onnx::TorchModulePairings pairings() {
  onnx::TorchModulePairings p;
  p.exporter = onnx::TorchExporter::dynamo;
  p.modules = {{"", "Net", "logits", "node_Gemm_9", ""},
               {"conv", "Conv2d", "", "", "fused away: ..."},
               {"bn", "BatchNorm2d", "getitem", "node_Conv_1", ""},
               {"block", "Sequential", "linear", "node_MatMul_3", ""},
               {"block.0", "Linear", "linear", "node_MatMul_3", ""},
               {"act", "ReLU", "", "", "called 2 times in the forward pass"},
               {"head", "Linear", "logits", "node_Gemm_9", ""}};
  return p;
}

TEST(LayerwiseTorchModules, FirstDivergingModuleNamedInTheSummaryAndTheReport) {
  LayerwiseResult result;
  result.runner0 = "torch";
  result.runner1 = "onnxrt";
  {
    LogCapture comparison_log;
    SimpleOutputParams params;
    compare_layer(result, 0, 0, "getitem", "node_Conv_1", "Conv", f32({1, 2}), f32({1, 2}), params);
    compare_layer(result, 1, 0, "relu", "node_relu", "Relu", f32({1, 2}), f32({1, 3}), params);  // no module's
    compare_layer(result, 2, 0, "linear", "node_MatMul_3", "MatMul", f32({1, 2}), f32({1, 5}), params);
    compare_layer(result, 3, 0, "logits", "node_Gemm_9", "Gemm", f32({4}), f32({9}), params);
  }
  result.only_in_runner1 = {"shape_0", "mul_3"};  // ONNX Runtime's tensors no module outputs
  name_module_outputs(result, "torch", pairings());
  EXPECT_EQ(result.entries[0].module_outputs, std::vector<std::string>{"bn: BatchNorm2d"});
  EXPECT_TRUE(result.entries[1].module_outputs.empty());
  // Innermost first.
  EXPECT_EQ(result.entries[2].module_outputs, (std::vector<std::string>{"block.0: Linear", "block: Sequential"}));
  EXPECT_EQ(result.entries[3].module_outputs, (std::vector<std::string>{"head: Linear", "Net"}));
  ASSERT_NE(first_diverging_module(result), nullptr);
  EXPECT_EQ(first_diverging_module(result)->tensor, "linear");

  LogCapture log(Severity::kVerbose);
  log_layerwise_summary(result);
  const std::string text = log.text();
  EXPECT_NE(text.find("PyTorch modules of torch: 5 of 7 paired with the ONNX tensor holding their output "
                      "(dynamo (dynamo=True) export)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("not paired: act: ReLU | called 2 times in the forward pass"), std::string::npos) << text;
  EXPECT_NE(text.find("2 tensor(s) of onnxrt are no paired module's output, so torch does not produce them"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("[W]"), std::string::npos) << text;
  EXPECT_NE(text.find("First diverging module: block.0: Linear (also the output of block: Sequential) | its output "
                      "is tensor 'linear' | max abs error=3"),
            std::string::npos)
      << text;
  // The first divergence stays the first failing tensor, a module's output or not.
  EXPECT_NE(text.find("First divergence (topological order): tensor 'relu'"), std::string::npos) << text;
  EXPECT_LT(text.find("First diverging module"), text.find("First divergence (topological order)"));

  const auto json = to_json(result);
  EXPECT_EQ(json["first_diverging_module"]["tensor"], "linear");
  EXPECT_EQ(json["first_diverging_module"]["module_outputs"][0], "block.0: Linear");
  EXPECT_EQ(json["first_divergence"]["tensor"], "relu");
  EXPECT_EQ(json["torch_modules"]["runner"], "torch");
  EXPECT_EQ(json["torch_modules"]["paired"].size(), 5u);
  ASSERT_EQ(json["torch_modules"]["unpaired"].size(), 2u);
  EXPECT_EQ(json["torch_modules"]["unpaired"][1]["module"], "act");
  EXPECT_EQ(json["torch_modules"]["unpaired"][1]["class"], "ReLU");
  EXPECT_EQ(json["torch_modules"]["unpaired"][1]["reason"], "called 2 times in the forward pass");
}

TEST(LayerwiseTorchModules, NothingAddedWithoutAPyTorchRunner) {
  LayerwiseResult result;
  {
    LogCapture comparison_log;
    compare_layer(result, 0, 0, "y", "n", "Relu", f32({1}), f32({2}), SimpleOutputParams{});
  }
  LogCapture log(Severity::kVerbose);
  log_layerwise_summary(result);
  EXPECT_EQ(log.text().find("module"), std::string::npos) << log.text();
  const auto json = to_json(result);
  EXPECT_FALSE(json.contains("torch_modules"));
  EXPECT_FALSE(json.contains("first_diverging_module"));
}

}  // namespace
}  // namespace parity::compare
