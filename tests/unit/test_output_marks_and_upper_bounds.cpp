// parity/onnx/modify_outputs.h and parity/onnx/unbounded_dds.h: marking graph outputs, finding and
// bounding unbounded data-dependent shapes.
#include <gtest/gtest.h>

#include "graph_test_helpers.h"
#include "parity/onnx/modify_outputs.h"
#include "parity/onnx/unbounded_dds.h"

namespace parity {
namespace {

using graph_test::Builder;

std::vector<std::string> output_names(const ::onnx::GraphProto& graph) {
  std::vector<std::string> names;
  for (const auto& output : graph.output()) names.push_back(output.name());
  return names;
}

// x -> Identity -> a -> Constant c -> Add(a, c) -> y
Builder chain() {
  Builder b;
  b.input("x", 1, {2});
  b.node("Identity", {"x"}, {"a"});
  auto* constant = b.node("Constant", {}, {"c"});
  auto* value = constant->add_attribute();
  value->set_name("value_float");
  value->set_type(::onnx::AttributeProto::FLOAT);
  value->set_f(1.0f);
  b.node("Add", {"a", "c"}, {"y"});
  b.output("y");
  return b;
}

TEST(ModifyOutputs, MarkAllSkipsConstantsAndKeepsKnownTypes) {
  Builder b = chain();
  EXPECT_EQ(onnx::markable_tensor_names(*b.g), (std::vector<std::string>{"a", "y"}));
  onnx::mark_all_outputs(*b.g);
  EXPECT_EQ(output_names(*b.g), (std::vector<std::string>{"a", "y"}));
  EXPECT_FALSE(b.g->output(0).has_type());  // nothing says what a is (no value_info)
  EXPECT_EQ(b.g->output(1).type().tensor_type().elem_type(), 1);  // y keeps its declared type
}

TEST(ModifyOutputs, MarkListDeduplicatesAndUnmarkKeepsOrder) {
  Builder b = chain();
  onnx::mark_outputs(*b.g, {"y", "c", "x", "y"});
  EXPECT_EQ(output_names(*b.g), (std::vector<std::string>{"y", "c", "x"}));
  EXPECT_EQ(b.g->output(2).type().tensor_type().elem_type(), 1);  // from the graph input
  onnx::unmark_outputs(*b.g, {"c", "a"});
  EXPECT_EQ(output_names(*b.g), (std::vector<std::string>{"y", "x"}));
}

TEST(ModifyOutputs, UnknownTensorNamesThrow) {
  Builder b = chain();
  EXPECT_THROW(onnx::mark_outputs(*b.g, {"nope"}), InvalidInputError);
  EXPECT_THROW(onnx::unmark_outputs(*b.g, {"nope"}), InvalidInputError);
  EXPECT_EQ(output_names(*b.g), (std::vector<std::string>{"y"}));  // unchanged after a refused mark
}

// x [4] -> ReduceMax -> m -> Cast -> limit; Range(start, limit, delta) -> r (no shape declared).
Builder unbounded_range() {
  Builder b;
  b.input("x", 1, {4});
  b.ints("start", {}, {0});
  b.ints("delta", {}, {1});
  b.node("ReduceMax", {"x"}, {"m"});
  b.node("Cast", {"m"}, {"limit"})->add_attribute()->set_name("to");
  b.g->mutable_node(1)->mutable_attribute(0)->set_type(::onnx::AttributeProto::INT);
  b.g->mutable_node(1)->mutable_attribute(0)->set_i(7);
  b.node("Range", {"start", "limit", "delta"}, {"r"});
  b.output("r", 7);
  return b;
}

TEST(UnboundedDds, FindsTheRuntimeLimitAndNotAConstantOne) {
  Builder b = unbounded_range();
  EXPECT_EQ(onnx::find_unbounded_dds_tensors(*b.g), (std::vector<std::string>{"limit"}));
  b.g->mutable_node(2)->set_input(1, "delta");  // an initializer: bounded
  EXPECT_TRUE(onnx::find_unbounded_dds_tensors(*b.g).empty());
}

TEST(UnboundedDds, BoundInsertsMinAfterTheProducer) {
  Builder b = unbounded_range();
  auto report = onnx::set_unbounded_dds_upper_bounds(*b.g, {.default_bound = 1000, .per_tensor = {}});
  ASSERT_EQ(report.applied.size(), 1u);
  EXPECT_EQ(report.applied[0], (std::pair<std::string, int64_t>{"limit", 1000}));
  std::vector<std::string> ops;
  for (const auto& node : b.g->node()) ops.push_back(node.op_type());
  EXPECT_EQ(ops, (std::vector<std::string>{"ReduceMax", "Cast", "Min", "Range"}));
  EXPECT_EQ(b.g->node(1).output(0), "limit_copy");
  EXPECT_EQ(b.g->node(2).input(0), "limit_copy");
  EXPECT_EQ(b.g->node(2).input(1), "limit_upper_bound");
  EXPECT_EQ(b.g->node(2).output(0), "limit");
  const auto& bound = b.g->initializer(b.g->initializer_size() - 1);
  EXPECT_EQ(bound.name(), "limit_upper_bound");
  EXPECT_EQ(bound.dims_size(), 0);
  ASSERT_EQ(bound.int64_data_size(), 1);
  EXPECT_EQ(bound.int64_data(0), 1000);
  // Bounded: found no more, and bounding again changes nothing.
  EXPECT_TRUE(onnx::find_unbounded_dds_tensors(*b.g).empty());
  EXPECT_TRUE(onnx::set_unbounded_dds_upper_bounds(*b.g, {.default_bound = 5, .per_tensor = {}}).applied.empty());
}

TEST(UnboundedDds, NamedBoundsWithoutDefaultAndErrors) {
  Builder b = unbounded_range();
  auto report = onnx::set_unbounded_dds_upper_bounds(*b.g, {.default_bound = {}, .per_tensor = {{"m", 3}}});
  EXPECT_EQ(report.not_unbounded, (std::vector<std::string>{"m"}));
  ASSERT_EQ(report.applied.size(), 1u);  // limit has no bound: no default given
  EXPECT_EQ(report.applied[0].first, "m");

  Builder unknown = unbounded_range();
  EXPECT_THROW(onnx::set_unbounded_dds_upper_bounds(*unknown.g, {.default_bound = {}, .per_tensor = {{"nope", 3}}}),
               InvalidInputError);
  EXPECT_THROW(onnx::set_unbounded_dds_upper_bounds(*unknown.g, {.default_bound = {}, .per_tensor = {{"x", 3}}}),
               InvalidInputError);
}

}  // namespace
}  // namespace parity
