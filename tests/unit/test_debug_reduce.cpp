// debug::reduce on small graphs with checks written in the test (a planted node's presence), the
// replay, candidate feeds; debug::CheckCommand's pass/fail rules on /bin/sh commands.
#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "graph_test_helpers.h"
#include "test_support.h"
#include "parity/debug/check_command.h"
#include "parity/debug/reduce.h"
#include "parity/onnx/model.h"
#include "parity/onnx/tensor_proto.h"

namespace parity {
namespace {

using graph_test::Builder;

// `branches` chains of two nodes from x, meeting in one Concat; the second node of branch
// `planted` is named "bad".
onnx::Model branches(int count, int planted) {
  Builder b;
  b.input("x", 1, {2, 3});
  std::vector<std::string> ends;
  for (int i = 0; i < count; ++i) {
    std::string first = "a" + std::to_string(i), second = "b" + std::to_string(i);
    b.node("Relu", {"x"}, {first}, "relu" + std::to_string(i));
    b.node(i == planted ? "Abs" : "Neg", {first}, {second}, i == planted ? "bad" : "neg" + std::to_string(i));
    ends.push_back(second);
  }
  b.node("Concat", ends, {"out"}, "concat")->add_attribute()->CopyFrom([] {
    ::onnx::AttributeProto axis;
    axis.set_name("axis");
    axis.set_type(::onnx::AttributeProto::INT);
    axis.set_i(1);
    return axis;
  }());
  b.output("out");
  return b.model;
}

bool contains_bad(const onnx::Model& model) {
  for (const auto& node : model->graph().node())
    if (node.name() == "bad") return true;
  return false;
}

debug::TensorValues values_of(const onnx::Model& model, int samples = 2) {
  std::vector<NamedTensors> feeds;
  for (int s = 0; s < samples; ++s) {
    Tensor x = Tensor::zeros(DType::kFloat32, {2, 3});
    for (int i = 0; i < 6; ++i) x.mutable_data<float>()[i] = static_cast<float>(i - 2 + s);
    feeds.push_back({{"x", x}});
  }
  return debug::run_full_model(model, feeds);
}

std::vector<std::string> names(const onnx::Model& model) {
  std::vector<std::string> out;
  for (const auto& node : model->graph().node()) out.push_back(node.name());
  return out;
}

TEST(DebugReduce, NeighbourhoodReducesBranchesMeetingLateToThePlantedNode) {
  for (auto mode : {debug::ReduceMode::kBisect, debug::ReduceMode::kLinear}) {
    auto model = branches(40, 23);
    auto values = values_of(model);
    debug::ReduceOptions options;
    options.mode = mode;
    options.reduce_neighbourhood = true;
    auto result = debug::reduce(model, values, [](const onnx::Model& m, int) { return contains_bad(m); }, options);
    EXPECT_EQ(names(result.reduced), std::vector<std::string>{"bad"});
    EXPECT_EQ(result.failing_node, "node 'bad' (Abs)");
    EXPECT_EQ(result.frozen_inputs, std::vector<std::string>{"a23"});
    EXPECT_EQ(result.original_nodes, 81);
    ASSERT_TRUE(result.min_good);
    EXPECT_FALSE(contains_bad(*result.min_good));
    // The frozen input's feeds are the whole model's values, per sample.
    auto feeds = debug::candidate_feeds(result.reduced, values);
    ASSERT_EQ(feeds.size(), 2u);
    for (std::size_t s = 0; s < 2; ++s) {
      ASSERT_EQ(feeds[s].size(), 1u);
      EXPECT_EQ(feeds[s][0].first, "a23");
      EXPECT_EQ(feeds[s][0].second.data<float>()[5], values[s].at("a23").data<float>()[5]);
    }
  }
}

TEST(DebugReduce, NoReductionPhasesKeepsTheModelsOutputs) {
  auto model = branches(8, 3);
  auto values = values_of(model);
  debug::ReduceOptions options;
  options.reduce_outputs = false;
  options.reduce_inputs = false;
  auto result = debug::reduce(model, values, [](const onnx::Model& m, int) { return contains_bad(m); }, options);
  EXPECT_EQ(result.reduced->graph().node_size(), 17);
  EXPECT_EQ(result.checks_run, 1);
}

TEST(DebugReduce, PassingWholeModelGoesOnAndKeepsTheWholeModelWhenNothingFails) {
  auto model = branches(4, 1);
  auto values = values_of(model);
  for (auto mode : {debug::ReduceMode::kBisect, debug::ReduceMode::kLinear}) {
    debug::ReduceOptions options;
    options.mode = mode;
    int checks = 0;
    auto result = debug::reduce(
        model, values,
        [&checks](const onnx::Model&, int) {
          ++checks;
          return false;
        },
        options);
    EXPECT_TRUE(result.whole_model_passes);
    EXPECT_FALSE(result.reduced_fails);
    EXPECT_EQ(result.reduced->graph().node_size(), 9);
    EXPECT_EQ(result.reduced->graph().output_size(), 1);
    EXPECT_EQ(result.failing_node, "");
    EXPECT_FALSE(result.min_good);
    EXPECT_GT(checks, 1);  // the search went on after the whole model
    EXPECT_EQ(result.checks_run, checks);
  }
  debug::ReduceOptions strict;
  strict.require_failing_model = true;
  EXPECT_THROW(debug::reduce(model, values, [](const onnx::Model&, int) { return false; }, strict),
               InvalidInputError);
}

TEST(DebugReduce, PassingWholeModelKeepsTheSmallestFailingCandidate) {
  // Fails only on candidates that hold the planted node without the Concat: never on the whole model.
  auto model = branches(12, 5);
  auto values = values_of(model);
  auto check = [](const onnx::Model& m, int) {
    for (const auto& node : m->graph().node())
      if (node.name() == "concat") return false;
    return contains_bad(m);
  };
  // Bisection (Polygraphy's, by default) assumes that failures only grow with the nodes kept; a linear scan,
  // or Parity's prefix search, finds the candidate anyway.
  for (auto [mode, neighbourhood] : {std::pair{debug::ReduceMode::kBisect, true},
                                     std::pair{debug::ReduceMode::kLinear, true},
                                     std::pair{debug::ReduceMode::kLinear, false}}) {
    debug::ReduceOptions options;
    options.mode = mode;
    options.reduce_neighbourhood = neighbourhood;
    auto result = debug::reduce(model, values, check, options);
    EXPECT_TRUE(result.whole_model_passes);
    EXPECT_TRUE(result.reduced_fails);
    EXPECT_TRUE(check(result.reduced, 0));
    EXPECT_EQ(names(result.reduced), std::vector<std::string>{"bad"});
  }
}

// Polygraphy's reducable model: x feeds a Relu and y the planted Abs, which meet in an Add read by two
// Identity outputs.
onnx::Model two_branches() {
  Builder b;
  b.input("x", 1, {2, 3});
  b.input("y", 1, {2, 3});
  b.node("Relu", {"x"}, {"a"}, "first");
  b.node("Abs", {"y"}, {"b"}, "bad");
  b.node("Add", {"a", "b"}, {"c"}, "add");
  b.node("Identity", {"c"}, {"out0"}, "copy0");
  b.node("Identity", {"c"}, {"out1"}, "copy1");
  b.output("out0");
  b.output("out1");
  return b.model;
}

debug::TensorValues values_of_two_inputs(const onnx::Model& model) {
  std::vector<NamedTensors> feeds;
  for (int s = 0; s < 2; ++s) {
    Tensor x = Tensor::zeros(DType::kFloat32, {2, 3}), y = Tensor::zeros(DType::kFloat32, {2, 3});
    for (int i = 0; i < 6; ++i) {
      x.mutable_data<float>()[i] = static_cast<float>(i - 2 + s);
      y.mutable_data<float>()[i] = static_cast<float>(3 - i - s);
    }
    feeds.push_back({{"x", x}, {"y", y}});
  }
  return debug::run_full_model(model, feeds);
}

TEST(DebugReduce, CutOffBranchesAreFrozenWithTheFirstSamplesValues) {
  for (bool neighbourhood : {false, true}) {
    SCOPED_TRACE(neighbourhood ? "--reduce-neighbourhood" : "Polygraphy's marking");
    auto model = two_branches();
    auto values = values_of_two_inputs(model);
    debug::ReduceOptions options;
    options.reduce_outputs = false;
    options.mode = debug::ReduceMode::kLinear;
    options.reduce_neighbourhood = neighbourhood;
    auto check = [](const onnx::Model& m, int) { return contains_bad(m); };
    // Without freezing, the Relu's output is a graph input fed per sample (by default the Relu is folded
    // away, its input x being cut off once y is marked).
    auto fed = debug::reduce(model, values, check, options);
    EXPECT_EQ(names(fed.reduced), (std::vector<std::string>{"bad", "add", "copy0", "copy1"}));
    EXPECT_EQ(fed.frozen_inputs, std::vector<std::string>{"a"});
    EXPECT_TRUE(fed.frozen_initializers.empty());
    EXPECT_EQ(fed.reduced->graph().input_size(), 2);
    // Frozen: an initializer holding the first sample's value; the first node's input stays the graph input.
    options.freeze_cut_branches = true;
    std::vector<std::string> announced;
    options.on_freeze = [&announced](const std::string& tensor) { announced.push_back(tensor); };
    auto frozen = debug::reduce(model, values, check, options);
    EXPECT_EQ(names(frozen.reduced), names(fed.reduced));
    EXPECT_TRUE(frozen.frozen_inputs.empty());
    EXPECT_EQ(frozen.frozen_initializers, std::vector<std::string>{"a"});
    ASSERT_EQ(frozen.reduced->graph().input_size(), 1);
    EXPECT_EQ(frozen.reduced->graph().input(0).name(), "y");
    ASSERT_EQ(frozen.reduced->graph().initializer_size(), 1);
    const auto& initializer = frozen.reduced->graph().initializer(0);
    EXPECT_EQ(initializer.name(), "a");
    Tensor value = onnx::tensor_from_proto(initializer, {});
    const Tensor& first = values[0].at("a");
    ASSERT_EQ(value.shape(), first.shape());
    for (int i = 0; i < 6; ++i) EXPECT_EQ(value.data<float>()[i], first.data<float>()[i]);
    EXPECT_NE(first.data<float>()[5], values[1].at("a").data<float>()[5]);  // the samples differ
    EXPECT_FALSE(announced.empty());
    // The feeds hold only the remaining graph input, y.
    auto feeds = debug::candidate_feeds(frozen.reduced, values);
    ASSERT_EQ(feeds.size(), 2u);
    EXPECT_EQ(feeds[0].size(), 1u);
  }
}

// MatMuls with 256 KB weights (raw_data, as exporters write them) around the planted Abs, saved to `path`.
void save_weighted_chain(const std::filesystem::path& path) {
  Builder b;
  b.input("x", 1, {1, 256});
  for (int i = 0; i < 3; ++i) {
    Tensor w = Tensor::zeros(DType::kFloat32, {256, 256});
    for (int64_t e = 0; e < w.size(); ++e) w.mutable_data<float>()[e] = static_cast<float>((e + i) % 7) / 256.0f;
    *b.g->add_initializer() = onnx::tensor_to_proto(w, "w" + std::to_string(i));
  }
  b.node("MatMul", {"x", "w0"}, {"m0"}, "mm0");
  b.node("Relu", {"m0"}, {"r0"}, "relu0");
  b.node("MatMul", {"r0", "w1"}, {"m1"}, "mm1");
  b.node("Abs", {"m1"}, {"a1"}, "bad");
  b.node("MatMul", {"a1", "w2"}, {"m2"}, "mm2");
  b.node("Relu", {"m2"}, {"out"}, "relu2");
  b.output("out");
  onnx::save_model(b.model, path);
}

// Candidates share the weights: with the model loaded as debug reduce loads it (large weights left in the
// file), every candidate's weight is a reference to the same bytes of the model file, never a copy.
TEST(DebugReduce, CandidatesReferToTheModelFilesWeightsInsteadOfCopyingThem) {
  testing_support::TempDir dir("parity-reduce-weights");
  save_weighted_chain(dir / "chain.onnx");
  onnx::LoadOptions load_options;
  load_options.lazy_weights = true;
  onnx::Model model = onnx::load_model(dir / "chain.onnx", load_options);
  std::map<std::string, onnx::ExternalLocation> source;
  for (const auto& initializer : model->graph().initializer()) {
    ASSERT_TRUE(onnx::uses_external_data(initializer)) << initializer.name();
    source.emplace(initializer.name(), onnx::resolve_external_location(initializer, model.base_dir));
  }
  ASSERT_EQ(source.size(), 3u);
  Tensor x = Tensor::zeros(DType::kFloat32, {1, 256});
  for (int i = 0; i < 256; ++i) x.mutable_data<float>()[i] = static_cast<float>(i % 5) - 2.0f;
  auto values = debug::run_full_model(model, {{{"x", x}}});
  for (bool neighbourhood : {false, true}) {
    SCOPED_TRACE(neighbourhood ? "--reduce-neighbourhood" : "Polygraphy's marking");
    debug::ReduceOptions options;
    options.reduce_neighbourhood = neighbourhood;
    int weights_seen = 0;
    auto check = [&](const onnx::Model& candidate, int) {
      for (const auto& initializer : candidate->graph().initializer()) {
        EXPECT_FALSE(initializer.has_raw_data()) << initializer.name();
        EXPECT_TRUE(onnx::uses_external_data(initializer)) << initializer.name();
        auto location = onnx::resolve_external_location(initializer, candidate.base_dir);
        EXPECT_EQ(location.file, source.at(initializer.name()).file);
        EXPECT_EQ(location.offset, source.at(initializer.name()).offset);
        ++weights_seen;
      }
      return contains_bad(candidate);
    };
    auto result = debug::reduce(model, values, check, options);
    EXPECT_GT(weights_seen, 3);
    EXPECT_TRUE(contains_bad(result.reduced));
    for (const auto& initializer : result.reduced->graph().initializer())
      EXPECT_TRUE(onnx::uses_external_data(initializer)) << initializer.name();
  }
}

// Polygraphy's bisection marks the outputs of the nodes in the middle first and never the first node's alone:
// with the first node failing it keeps the Add too (3 nodes, as Polygraphy's test asserts); a linear scan, or
// Parity's --reduce-neighbourhood, keeps the failing node alone.
TEST(DebugReduce, DefaultIsPolygraphysMarkingWithItsBisection) {
  auto model = two_branches();
  auto values = values_of_two_inputs(model);
  auto check = [](const onnx::Model& m, int) {
    for (const auto& node : m->graph().node())
      if (node.name() == "first") return true;
    return false;
  };
  debug::ReduceOptions options;
  options.freeze_cut_branches = true;
  auto bisect = debug::reduce(model, values, check, options);
  EXPECT_EQ(names(bisect.reduced), (std::vector<std::string>{"first", "bad", "add"}));
  EXPECT_EQ(bisect.failing_node, "node 'add' (Add)");
  EXPECT_EQ(bisect.reduced->graph().output(0).name(), "c");
  options.mode = debug::ReduceMode::kLinear;
  EXPECT_EQ(names(debug::reduce(model, values, check, options).reduced), std::vector<std::string>{"first"});
  options.mode = debug::ReduceMode::kBisect;
  options.reduce_neighbourhood = true;
  EXPECT_EQ(names(debug::reduce(model, values, check, options).reduced), std::vector<std::string>{"first"});
}

TEST(DebugReduce, ReplayAnswersEveryCheckAndBelongsToItsModel) {
  auto model = branches(30, 7);
  auto values = values_of(model);
  auto replay = std::filesystem::temp_directory_path() / "parity_test_debug_replay.json";
  debug::ReduceOptions save;
  save.save_replay = replay;
  auto first = debug::reduce(model, values, [](const onnx::Model& m, int) { return contains_bad(m); }, save);
  debug::ReduceOptions load;
  load.load_replay = replay;
  auto again = debug::reduce(
      model, values, [](const onnx::Model&, int) -> bool { throw std::logic_error("no check expected"); }, load);
  EXPECT_EQ(again.checks_run, 0);
  EXPECT_EQ(again.checks_replayed, first.checks_run);
  EXPECT_EQ(onnx::serialize_model(*again.reduced), onnx::serialize_model(*first.reduced));
  // A replay of the other reduction is refused.
  debug::ReduceOptions neighbourhood = load;
  neighbourhood.reduce_neighbourhood = true;
  EXPECT_THROW(debug::reduce(model, values, [](const onnx::Model& m, int) { return contains_bad(m); }, neighbourhood),
               FileError);
  auto other = branches(5, 1);
  EXPECT_THROW(debug::reduce(other, values_of(other), [](const onnx::Model& m, int) { return contains_bad(m); },
                             load),
               FileError);
  std::filesystem::remove(replay);
}

debug::CheckOutcome run_sh(const std::string& script, std::vector<int> fail_codes = {},
                           std::vector<int> ignore = {}, std::vector<std::string> regexes = {}) {
  return debug::CheckCommand({{"/bin/sh", "-c", script}, fail_codes, ignore, regexes}).run();
}

TEST(CheckCommand, PolygraphysPassFailRules) {
  EXPECT_FALSE(run_sh("exit 0").failed);
  auto failed = run_sh("echo out; echo err >&2; exit 3");
  EXPECT_TRUE(failed.failed);
  EXPECT_EQ(failed.exit_code, 3);
  EXPECT_EQ(failed.output, "out\nerr\n");
  EXPECT_EQ(failed.standard_output, "out\n");  // each stream alone too, for --show-output's two blocks
  EXPECT_EQ(failed.standard_error, "err\n");
  EXPECT_FALSE(run_sh("exit 3", {2}).failed);              // not a --fail-code
  EXPECT_TRUE(run_sh("exit 2", {2}).failed);
  EXPECT_FALSE(run_sh("exit 3", {}, {3}).failed);          // ignored
  EXPECT_TRUE(run_sh("echo BAD; exit 0", {}, {}, {"B.D"}).failed);   // a regex alone decides
  EXPECT_FALSE(run_sh("echo ok; exit 1", {}, {}, {"B.D"}).failed);
  EXPECT_FALSE(run_sh("echo ok; exit 2", {2}, {}, {"B.D"}).failed);  // code and regex both needed
  EXPECT_TRUE(run_sh("echo BAD; exit 2", {2}, {}, {"B.D"}).failed);
}

TEST(CheckCommand, ReadsBothStreamsPastAPipeBufferEach) {
  // 200 KB on each stream, stderr first: a reader of one pipe at a time would deadlock.
  auto outcome = run_sh("head -c 200000 /dev/zero | tr '\\0' e >&2; head -c 200000 /dev/zero | tr '\\0' o; exit 1");
  EXPECT_TRUE(outcome.failed);
  EXPECT_EQ(outcome.standard_error, std::string(200000, 'e'));
  EXPECT_EQ(outcome.standard_output, std::string(200000, 'o'));
  EXPECT_EQ(outcome.output.size(), 400000u);
}

TEST(CheckCommand, MissingProgramAndBadRegexAreErrors) {
  EXPECT_THROW(debug::CheckCommand({{"parity-no-such-program"}, {}, {}, {}}), InvalidInputError);
  EXPECT_THROW(debug::CheckCommand({{"/nonexistent/check"}, {}, {}, {}}), InvalidInputError);
  EXPECT_THROW(debug::CheckCommand({{}, {}, {}, {}}), InvalidInputError);
  EXPECT_THROW(debug::CheckCommand({{"/bin/sh"}, {}, {}, {"("}}), InvalidInputError);
}

}  // namespace
}  // namespace parity
