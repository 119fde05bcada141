// OnnxrtRunner's intermediate tensors: listed, mark all, streamed, and batched under a memory
// budget, against each other and the reference runner.
//
// The library is found through PARITY_PYTHON's onnxruntime package (ctest sets it; by hand use
// PARITY_PYTHON=/work/main/.venv/bin/python).
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_onnxrt_runner_helpers.h"
#include "parity/core/error.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"
#include "parity/runtime/ref/ref_runner.h"

namespace parity::runtime {
namespace {

using namespace onnxrt_testing;

// --- intermediate tensors -----------------------------------------------------------------------

NamedTensors run_with(const ModelLoader& loader, IntermediateOutputs intermediates,
                      OnnxrtOptions options, const NamedTensors& feed, std::size_t* runs = nullptr,
                      NamedTensors* streamed = nullptr,
                      std::vector<std::string>* producers = nullptr) {
  OnnxrtRunner runner(loader, options);
  runner.set_intermediate_outputs(std::move(intermediates));
  if (streamed)
    runner.set_tensor_callback([&](const ProducedTensor& t) {
      streamed->emplace_back(t.name, Tensor::copy_of(t.tensor));
      if (producers) producers->push_back(t.node_name + "/" + t.op_type);
    });
  ActiveRunner active(runner);
  NamedTensors outputs = active->infer(feed);
  if (runs) *runs = runner.last_run_count();
  return outputs;
}

std::vector<std::string> names_of(const NamedTensors& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, _] : tensors) names.push_back(name);
  return names;
}

void expect_identical(const NamedTensors& a, const NamedTensors& b) {
  ASSERT_EQ(names_of(a), names_of(b));
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(identical(a[i].second, b[i].second)) << a[i].first;
}

TEST(OnnxrtRunner, MarkAllListAndStreamingAgreeWithEachOtherAndTheReferenceRunner) {
  ModelLoader loader = chain_model().loader();
  NamedTensors feed{{"x", float_tensor({3, 4})}};

  NamedTensors all = run_with(loader, IntermediateOutputs::all(), {}, feed);
  EXPECT_EQ(names_of(all),
            (std::vector<std::string>{"y", "r", "m"}));  // outputs first, then execution order

  NamedTensors listed = run_with(loader, IntermediateOutputs::list({"m", "x", "y"}), {}, feed);
  EXPECT_EQ(names_of(listed), (std::vector<std::string>{"y", "m", "x"}));
  EXPECT_TRUE(identical(listed[1].second, all[2].second));
  EXPECT_TRUE(identical(listed[2].second, feed[0].second));

  NamedTensors streamed;
  std::vector<std::string> producers;
  NamedTensors plain =
      run_with(loader, IntermediateOutputs::none(), {}, feed, nullptr, &streamed, &producers);
  EXPECT_EQ(names_of(plain), (std::vector<std::string>{"y"}));
  EXPECT_EQ(names_of(streamed), (std::vector<std::string>{"r", "m", "y"}));
  EXPECT_EQ(producers, (std::vector<std::string>{"relu/Relu", "double/Mul", "minus_w/Sub"}));
  for (const auto& [name, tensor] : streamed) {
    auto it = std::find_if(all.begin(), all.end(), [&](const auto& e) { return e.first == name; });
    ASSERT_NE(it, all.end());
    EXPECT_TRUE(identical(tensor, it->second)) << name;
  }

  // The reference runner hands out the same names in the same order, with the same values here.
  RefRunner ref(loader);
  ref.set_intermediate_outputs(IntermediateOutputs::all());
  ActiveRunner active(ref);
  NamedTensors ref_all = active->infer(feed);
  expect_identical(all, ref_all);

  try {
    run_with(loader, IntermediateOutputs::list({"nope"}), {}, feed);
    FAIL() << "expected InvalidInputError";
  } catch (const InvalidInputError& error) {
    EXPECT_NE(std::string(error.what())
                  .find("requested tensor 'nope' is not produced by any node of the graph"),
              std::string::npos)
        << error.what();
  }
}

// small_cnn: Conv, BatchNormalization, Relu, MaxPool, Flatten, Gemm, Softmax with a dynamic batch.
NamedTensors cnn_feed() {
  Tensor x = Tensor::zeros(DType::kFloat32, {2, 3, 32, 32});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (auto& v : x.mutable_span<float>()) v = uniform(rng);
  return {{"image", x}};
}

TEST(OnnxrtRunner, BatchedMarkingUnderASmallBudgetGivesTheSameTensorsAsAllAtOnce) {
  ModelLoader loader = ModelFromPath((kSource / "examples" / "models" / "small_cnn.onnx").string());
  NamedTensors feed = cnn_feed();
  // Bit-identical up to ONNX Runtime's "extended" level. Its "all" level adds layout rewrites
  // (NCHWc) whose choice depends on what produced a tensor; see the next test.
  for (auto level : {OrtOptimizationLevel::kDisable, OrtOptimizationLevel::kBasic,
                     OrtOptimizationLevel::kExtended}) {
    SCOPED_TRACE(std::string(ort_optimization_level_name(level)));
    OnnxrtOptions at_once, batched;
    at_once.optimization_level = batched.optimization_level = level;
    at_once.intermediate_memory_budget = std::size_t{1} << 40;
    batched.intermediate_memory_budget = 40000;  // a few of small_cnn's tensors per piece
    std::size_t runs_at_once = 0, runs_batched = 0;
    NamedTensors all = run_with(loader, IntermediateOutputs::all(), at_once, feed, &runs_at_once);
    NamedTensors pieces =
        run_with(loader, IntermediateOutputs::all(), batched, feed, &runs_batched);
    EXPECT_EQ(runs_at_once, 1u);
    EXPECT_GT(runs_batched, 2u);
    EXPECT_EQ(all.size(), 11u);
    expect_identical(all, pieces);

    // One node per piece, and streaming instead of holding: still the same tensors.
    OnnxrtOptions tiny = batched;
    tiny.intermediate_memory_budget = 1;
    NamedTensors streamed;
    std::size_t runs_tiny = 0;
    NamedTensors outputs =
        run_with(loader, IntermediateOutputs::none(), tiny, feed, &runs_tiny, &streamed);
    EXPECT_EQ(runs_tiny, all.size());  // small_cnn: one output per node
    EXPECT_EQ(names_of(outputs), (std::vector<std::string>{"probabilities"}));
    ASSERT_EQ(streamed.size(), all.size());
    for (const auto& [name, tensor] : streamed) {
      auto it =
          std::find_if(all.begin(), all.end(), [&](const auto& e) { return e.first == name; });
      ASSERT_NE(it, all.end()) << name;
      EXPECT_TRUE(identical(tensor, it->second)) << name;
    }
  }
}

TEST(OnnxrtRunner, PiecesKeepComputedConstantsConstant) {
  // w = ConstantOfShape([4, 4]) (value 0.5) feeds a MatMul: ONNX Runtime folds it into a constant
  // weight (and prepacks it). A piece holding only the MatMul must see it as a constant too, or
  // its MatMul takes another path; and an overridable initializer (IR >= 4, also a graph input)
  // must stay a variable.
  ModelBuilder b(17, 8);
  b.input({"x", TensorProto::FLOAT, {std::string("N"), int64_t{4}}})
      .input({"bias", TensorProto::FLOAT, {int64_t{4}}})
      .output({"y", TensorProto::FLOAT, {std::string("N"), int64_t{4}}});
  auto model = b.build();
  auto* shape = model.proto->mutable_graph()->add_initializer();
  shape->set_name("w_shape");
  shape->set_data_type(TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(4);
  shape->add_int64_data(4);
  auto* bias = model.proto->mutable_graph()->add_initializer();  // overridable: also a graph input
  bias->set_name("bias");
  bias->set_data_type(TensorProto::FLOAT);
  bias->add_dims(4);
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) bias->add_float_data(v);
  b.node("ConstantOfShape", {"w_shape"}, {"w"}, "make_w");
  auto* value = model.proto->mutable_graph()->mutable_node(0)->add_attribute();
  value->set_name("value");
  value->set_type(::onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(TensorProto::FLOAT);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_float_data(0.5f);
  b.node("Relu", {"x"}, {"r"}, "relu")
      .node("MatMul", {"r", "w"}, {"m"}, "matmul")
      .node("Add", {"m", "bias"}, {"y"}, "add");
  ModelLoader loader = b.loader();
  NamedTensors feed{{"x", float_tensor({3, 4})}};
  for (auto level : {OrtOptimizationLevel::kBasic, OrtOptimizationLevel::kExtended}) {
    OnnxrtOptions at_once, batched;
    at_once.optimization_level = batched.optimization_level = level;
    at_once.intermediate_memory_budget = std::size_t{1} << 40;
    batched.intermediate_memory_budget = 1;
    std::size_t runs = 0;
    NamedTensors all = run_with(loader, IntermediateOutputs::all(), at_once, feed);
    NamedTensors pieces = run_with(loader, IntermediateOutputs::all(), batched, feed, &runs);
    EXPECT_EQ(runs, 4u);
    expect_identical(all, pieces);
    EXPECT_FLOAT_EQ(all[0].second.data<float>()[0],
                    (0.25f + 0.25f) * 0.5f + 1.0f);  // x[0] = .25 -.75 .25 -.75
  }
}

TEST(OnnxrtRunner, BatchedMarkingAtTheAllLevelStaysWithinRounding) {
  ModelLoader loader = ModelFromPath((kSource / "examples" / "models" / "small_cnn.onnx").string());
  NamedTensors feed = cnn_feed();
  OnnxrtOptions at_once, batched;
  at_once.intermediate_memory_budget = std::size_t{1} << 40;
  batched.intermediate_memory_budget = 1;
  NamedTensors all = run_with(loader, IntermediateOutputs::all(), at_once, feed);
  NamedTensors pieces = run_with(loader, IntermediateOutputs::all(), batched, feed);
  ASSERT_EQ(names_of(all), names_of(pieces));
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& a = all[i].second;
    const auto& b = pieces[i].second;
    ASSERT_EQ(a.shape(), b.shape()) << all[i].first;
    for (int64_t j = 0; j < a.size(); ++j)
      EXPECT_NEAR(a.data<float>()[j], b.data<float>()[j],
                  1e-5 + 1e-5 * std::abs(a.data<float>()[j]))
          << all[i].first;
  }
}

TEST(OnnxrtRunner, LayerwisePlansAreCachedPerInputShape) {
  ModelLoader loader = ModelFromPath((kSource / "examples" / "models" / "small_cnn.onnx").string());
  OnnxrtOptions options;
  options.intermediate_memory_budget = 40000;
  OnnxrtRunner runner(loader, options);
  runner.set_intermediate_outputs(IntermediateOutputs::all());
  ActiveRunner active(runner);
  NamedTensors first = active->infer(cnn_feed());
  NamedTensors again = active->infer(cnn_feed());
  expect_identical(first, again);
  std::size_t runs_batch_two = runner.last_run_count();
  Tensor one = Tensor::zeros(DType::kFloat32, {1, 3, 32, 32});
  NamedTensors smaller = active->infer({{"image", one}});
  EXPECT_EQ(smaller[0].second.shape(), (Shape{1, 10}));
  EXPECT_LE(runner.last_run_count(), runs_batch_two);  // half the bytes: no more pieces
}

}  // namespace
}  // namespace parity::runtime
