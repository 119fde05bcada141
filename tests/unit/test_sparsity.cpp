// 2:4 structured sparsity (parity/onnx/sparsity.h) and the weight-strip selection and marks
// (parity/onnx/weight_strip.h). Agreement with Polygraphy itself is checked by
// tests/cli/test_surgeon_weights.py; these pin the rules on small tensors.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "parity/core/error.h"
#include "parity/onnx/sparsity.h"
#include "parity/onnx/tensor_proto.h"
#include "parity/onnx/weight_strip.h"

namespace parity::onnx {
namespace {

Tensor floats(Shape shape, std::vector<float> values) {
  return Tensor::from_bytes(DType::kFloat32, std::move(shape), values.data(), values.size() * sizeof(float));
}

std::vector<float> values_of(const Tensor& tensor) {
  return {tensor.data<float>(), tensor.data<float>() + tensor.size()};
}

TEST(Sparsity, PruneZeroesTheTwoSmallestMagnitudesOfEachRunAlongTheAxis) {
  // Shape (4, 2), axis 0: the runs are the two columns.
  Tensor tensor = floats({4, 2}, {1, -8, -5, 2, 3, 7, -0.5, 1});
  prune_2_4(tensor, 0);
  EXPECT_EQ(values_of(tensor), (std::vector<float>{0, -8, -5, 0, 3, 7, 0, 0}));
  EXPECT_TRUE(follows_2_4_sparsity(tensor.view(), 0));
}

TEST(Sparsity, TiesGoToTheFirstEqualValueAsPythonsMin) {
  Tensor tensor = floats({1, 4}, {2, -2, 2, 2});
  prune_2_4(tensor, 1);
  EXPECT_EQ(values_of(tensor), (std::vector<float>{0, 0, 2, 2}));
}

TEST(Sparsity, ALeadingNaNIsTakenAsTheSmallest) {
  Tensor tensor = floats({1, 4}, {NAN, 3, 1, 2});
  prune_2_4(tensor, 1);
  auto values = values_of(tensor);
  EXPECT_EQ(values[0], 0);
  EXPECT_EQ(values[2], 0);
  EXPECT_EQ(values[1], 3);
  EXPECT_EQ(values[3], 2);
}

TEST(Sparsity, CheckNeedsTwoZerosInEveryRun) {
  EXPECT_TRUE(follows_2_4_sparsity(floats({1, 8}, {0, 1, -0.0f, 2, 5, 0, 0, 0}).view(), 1));
  EXPECT_FALSE(follows_2_4_sparsity(floats({1, 8}, {0, 1, -0.0f, 2, 5, 0, 1, 1}).view(), 1));
  EXPECT_FALSE(follows_2_4_sparsity(floats({2, 4}, {0, 0, 0, 0, 1, 1, 1, 0}).view(), 1));
}

TEST(Sparsity, AnAxisNotAMultipleOfFourIsRefused) {
  Tensor tensor = floats({1, 6}, {1, 2, 3, 4, 5, 6});
  EXPECT_THROW(prune_2_4(tensor, 1), InvalidInputError);
  EXPECT_THROW(follows_2_4_sparsity(tensor.view(), 2), InvalidInputError);
}

// x @ W (W (8, 4) float32, B side: axis 0) and Gemm(A=x, B=G, transB=1: axis 1).
Model matmul_and_gemm() {
  Model model{std::make_shared<::onnx::ModelProto>(), {}, "."};
  model->set_ir_version(8);
  model->add_opset_import()->set_version(17);
  auto* graph = model->mutable_graph();
  std::vector<float> w(32), g(32);
  for (int i = 0; i < 32; ++i) w[i] = g[i] = static_cast<float>(i + 1);
  *graph->add_initializer() = tensor_to_proto(floats({8, 4}, w).view(), "W");
  *graph->add_initializer() = tensor_to_proto(floats({4, 8}, g).view(), "G");
  auto* matmul = graph->add_node();
  matmul->set_op_type("MatMul");
  matmul->add_input("x");
  matmul->add_input("W");
  matmul->add_output("a");
  auto* gemm = graph->add_node();
  gemm->set_op_type("Gemm");
  gemm->add_input("a");
  gemm->add_input("G");
  gemm->add_output("y");
  auto* trans_b = gemm->add_attribute();
  trans_b->set_name("transB");
  trans_b->set_type(::onnx::AttributeProto::INT);
  trans_b->set_i(1);
  return model;
}

TEST(Sparsity, CandidatesFollowTheReductionAxis) {
  Model model = matmul_and_gemm();
  auto candidates = find_sparsity_candidates(model->graph());
  ASSERT_EQ(candidates.size(), 2u);
  EXPECT_EQ(candidates[0].name, "W");
  EXPECT_EQ(candidates[0].axis, 0);
  EXPECT_EQ(candidates[1].name, "G");
  EXPECT_EQ(candidates[1].axis, 1);
  EXPECT_EQ(find_sparsity_candidates(model->graph(), {"W"}).size(), 1u);
}

TEST(Sparsity, PruneThenCheckFindsEveryCandidateSparse) {
  Model model = matmul_and_gemm();
  EXPECT_TRUE(check_sparsity(model).empty());
  EXPECT_EQ(prune_sparsity(model), 2);
  EXPECT_EQ(check_sparsity(model), (std::set<std::string>{"G", "W"}));
  EXPECT_EQ(model->producer_name(), "parity surgeon prune");
}

TEST(WeightStrip, StripsMarksAndReconstructsSparseWeights) {
  Model model = matmul_and_gemm();
  prune_sparsity(model, {"G"});  // W becomes sparse, G stays dense
  auto report = strip_weights(model, {"missing"});
  EXPECT_EQ(report.stripped, (std::vector<std::string>{"W", "G"}));
  EXPECT_EQ(report.exclusions_not_found, (std::set<std::string>{"missing"}));
  EXPECT_EQ(model->graph().initializer(0).doc_string(), "TRT_WEIGHTLESS/SPARSE_2_4");
  EXPECT_EQ(model->graph().initializer(1).doc_string(), "TRT_WEIGHTLESS/");
  EXPECT_TRUE(model->graph().initializer(0).raw_data().empty());
  EXPECT_EQ(model->doc_string(), "TRT_WEIGHTLESS");

  std::mt19937_64 random(3);
  EXPECT_EQ(reconstruct_weights(model, random), 2);
  EXPECT_EQ(model->graph().initializer(0).raw_data().size(), 32 * sizeof(float));
  EXPECT_FALSE(is_weightless(model->graph().initializer(0)));
  EXPECT_EQ(model->doc_string(), "");
  auto sparse = check_sparsity(model);
  EXPECT_EQ(sparse, (std::set<std::string>{"W"}));
}

TEST(WeightStrip, ExcludedWeightsStayEvenWhenReadTwice) {
  Model model = matmul_and_gemm();
  model->mutable_graph()->mutable_node(1)->set_input(1, "W");  // the Gemm reads W too
  std::set<std::string> found;
  auto selected = weights_to_strip(model->graph(), {"W"}, &found);
  EXPECT_EQ(selected, std::set<std::string>{});
  EXPECT_EQ(found, std::set<std::string>{"W"});
}

TEST(WeightStrip, ReconstructRefusesAMarkedWeightWithData) {
  Model model = matmul_and_gemm();
  model->mutable_graph()->mutable_initializer(0)->set_doc_string("TRT_WEIGHTLESS/");
  std::mt19937_64 random(3);
  EXPECT_THROW(reconstruct_weights(model, random), InvalidInputError);
  model->mutable_graph()->mutable_initializer(0)->clear_raw_data();
  model->mutable_graph()->mutable_initializer(0)->set_doc_string("TRT_WEIGHTLESS/a/b");
  EXPECT_THROW(reconstruct_weights(model, random), InvalidInputError);
}

}  // namespace
}  // namespace parity::onnx
