// The fusion-preserving marks' bookkeeping (parity/runtime/openvino/openvino_fused_outputs.h): how the marked
// model's layers are compared with the plain model's, and which marks are dropped around a changed layer.
#include <gtest/gtest.h>

#include "../../src/runtime/backends/openvino/openvino_backend.h"
#include "parity/runtime/openvino/openvino_fused_outputs.h"

namespace parity::runtime {
namespace {

openvino::ExecutedLayer layer(std::string name, std::string type, std::string kernel, std::string precision,
                              std::vector<std::string> original) {
  openvino::ExecutedLayer result;
  result.name = std::move(name);
  result.layer_type = std::move(type);
  result.primitive_type = std::move(kernel);
  result.runtime_precision = precision;
  result.output_precisions = precision;
  result.original_layers = std::move(original);
  return result;
}

std::vector<openvino::ExecutedLayer> plain_model() {
  return {layer("image", "Input", "unknown_f32", "f32", {}),
          layer("Multiply_3695", "Convolution", "brgconv_avx512_bf16", "bf16", {"Multiply_3695", "relu1"}),
          layer("pool1", "Pooling", "jit_avx512_bf16", "bf16", {"pool1"}),
          layer("fc", "FullyConnected", "undef_bf16", "bf16", {"fc"})};
}

TEST(OpenvinoFusedOutputs, TheSameLayersUnderOtherOpenvinoNumbersAreUnchanged) {
  auto marked = plain_model();
  marked[1] = layer("Multiply_3707", "Convolution", "brgconv_avx512_bf16", "bf16", {"Multiply_3707", "relu1"});
  marked.push_back(layer("Result_62", "Output", "unknown_f32", "f32", {}));
  EXPECT_TRUE(changed_layers(plain_model(), marked).empty());
}

TEST(OpenvinoFusedOutputs, APrecisionKernelOrFusionChangeIsReported) {
  auto marked = plain_model();
  marked[1].output_precisions = "f32";  // an f32 Result made the convolution write f32
  marked[2] = layer("pool1", "Pooling", "jit_avx512_f32", "f32", {"pool1"});
  auto changed = changed_layers(plain_model(), marked);
  ASSERT_EQ(changed.size(), 2u);
  EXPECT_EQ(changed[0].layer, "Multiply_3695");
  EXPECT_EQ(changed[0].change, "output precisions bf16 -> f32");
  EXPECT_EQ(changed[1].layer, "pool1");
  EXPECT_NE(changed[1].change.find("kernel jit_avx512_bf16 -> jit_avx512_f32"), std::string::npos);

  marked = plain_model();
  marked[1].original_layers = {"Multiply_3707"};  // relu1 no longer fused
  marked.insert(marked.begin() + 2, layer("relu1", "Eltwise", "jit_avx512_bf16", "bf16", {"relu1"}));
  changed = changed_layers(plain_model(), marked);
  ASSERT_EQ(changed.size(), 2u);
  EXPECT_EQ(changed[0].change, "fused ops Multiply_3695,relu1 -> Multiply_3707");
  EXPECT_EQ(changed[0].lost_ops, std::vector<std::string>{"relu1"});  // Multiply_3695 renumbered, not lost
  EXPECT_EQ(changed[1].change, "the marked model executes 'relu1' [Eltwise] before it");
  EXPECT_TRUE(changed[1].lost_ops.empty());
}

TEST(OpenvinoFusedOutputs, AMissingLayerIsReported) {
  auto marked = plain_model();
  marked.pop_back();
  auto changed = changed_layers(plain_model(), marked);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].layer, "fc");
  EXPECT_EQ(changed[0].change, "not executed in the marked model");
}

TEST(OpenvinoFusedOutputs, RepeatedBlocksAreMatchedByTheirOwnNumbers) {
  // The exporters number the nodes of repeated blocks: the marked model lacking block 1's layer is
  // that layer missing, not block 3's (digits are ignored only for names OpenVINO renumbered).
  const std::vector<openvino::ExecutedLayer> plain = {
      layer("x", "Input", "unknown_f32", "f32", {}),
      layer("node_matmul_1", "FullyConnected", "undef_bf16", "bf16", {"node_matmul_1"}),
      layer("node_matmul_3", "FullyConnected", "undef_bf16", "bf16", {"node_matmul_3"}),
      layer("Multiply_100", "Eltwise", "jit_avx512_bf16", "bf16", {"Multiply_100"})};
  const std::vector<openvino::ExecutedLayer> marked = {
      plain[0], plain[2], layer("Multiply_205", "Eltwise", "jit_avx512_bf16", "bf16", {"Multiply_205"})};
  auto changed = changed_layers(plain, marked);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].layer, "node_matmul_1");
  EXPECT_EQ(changed[0].change, "not executed in the marked model");
}

TEST(OpenvinoFusedOutputs, MarksAroundWidenAlongTheDataflow) {
  auto output = [](std::string tensor, std::string layer, std::vector<std::string> inputs) {
    FusedLayerOutput result;
    result.tensor = std::move(tensor);
    result.layer = std::move(layer);
    result.inputs = std::move(inputs);
    return result;
  };
  std::vector<FusedLayerOutput> chain = {output("a", "A", {}), output("b", "B", {"a"}), output("c", "C", {"b"}),
                                         output("d", "D", {"c"})};
  EXPECT_EQ(marks_around({{"B", ""}}, chain, 0), (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(marks_around({{"B", ""}}, chain, 1), (std::set<std::string>{"a", "b", "c"}));
  EXPECT_EQ(marks_around({{"B", ""}}, chain, 2), (std::set<std::string>{"a", "b", "c", "d"}));
  EXPECT_TRUE(marks_around({{"Multiply_1", ""}}, chain, 3).empty());  // OpenVINO's own layer writes no tensor
}

}  // namespace
}  // namespace parity::runtime
