// The library's Comparator driven directly, without the CLI: two runners over one data loader,
// held results and accuracy comparison, and the streamed layerwise comparison (two live runners,
// and one live runner against held results), with validation of streamed tensors; and the judge
// (parity/compare/judge.h) that decides between them.
//
// One side is the reference interpreter on y = relu(x * 2 + b); the other is a runner scripted in
// this file that computes the same graph by hand and can be told to perturb one tensor or to put
// a NaN into one, so the tests know exactly where the two runs diverge.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "parity/compare/comparator.h"
#include "parity/compare/judge.h"
#include "parity/core/logger.h"
#include "parity/runtime/ref/ref_runner.h"
#include "test_onnxrt_runner_helpers.h"

namespace parity::compare {
namespace {

Tensor floats(Shape shape, std::vector<float> values) {
  return Tensor::from_bytes(DType::kFloat32, std::move(shape), values.data(), values.size() * sizeof(float));
}

// y = relu(x * 2 + b), nodes "Mul_scaled", "Add_biased", "Relu_y". x: float32 [2, 3].
onnx::Model chain_model() {
  using runtime::onnxrt_testing::ModelBuilder;
  constexpr int kFloat = ::onnx::TensorProto::FLOAT;
  return ModelBuilder()
      .input({"x", kFloat, {int64_t{2}, int64_t{3}}})
      .output({"y", kFloat, {int64_t{2}, int64_t{3}}})
      .float_initializer("two", {1}, {2.0f})
      .float_initializer("b", {3}, {-1.0f, 0.0f, 1.0f})
      .node("Mul", {"x", "two"}, {"scaled"}, "Mul_scaled")
      .node("Add", {"scaled", "b"}, {"biased"}, "Add_biased")
      .node("Relu", {"biased"}, {"y"}, "Relu_y")
      .build();
}

// The chain computed by hand. `perturb` is added to element 0 of "biased" (and so flows into y);
// `nan_in` names a tensor whose element 1 becomes NaN.
class ScriptedRunner : public runtime::Runner {
 public:
  explicit ScriptedRunner(float perturb = 0, std::string nan_in = {})
      : Runner("scripted-runner"), perturb_(perturb), nan_in_(std::move(nan_in)) {}

  std::vector<NamedTensors> feeds_seen;

 protected:
  void activate_impl() override {}
  void deactivate_impl() override {}
  TensorMetadata input_metadata_impl() override {
    TensorMetadata metadata;
    metadata.add("x", DType::kFloat32, std::vector<Dim>{Dim::fixed(2), Dim::fixed(3)});
    return metadata;
  }
  NamedTensors infer_impl(const NamedTensors& feed) override {
    feeds_seen.push_back(feed);
    const float* x = feed.at(0).second.data<float>();
    const float bias[3] = {-1.0f, 0.0f, 1.0f};
    std::vector<float> scaled(6), biased(6), y(6);
    for (int i = 0; i < 6; ++i) {
      scaled[i] = x[i] * 2.0f;
      biased[i] = scaled[i] + bias[i % 3] + (i == 0 ? perturb_ : 0.0f);
      y[i] = std::max(biased[i], 0.0f);
    }
    NamedTensors produced = {{"scaled", floats({2, 3}, scaled)},
                             {"biased", floats({2, 3}, biased)},
                             {"y", floats({2, 3}, y)}};
    const char* nodes[] = {"Mul_scaled", "Add_biased", "Relu_y"};
    const char* ops[] = {"Mul", "Add", "Relu"};
    for (auto& [name, tensor] : produced)
      if (name == nan_in_) tensor.mutable_data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
    if (callback_)
      for (std::size_t i = 0; i < produced.size(); ++i)
        callback_({produced[i].first, produced[i].second, std::string(nodes[i]), std::string(ops[i])});
    NamedTensors outputs = {produced[2]};
    if (!callback_ && intermediates_.mode == runtime::IntermediateOutputs::Mode::kAll) {
      outputs.push_back(produced[0]);
      outputs.push_back(produced[1]);
    }
    return outputs;
  }

 private:
  float perturb_;
  std::string nan_in_;
};

class ComparatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Logger::global().set_silent(true);
    model_ = chain_model();
  }
  void TearDown() override { Logger::global().set_silent(false); }

  runtime::RefRunner make_ref() {
    return runtime::RefRunner([model = model_] { return model; });
  }
  static DataLoaderFunc seeded_loader(int iterations) {
    runtime::DataLoaderOptions options;
    options.iterations = iterations;
    return data_loader_from(runtime::DataLoader(options));
  }

  onnx::Model model_;
};

TEST_F(ComparatorTest, RunFeedsEveryRunnerTheSameInputsAndComparesTheirOutputs) {
  runtime::RefRunner ref = make_ref();
  ScriptedRunner same;
  int feeds_callbacks = 0;
  RunOptions options;
  options.on_feeds = [&](const std::vector<NamedTensors>& feeds) {
    ++feeds_callbacks;
    EXPECT_EQ(feeds.size(), 2u);
  };
  std::vector<NamedTensors> feeds;
  RunResults results = Comparator::run({&ref, &same}, seeded_loader(2), options, &feeds);

  EXPECT_EQ(feeds_callbacks, 1);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].runner_name, ref.name());
  EXPECT_EQ(results[1].runner_name, same.name());
  ASSERT_EQ(results[0].iterations.size(), 2u);
  ASSERT_EQ(same.feeds_seen.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const Tensor& given = same.feeds_seen[i].at(0).second;
    const Tensor& made = feeds[i].at(0).second;
    ASSERT_EQ(given.size(), made.size());
    for (int64_t k = 0; k < given.size(); ++k) EXPECT_EQ(given.data<float>()[k], made.data<float>()[k]);
  }
  // Two iterations draw from two seeds: the feeds differ.
  EXPECT_NE(feeds[0].at(0).second.data<float>()[0], feeds[1].at(0).second.data<float>()[0]);
  ASSERT_TRUE(results[0].iterations[0].runtime.has_value());

  AccuracyResult accuracy = Comparator::compare_accuracy(results);
  EXPECT_TRUE(accuracy.passed());
  ASSERT_EQ(accuracy.pairs.size(), 1u);
  EXPECT_EQ(accuracy.pairs[0].total_iterations(), 2);
}

TEST_F(ComparatorTest, HeldIntermediatesNameTheFirstDivergentNode) {
  runtime::RefRunner ref = make_ref();
  ScriptedRunner perturbed(0.5f);
  RunOptions options;
  options.intermediates = runtime::IntermediateOutputs::all();
  RunResults results = Comparator::run({&ref, &perturbed}, seeded_loader(1), options);
  ASSERT_NE(results[0].iterations[0].find("scaled"), nullptr);
  ASSERT_NE(results[1].iterations[0].find("biased"), nullptr);

  AccuracyResult accuracy = Comparator::compare_accuracy(results);
  EXPECT_FALSE(accuracy.passed());
  LayerwiseResult layerwise = layerwise_from_pair(accuracy.pairs.at(0), tensor_producers(model_));
  const LayerwiseEntry* first = layerwise.first_divergence();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->tensor, "biased");
  EXPECT_EQ(first->node, "Add_biased");
  EXPECT_EQ(first->op, "Add");
}

TEST_F(ComparatorTest, ExcludedOutputsAreDroppedAndPostprocessingAppliesTopK) {
  runtime::RefRunner ref = make_ref();
  RunOptions options;
  options.intermediates = runtime::IntermediateOutputs::all();
  options.exclude_outputs = {"scaled"};
  RunResults results = Comparator::run({&ref}, seeded_loader(1), options);
  EXPECT_EQ(results[0].iterations[0].find("scaled"), nullptr);
  ASSERT_NE(results[0].iterations[0].find("biased"), nullptr);

  Comparator::postprocess(results, {{"y", TopK{1, -1}}});
  const Tensor* top = results[0].iterations[0].find("y");
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->dtype(), DType::kInt64);
  EXPECT_EQ(top->shape(), (Shape{2, 1}));
}

TEST_F(ComparatorTest, DroppedIntermediatesAreNotReturned) {
  runtime::RefRunner ref = make_ref();
  RunOptions options;
  options.intermediates = runtime::IntermediateOutputs::all();
  options.drop_intermediates = true;
  RunResults results = Comparator::run({&ref}, seeded_loader(1), options);
  ASSERT_EQ(results[0].iterations[0].outputs.size(), 1u);
  EXPECT_EQ(results[0].iterations[0].outputs[0].first, "y");
}

TEST_F(ComparatorTest, StreamedLayerwiseFindsTheFirstDivergence) {
  runtime::RefRunner ref = make_ref();
  ScriptedRunner perturbed(0.5f);
  LayerwiseRunOptions options;
  options.validate = true;
  options.memory_budget = 0;  // every tensor of the first run through the spill file
  LayerwiseRun run = Comparator::run_layerwise(ref, perturbed, seeded_loader(1), options);

  EXPECT_FALSE(run.passed());
  EXPECT_EQ(run.comparison.runner0, ref.name());
  EXPECT_EQ(run.comparison.runner1, perturbed.name());
  ASSERT_EQ(run.comparison.entries.size(), 3u);
  const LayerwiseEntry* first = run.comparison.first_divergence();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->tensor, "biased");
  EXPECT_EQ(first->node, "Add_biased");
  EXPECT_TRUE(run.comparison.entries[0].comparison.passed);  // "scaled" matches
  EXPECT_GT(run.comparison.spilled_bytes, 0u);
  // Graph outputs of both runs are returned; validation checked every streamed tensor.
  ASSERT_EQ(run.results.size(), 2u);
  EXPECT_NE(run.results[1].iterations.at(0).find("y"), nullptr);
  ASSERT_EQ(run.validation.size(), 2u);
  EXPECT_EQ(run.validation[0].checked, 3);
  EXPECT_TRUE(run.validation[1].passed());
  EXPECT_FALSE(run.accuracy().passed());
}

TEST_F(ComparatorTest, StreamedLayerwisePassesForEqualRunsAndHonoursTheTensorList) {
  runtime::RefRunner ref = make_ref();
  ScriptedRunner same;
  LayerwiseRunOptions options;
  options.tensors = runtime::IntermediateOutputs::list({"scaled"});
  options.graph_outputs = {"y"};
  LayerwiseRun run = Comparator::run_layerwise(ref, same, seeded_loader(2), options);
  EXPECT_TRUE(run.passed());
  ASSERT_EQ(run.comparison.entries.size(), 4u);  // scaled and y, two iterations
  for (const auto& entry : run.comparison.entries) EXPECT_NE(entry.tensor, "biased");
  EXPECT_EQ(run.comparison.spilled_bytes, 0u);  // the default budget holds these tensors in memory
}

TEST_F(ComparatorTest, StreamedValidationNamesTheFirstNonFiniteTensor) {
  runtime::RefRunner ref = make_ref();
  ScriptedRunner with_nan(0.0f, "scaled");
  LayerwiseRunOptions options;
  options.validate = true;
  LayerwiseRun run = Comparator::run_layerwise(ref, with_nan, seeded_loader(1), options);
  ASSERT_EQ(run.validation.size(), 2u);
  EXPECT_TRUE(run.validation[0].passed());
  ASSERT_FALSE(run.validation[1].passed());
  EXPECT_EQ(run.validation[1].findings.front().tensor, "scaled");
  EXPECT_EQ(run.validation[1].findings.front().node, "Mul_scaled");
  EXPECT_EQ(run.validation[1].findings.front().counts.nan, 1);
  EXPECT_FALSE(run.passed());
}

TEST_F(ComparatorTest, StreamedLayerwiseAgainstHeldResults) {
  runtime::RefRunner ref = make_ref();
  RunOptions held_options;
  held_options.intermediates = runtime::IntermediateOutputs::all();
  RunResults held = Comparator::run({&ref}, seeded_loader(1), held_options);

  ScriptedRunner perturbed(0.5f);
  LayerwiseRun run = Comparator::run_layerwise(perturbed, held.at(0), /*live_is_first=*/true, seeded_loader(1));
  EXPECT_EQ(run.comparison.runner0, perturbed.name());
  EXPECT_EQ(run.comparison.runner1, ref.name());
  ASSERT_EQ(run.comparison.entries.size(), 3u);
  ASSERT_NE(run.comparison.first_divergence(), nullptr);
  EXPECT_EQ(run.comparison.first_divergence()->tensor, "biased");

  // Fail-fast stops comparing after the first mismatching tensor.
  ScriptedRunner again(0.5f);
  LayerwiseRunOptions options;
  options.fail_fast = true;
  LayerwiseRun stopped =
      Comparator::run_layerwise(again, held.at(0), /*live_is_first=*/false, seeded_loader(1), options);
  EXPECT_EQ(stopped.comparison.entries.size(), 2u);  // scaled (passed), biased (failed)
  EXPECT_EQ(stopped.comparison.runner0, ref.name());
}

TEST_F(ComparatorTest, FeedsThatDoNotFitTheFirstRunnerAreRejected) {
  runtime::RefRunner ref = make_ref();
  NamedTensors wrong = {{"x", floats({3}, {1, 2, 3})}};
  EXPECT_THROW(Comparator::run({&ref}, data_loader_from(std::vector<NamedTensors>{wrong})), InvalidInputError);
}

// The judge: the streamed/held decision `parity run` makes, and the verdict either way.
TEST_F(ComparatorTest, JudgeStreamsTwoRunnersComparedLayerwiseWithSimple) {
  runtime::RefRunner ref = make_ref();
  ScriptedRunner perturbed(0.5f);
  JudgeOptions options;
  options.tensors = runtime::IntermediateOutputs::all();
  options.streamable_simple = SimpleOptions{};
  options.validate = ValidateOptions{};
  Judge judge({&ref, &perturbed}, {}, options);
  ASSERT_TRUE(judge.streamed());
  Verdict verdict = judge.run(seeded_loader(1));
  EXPECT_TRUE(verdict.streamed);
  EXPECT_FALSE(verdict.passed);
  ASSERT_EQ(verdict.layerwise.size(), 1u);
  ASSERT_NE(verdict.layerwise[0].first_divergence(), nullptr);
  EXPECT_EQ(verdict.layerwise[0].first_divergence()->tensor, "biased");
  EXPECT_EQ(verdict.streamed_validation.size(), 2u);
  ASSERT_TRUE(verdict.validation.has_value());
  const auto report = verdict.report(1);
  EXPECT_EQ(report["passed"], false);
  EXPECT_EQ(report["layerwise"][0]["worst"].size(), 1u);
  EXPECT_EQ(report["streamed_validation"].size(), 2u);
  EXPECT_THROW(judge.run(seeded_loader(1)), InternalError);  // a judge runs once
}

TEST_F(ComparatorTest, JudgeHoldsRunsWhoseResultsAreAskedForOrNotComparedWithSimple) {
  runtime::RefRunner ref = make_ref();
  ScriptedRunner perturbed(0.5f);
  JudgeOptions options;
  options.tensors = runtime::IntermediateOutputs::all();
  options.model = [model = model_] { return model; };
  int results_seen = 0;
  options.on_results = [&](const RunResults& results) { results_seen = static_cast<int>(results.size()); };
  options.streamable_simple = SimpleOptions{};
  Judge judge({&ref, &perturbed}, {}, options);
  EXPECT_FALSE(judge.streamed());
  Verdict verdict = judge.run(seeded_loader(1));
  EXPECT_EQ(results_seen, 2);
  EXPECT_FALSE(verdict.passed);
  ASSERT_EQ(verdict.layerwise.size(), 1u);
  ASSERT_NE(verdict.layerwise[0].first_divergence(), nullptr);
  EXPECT_EQ(verdict.layerwise[0].first_divergence()->node, "Add_biased");  // from the model's nodes

  options.on_results = nullptr;
  options.streamable_simple.reset();  // a function other than plain `simple`
  EXPECT_FALSE(Judge({&ref, &perturbed}, {}, options).streamed());
}

TEST_F(ComparatorTest, JudgeComparesALiveRunnerWithHeldResults) {
  runtime::RefRunner ref = make_ref();
  RunResults held = Comparator::run({&ref}, seeded_loader(1));
  ScriptedRunner same;
  JudgeOptions options;
  options.validate = ValidateOptions{};
  options.validate_held = false;
  Verdict verdict = Judge({&same}, held, options).run(seeded_loader(1));
  EXPECT_FALSE(verdict.streamed);
  EXPECT_TRUE(verdict.passed);
  ASSERT_EQ(verdict.results.size(), 2u);
  EXPECT_EQ(verdict.results[1].runner_name, ref.name());
  ASSERT_TRUE(verdict.validation.has_value());
  for (const auto& output : verdict.validation->outputs) EXPECT_EQ(output.runner_name, same.name());
}

}  // namespace
}  // namespace parity::compare
