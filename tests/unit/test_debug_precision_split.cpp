// The split mechanism of debug precision: which nodes a cut can fall between, the segments for a
// kept set (what each reads and hands on), and a split run equal to the whole model's when both
// sides run on the reference interpreter.
#include <gtest/gtest.h>

#include "graph_test_helpers.h"
#include "parity/debug/precision_split.h"
#include "parity/runtime/ref/ref_runner.h"

namespace parity::graph_test {
namespace {

// x -> a = Relu(x) -> b = Neg(a) -> dead = Abs(a) (read by nothing) -> c = Add(a, b) -> y = Mul(c, k),
// where k = Add(one, one) depends on no input (a constant, left out of the cut positions).
onnx::Model split_model() {
  Builder b;
  b.input("x", 1, {2, 3});
  b.floats("one", {1}, {1.0f});
  b.node("Relu", {"x"}, {"a"}, "relu");
  b.node("Add", {"one", "one"}, {"k"}, "constant_two");
  b.node("Neg", {"a"}, {"b"}, "neg");
  b.node("Abs", {"a"}, {"dead"}, "dead_abs");
  b.node("Add", {"a", "b"}, {"c"}, "sum");
  b.node("Mul", {"c", "k"}, {"y"}, "scale");
  b.output("y");
  EXPECT_TRUE(onnx::infer_shapes(*b.model).ok);
  return b.model;
}

TEST(DebugPrecisionSplit, SearchSpaceLeavesConstantsOutAndMatchesKeepEntries) {
  auto model = split_model();
  auto space = debug::split_search_space(model, {"neg"});
  std::vector<std::string> names;
  for (const auto& node : space.nodes) names.push_back(node.name);
  EXPECT_EQ(names, (std::vector<std::string>{"relu", "neg", "dead_abs", "sum", "scale"}));
  EXPECT_EQ(space.always_kept, (std::vector<std::size_t>{1}));
  EXPECT_THROW(debug::split_search_space(model, {"no_such_node"}), InvalidInputError);
}

TEST(DebugPrecisionSplit, SegmentsReadFromEarlierOnesAndDropDeadRuns) {
  auto model = split_model();
  auto space = debug::split_search_space(model, {});
  // Keeping 'neg' and the dead Abs: relu | neg, dead_abs (high) | sum, scale. The dead Abs hands
  // nothing on, so only 'b' leaves the kept run.
  auto segments = debug::split_segments(model, space, {1, 2});
  ASSERT_EQ(segments.size(), 3u);
  EXPECT_FALSE(segments[0].high_precision);
  EXPECT_EQ(segments[0].inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(segments[0].outputs, (std::vector<std::string>{"a"}));
  EXPECT_TRUE(segments[1].high_precision);
  EXPECT_EQ(segments[1].inputs, (std::vector<std::string>{"a"}));
  EXPECT_EQ(segments[1].outputs, (std::vector<std::string>{"b"}));
  EXPECT_EQ(segments[2].inputs, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(segments[2].outputs, (std::vector<std::string>{"y"}));
  // Keeping only the dead node: its run hands nothing on and is left out.
  segments = debug::split_segments(model, space, {2});
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_FALSE(segments[0].high_precision);
  EXPECT_FALSE(segments[1].high_precision);
  // Keeping nothing: one run, the whole model.
  segments = debug::split_segments(model, space, {});
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(segments[0].outputs, (std::vector<std::string>{"y"}));
}

TEST(DebugPrecisionSplit, SplitRunHandsTensorsAcrossLikeTheWholeModel) {
  auto model = split_model();
  auto space = debug::split_search_space(model, {});
  std::vector<bool> sides;
  debug::SplitPrecisionRunner runner(model, debug::split_segments(model, space, {1}),
                                     [&](runtime::ModelLoader part, bool high_precision) {
                                       sides.push_back(high_precision);
                                       return std::make_unique<runtime::RefRunner>(std::move(part));
                                     });
  const NamedTensors feed = make_feed(model);
  runtime::ActiveRunner active(runner);
  auto outputs = active->infer(feed);
  EXPECT_EQ(sides, (std::vector<bool>{false, true, false}));
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].first, "y");
  EXPECT_EQ(max_abs_diff(outputs[0].second, find(run(model, feed), "y")), 0.0);
  // A second inference reuses the segments' runners.
  active->infer(feed);
  EXPECT_EQ(sides.size(), 3u);
}

}  // namespace
}  // namespace parity::graph_test
