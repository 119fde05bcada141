// quantize::take_qdq_versions: a model of some of a float model's nodes, as error attribution makes
// them (what comes from outside as graph inputs, the edges inside a unit renamed), given the Q/DQ
// versions of the int8 model's nodes, computes what the int8 model computes.
#include "graph_test_helpers.h"
#include "parity/onnx/precision_keep_list.h"
#include "parity/quantize/qdq_insertion.h"
#include "parity/quantize/qdq_version.h"

namespace parity::quantize {
namespace {

using namespace graph_test;

// X [2,4] -> Relu "pre" -> H -> MatMul(H, W) "mm" -> Y -> Relu "post" -> Z
onnx::Model float_model() {
  Builder b;
  b.input("X", 1, {2, 4});
  std::vector<float> w;
  for (int i = 0; i < 12; ++i) w.push_back(0.137f * static_cast<float>(i - 5));
  b.floats("W", {4, 3}, w);
  b.node("Relu", {"X"}, {"H"}, "pre");
  b.node("MatMul", {"H", "W"}, {"Y"}, "mm");
  b.node("Relu", {"Y"}, {"Z"}, "post");
  b.output("Z");
  return b.model;
}

onnx::Model quantized_model(const onnx::Model& float32) {
  auto quantized = copy_of(float32);
  auto plan = plan_quantization(quantized, onnx::PrecisionKeepList{});
  insert_qdq(quantized, plan, {{"H", 0.05f}});
  return quantized;
}

// A model of `names` (float_model()'s nodes, in order), reading X and writing Y as `y`; `h` names
// the edge H (a graph input when `pre` is not among the nodes).
onnx::Model batch_of(const std::vector<std::string>& names, const std::string& h, const std::string& y) {
  Builder b;
  b.input(names.front() == "pre" ? "X" : h, 1, {2, 4});
  const auto float32 = float_model();
  const auto& source = float32->graph();
  *b.g->add_initializer() = source.initializer(0);
  for (const auto& node : source.node()) {
    if (std::find(names.begin(), names.end(), node.name()) == names.end()) continue;
    auto* copy = b.g->add_node();
    *copy = node;
    for (auto& input : *copy->mutable_input())
      if (input == "H") input = h;
    for (auto& output : *copy->mutable_output())
      if (output == "H") output = h;
      else if (output == "Y") output = y;
  }
  b.output(y);
  return b.model;
}

TEST(QdqVersion, NodeInsideAUnitReadsItsRenamedInputThroughTheModelsQdqPair) {
  const auto float32 = float_model();
  const auto quantized = quantized_model(float32);
  auto batch = batch_of({"pre", "mm"}, "H::local", "Y::local");
  EXPECT_EQ(take_qdq_versions(batch, quantized), 1);  // mm; pre is not quantized
  const auto feed = make_feed(float32);
  const Tensor expected = find(run(quantized, feed, {"Y"}), "Y");
  const Tensor got = find(run(batch, feed), "Y::local");
  EXPECT_EQ(max_abs_diff(got, expected), 0.0);
  // ...and the Q/DQ version differs from the float node.
  const Tensor float_y = find(run(float32, feed, {"Y"}), "Y");
  EXPECT_GT(max_abs_diff(got, float_y), 0.0);
  EXPECT_EQ(count_op(batch->graph(), "QuantizeLinear"), 1);
  EXPECT_EQ(count_op(batch->graph(), "DequantizeLinear"), 2);  // H's and the int8 weight's
}

TEST(QdqVersion, NodeFedFromOutsideComputesAsInTheInt8Model) {
  const auto float32 = float_model();
  const auto quantized = quantized_model(float32);
  auto batch = batch_of({"mm"}, "H", "Y::local");
  EXPECT_EQ(take_qdq_versions(batch, quantized), 1);
  const auto feed = make_feed(float32);
  const Tensor h = find(run(float32, feed, {"H"}), "H");
  const Tensor got = find(run(batch, {{"H", h}}), "Y::local");
  const Tensor expected = find(run(quantized, feed, {"Y"}), "Y");
  EXPECT_EQ(max_abs_diff(got, expected), 0.0);
}

TEST(QdqVersion, NodesTheInt8ModelLeavesFloatAreUnchanged) {
  const auto float32 = float_model();
  const auto quantized = quantized_model(float32);
  auto batch = batch_of({"pre"}, "H::local", "Y::local");
  const std::string before = batch->SerializeAsString();
  EXPECT_EQ(take_qdq_versions(batch, quantized), 0);
  EXPECT_EQ(batch->SerializeAsString(), before);
}

}  // namespace
}  // namespace parity::quantize
