// Graph passes (cleanup, toposort, extract, insert) and the passes evaluated by the
// reference interpreter (constant folding, lint). Every transformed model is run on the
// reference interpreter and compared with the original.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>

#include <gtest/gtest.h>

#include "parity/core/error.h"
#include "parity/core/values.h"
#include "parity/onnx/passes.h"
#include "parity/runtime/data_loader.h"
#include "parity/runtime/ref/interpreter.h"
#include "parity/runtime/passes/fold_constants.h"
#include "parity/runtime/passes/lint.h"

#include "graph_test_helpers.h"

namespace parity {
namespace {

using namespace graph_test;
using ::onnx::GraphProto;
using ::onnx::NodeProto;

// --- constant folding ---

// x [2,3,4] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 1)), [-1])) + Constant: the whole shape
// chain is foldable because x's shape is static.
Builder shape_chain_model() {
  Builder b;
  b.input("x", 1, {2, 3, 4});
  b.output("z");
  b.ints("one", {}, {1});
  b.ints("axes0", {1}, {0});
  b.ints("minus_one", {1}, {-1});
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "one"}, {"d"});
  b.node("Unsqueeze", {"d", "axes0"}, {"du"});
  b.node("Concat", {"du", "minus_one"}, {"new_shape"})->add_attribute()->CopyFrom([] {
    ::onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(::onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  b.node("Reshape", {"x", "new_shape"}, {"y"});
  auto* c = b.node("Constant", {}, {"c"});
  auto* value = c->add_attribute();
  value->set_name("value_floats");
  value->set_type(::onnx::AttributeProto::FLOATS);
  value->add_floats(0.5f);
  b.node("Add", {"y", "c"}, {"z"});
  return b;
}

TEST(FoldConstants, FoldsShapeGatherUnsqueezeChainOfStaticShape) {
  Builder b = shape_chain_model();
  auto feed = make_feed(b.model);
  auto before = run(b.model, feed);
  onnx::Model folded = copy_of(b.model);
  auto report = runtime::fold_constants(folded);
  const auto& g = folded->graph();
  EXPECT_EQ(g.node_size(), 2) << g.DebugString();
  EXPECT_EQ(count_op(g, "Reshape"), 1);
  EXPECT_EQ(count_op(g, "Add"), 1);
  EXPECT_EQ(report.nodes_before, 7);
  EXPECT_EQ(report.nodes_after, 2);
  EXPECT_GE(report.shapes_folded, 1);
  auto after = run(folded, feed);
  EXPECT_EQ(max_abs_diff(find(before, "z"), find(after, "z")), 0.0);
  onnx::check_model(folded);
}

TEST(FoldConstants, GatherOfStaticDimFoldsButDynamicDimStays) {
  Builder b;
  b.input("x", 1, {-1, 3});
  b.output("static_dim", 7);
  b.output("dynamic_dim", 7);
  b.ints("zero", {}, {0});
  b.ints("one", {}, {1});
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "one"}, {"static_dim"});
  b.node("Gather", {"s", "zero"}, {"dynamic_dim"});
  auto feed = make_feed(b.model, {{"x", {5, 3}}});
  auto before = run(b.model, feed);
  onnx::Model folded = copy_of(b.model);
  runtime::fold_constants(folded);
  const auto& g = folded->graph();
  EXPECT_EQ(count_op(g, "Shape"), 1);
  EXPECT_EQ(count_op(g, "Gather"), 1);  // only the dynamic one
  bool static_is_initializer = false;
  for (const auto& t : g.initializer()) static_is_initializer |= t.name() == "static_dim";
  EXPECT_TRUE(static_is_initializer);
  auto after = run(folded, feed);
  EXPECT_EQ(find(after, "static_dim").data<int64_t>()[0], 3);
  EXPECT_EQ(find(after, "dynamic_dim").data<int64_t>()[0], find(before, "dynamic_dim").data<int64_t>()[0]);
}

TEST(FoldConstants, NoFoldShapesKeepsShapeNodes) {
  Builder b = shape_chain_model();
  onnx::Model folded = copy_of(b.model);
  runtime::FoldOptions options;
  options.fold_shapes = false;
  runtime::fold_constants(folded, options);
  EXPECT_EQ(count_op(folded->graph(), "Shape"), 1);
}

TEST(FoldConstants, SizeThresholdLeavesLargeResultsComputed) {
  Builder b;
  b.input("x", 1, {64, 64});
  b.output("y");
  b.floats("small", {1}, {2.0f});
  b.ints("big_shape", {2}, {64, 64});
  b.node("Expand", {"small", "big_shape"}, {"big"});  // 16 KiB
  b.node("Mul", {"x", "big"}, {"y"});
  onnx::Model with_threshold = copy_of(b.model);
  runtime::FoldOptions options;
  options.size_threshold = 1024;
  auto report = runtime::fold_constants(with_threshold, options);
  EXPECT_EQ(count_op(with_threshold->graph(), "Expand"), 1);
  EXPECT_GE(report.skipped_over_threshold, 1);
  onnx::Model without = copy_of(b.model);
  runtime::fold_constants(without);
  EXPECT_EQ(count_op(without->graph(), "Expand"), 0);
  auto feed = make_feed(b.model);
  EXPECT_EQ(max_abs_diff(find(run(with_threshold, feed), "y"), find(run(without, feed), "y")), 0.0);
}

TEST(FoldConstants, InlinesIfWithConstantCondition) {
  Builder b;
  b.input("x", 1, {3});
  b.output("y");
  auto* cond = b.g->add_initializer();
  cond->set_name("cond");
  cond->set_data_type(9);
  cond->add_int32_data(1);
  auto* node = b.node("If", {"cond"}, {"y"});
  auto make_branch = [](const std::string& op, const std::string& out) {
    GraphProto branch;
    branch.set_name(op + "_branch");
    auto* n = branch.add_node();
    n->set_op_type(op);
    n->add_input("x");
    n->add_output(out);
    auto* o = branch.add_output();
    o->set_name(out);
    o->mutable_type()->mutable_tensor_type()->set_elem_type(1);
    return branch;
  };
  auto* then_attr = node->add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(::onnx::AttributeProto::GRAPH);
  *then_attr->mutable_g() = make_branch("Neg", "then_out");
  auto* else_attr = node->add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(::onnx::AttributeProto::GRAPH);
  *else_attr->mutable_g() = make_branch("Abs", "else_out");
  auto feed = make_feed(b.model);
  auto before = run(b.model, feed);
  onnx::Model folded = copy_of(b.model);
  auto report = runtime::fold_constants(folded);
  EXPECT_EQ(report.ifs_inlined, 1);
  EXPECT_EQ(count_op(folded->graph(), "If"), 0);
  EXPECT_EQ(count_op(folded->graph(), "Neg"), 1);
  EXPECT_EQ(max_abs_diff(find(before, "y"), find(run(folded, feed), "y")), 0.0);
}

// Two constant chains into x: a+b -> *b folds; Neg(a) -> Gather(index 10 of 3) fails to evaluate.
Builder partially_foldable_model() {
  Builder b;
  b.input("x", 1, {3});
  b.output("y");
  b.floats("a", {3}, {1, 1, 1});
  b.floats("b", {3}, {2, 2, 2});
  b.ints("out_of_range", {1}, {10});
  b.node("Add", {"a", "b"}, {"good"});
  b.node("Mul", {"good", "b"}, {"good2"});
  b.node("Neg", {"a"}, {"neg"});
  b.node("Gather", {"neg", "out_of_range"}, {"bad"});
  b.node("Add", {"x", "good2"}, {"y0"});
  b.node("Add", {"y0", "bad"}, {"y"});
  return b;
}

TEST(FoldConstants, PartitioningDecidesWhatAFailingNodeKeepsFromFolding) {
  Builder b = partially_foldable_model();
  auto ops_after = [&](runtime::FoldPartitioning partitioning) {
    onnx::Model folded = copy_of(b.model);
    runtime::FoldOptions options;
    options.partitioning = partitioning;
    auto report = runtime::fold_constants(folded, options);
    EXPECT_GE(report.failed_evaluations, 1);
    std::vector<std::string> ops;
    for (const auto& node : folded->graph().node()) ops.push_back(node.op_type());
    return ops;
  };
  using P = runtime::FoldPartitioning;
  EXPECT_EQ(ops_after(P::kNone), (std::vector<std::string>{"Add", "Mul", "Neg", "Gather", "Add", "Add"}));
  EXPECT_EQ(ops_after(P::kBasic), (std::vector<std::string>{"Neg", "Gather", "Add", "Add"}));
  EXPECT_EQ(ops_after(P::kRecursive), (std::vector<std::string>{"Gather", "Add", "Add"}));
  EXPECT_EQ(runtime::parse_fold_partitioning("recursive"), P::kRecursive);
  EXPECT_NE(error_of([] { runtime::parse_fold_partitioning("greedy"); }).find("'greedy'"), std::string::npos);
}

void expect_fold_keeps_outputs(const std::string& path,
                               std::vector<std::pair<std::string, std::vector<int64_t>>> shapes,
                               std::vector<std::pair<std::string, Tensor>> fixed = {}) {
  onnx::Model model = onnx::load_model(path);
  onnx::infer_shapes(*model);
  auto feed = make_feed(model, shapes);
  for (auto& [name, t] : fixed)
    for (auto& [n, v] : feed)
      if (n == name) v = t;
  auto before = run(model, feed);
  onnx::Model folded = copy_of(model);
  auto report = runtime::fold_constants(folded);
  EXPECT_LT(report.nodes_after, report.nodes_before);
  onnx::check_model(folded);
  auto after = run(folded, feed);
  ASSERT_EQ(before.size(), after.size());
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i].first, after[i].first);
    EXPECT_LE(max_abs_diff(before[i].second, after[i].second), 1e-5) << before[i].first;
  }
  std::printf("[ info ] %s: %lld -> %lld nodes in %d passes\n", path.c_str(),
              static_cast<long long>(report.nodes_before), static_cast<long long>(report.nodes_after), report.passes);
}

TEST(FoldConstants, SharedModelsKeepTheirOutputs) {
  expect_fold_keeps_outputs(kShared + "ppocrv4_det.onnx", {{"x", {1, 3, 64, 64}}});
  int64_t sr = 16000;
  expect_fold_keeps_outputs(kShared + "silero_vad_v5.onnx", {{"input", {1, 512}}, {"state", {2, 1, 128}}},
                            {{"sr", Tensor::from_bytes(DType::kInt64, {}, &sr, sizeof(sr))}});
}

// --- cleanup, toposort ---

TEST(GraphPasses, CleanupRemovesDeadNodesAndInitializers) {
  Builder b;
  b.input("x", 1, {2});
  b.input("unused", 1, {2});
  b.output("y");
  b.floats("w", {2}, {1, 2});
  b.floats("dead_w", {2}, {1, 2});
  b.node("Mul", {"x", "w"}, {"y"});
  b.node("Add", {"x", "dead_w"}, {"dead"});
  auto report = onnx::cleanup(*b.g, {.remove_unused_graph_inputs = true});
  EXPECT_EQ(report.nodes_removed, 1);
  EXPECT_EQ(report.initializers_removed, 1);
  EXPECT_EQ(report.inputs_removed, 1);
  EXPECT_EQ(b.g->node_size(), 1);
  EXPECT_EQ(b.g->input_size(), 1);
}

TEST(GraphPasses, ToposortOrdersAndNamesACycle) {
  Builder b;
  b.input("x", 1, {2});
  b.output("z");
  b.node("Relu", {"y"}, {"z"});
  b.node("Neg", {"x"}, {"y"});
  onnx::toposort(*b.g);
  EXPECT_EQ(b.g->node(0).op_type(), "Neg");
  Builder cyclic;
  cyclic.input("x", 1, {2});
  cyclic.output("z");
  cyclic.node("Add", {"x", "w"}, {"v"}, "first");
  cyclic.node("Relu", {"v"}, {"w"}, "second");
  cyclic.node("Neg", {"v"}, {"z"});
  auto message = error_of([&] { onnx::toposort(*cyclic.g); });
  EXPECT_NE(message.find("cycle"), std::string::npos) << message;
  EXPECT_TRUE(message.find("'first'") != std::string::npos || message.find("'second'") != std::string::npos)
      << message;
}

// --- insert ---

TEST(GraphPasses, ParseAttributeFollowsPolygraphyRules) {
  auto a = onnx::parse_attribute("axis", "1");
  EXPECT_EQ(a.type(), ::onnx::AttributeProto::INT);
  EXPECT_EQ(a.i(), 1);
  a = onnx::parse_attribute("alpha", "0.5");
  EXPECT_EQ(a.type(), ::onnx::AttributeProto::FLOAT);
  EXPECT_FLOAT_EQ(a.f(), 0.5f);
  a = onnx::parse_attribute("mode", "'53'");
  EXPECT_EQ(a.type(), ::onnx::AttributeProto::STRING);
  EXPECT_EQ(a.s(), "53");
  a = onnx::parse_attribute("mode", "linear");
  EXPECT_EQ(a.type(), ::onnx::AttributeProto::STRING);
  a = onnx::parse_attribute("perm", "[0, 2, 1]");
  EXPECT_EQ(a.type(), ::onnx::AttributeProto::INTS);
  ASSERT_EQ(a.ints_size(), 3);
  EXPECT_EQ(a.ints(2), 1);
  a = onnx::parse_attribute("scales", "[1, 2.5]");
  EXPECT_EQ(a.type(), ::onnx::AttributeProto::FLOATS);
  EXPECT_FLOAT_EQ(a.floats(1), 2.5f);
  a = onnx::parse_attribute("names", "['a','b']");
  EXPECT_EQ(a.type(), ::onnx::AttributeProto::STRINGS);
  for (const char* bad : {"[1,2", "1,2]", "'abc", "[1,'a']", "[[1],[2]]", ""})
    EXPECT_NE(error_of([&] { onnx::parse_attribute("k", bad); }), "<no error>") << bad;
}

TEST(GraphPasses, InsertReplacesTheSubgraphBetweenTensors) {
  onnx::Model model = onnx::load_model(kExamples + "small_cnn.onnx");
  auto feed = make_feed(model, {{"image", {2, 3, 32, 32}}});
  auto before = run(model, feed);
  onnx::Model edited = copy_of(model);
  onnx::InsertNodeOptions options;
  options.inputs = {"bn1_out"};
  options.outputs = {"relu1_out"};
  options.op = "LeakyRelu";
  options.name = "inserted";
  options.attributes = {onnx::parse_attribute("alpha", "0.0")};
  onnx::insert_node(*edited, options);
  EXPECT_EQ(count_op(edited->graph(), "LeakyRelu"), 1);
  EXPECT_EQ(count_op(edited->graph(), "Relu"), 1);  // relu2 only
  onnx::check_model(edited);
  EXPECT_EQ(max_abs_diff(find(before, "probabilities"), find(run(edited, feed), "probabilities")), 0.0);
  auto missing = error_of([&] {
    onnx::Model m = copy_of(model);
    onnx::InsertNodeOptions bad = options;
    bad.inputs = {"no_such_tensor"};
    onnx::insert_node(*m, bad);
  });
  EXPECT_NE(missing.find("'no_such_tensor'"), std::string::npos) << missing;
}

// --- extract ---

TEST(GraphPasses, ExtractedSubgraphMatchesTheOriginalIntermediates) {
  onnx::Model model = onnx::load_model(kExamples + "small_cnn.onnx");
  onnx::infer_shapes(*model);
  auto feed = make_feed(model, {{"image", {2, 3, 32, 32}}});
  auto original = run(model, feed, {"relu1_out", "pool2_out"});
  onnx::Model sub = copy_of(model);
  auto infos = onnx::known_value_infos(sub->graph());
  onnx::extract_subgraph(*sub, {{"relu1_out", DType::kFloat32, infos.at("relu1_out").shape}},
                         {{"pool2_out", DType::kFloat32, std::nullopt}});
  onnx::check_model(sub);
  EXPECT_EQ(sub->graph().node_size(), 5);  // pool1 conv2 bn2 relu2 pool2
  NamedTensors sub_feed = {{"relu1_out", find(original, "relu1_out")}};
  auto result = run(sub, sub_feed);
  EXPECT_EQ(max_abs_diff(find(result, "pool2_out"), find(original, "pool2_out")), 0.0);
}

TEST(GraphPasses, ExtractRejectsUnknownAndUnreachableTensors) {
  onnx::Model model = onnx::load_model(kExamples + "small_cnn.onnx");
  auto attempt = [&](std::vector<onnx::ExtractTensor> in, std::vector<onnx::ExtractTensor> out) {
    onnx::Model m = copy_of(model);
    return error_of([&] { onnx::extract_subgraph(*m, in, out); });
  };
  auto f32 = DType::kFloat32;
  auto msg = attempt({{"relu1_out", f32, std::vector<Dim>{}}}, {{"nonexistent", f32, std::nullopt}});
  EXPECT_NE(msg.find("'nonexistent'"), std::string::npos) << msg;
  // pool2_out needs relu1_out's producers, which read 'image', not given.
  msg = attempt({{"conv2_out", f32, std::vector<Dim>{}}}, {{"pool1_out", f32, std::nullopt}});
  EXPECT_NE(msg.find("'image'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'pool1_out'"), std::string::npos) << msg;
}

TEST(GraphPasses, MakeGraphInputsCutsTheGraphAtComputedTensors) {
  onnx::Model model = onnx::load_model(kExamples + "small_cnn.onnx");
  auto feed = make_feed(model, {{"image", {2, 3, 32, 32}}});
  auto original = run(model, feed, {"relu1_out"});
  onnx::Model cut = copy_of(model);
  onnx::infer_shapes(*cut);
  const int nodes_before = cut->graph().node_size();
  const int inputs_before = cut->graph().input_size();
  onnx::make_graph_inputs(*cut->mutable_graph(), {"relu1_out"});
  ASSERT_EQ(cut->graph().input_size(), inputs_before + 1);
  const auto& added = cut->graph().input(inputs_before);
  EXPECT_EQ(added.name(), "relu1_out");
  EXPECT_EQ(added.type().tensor_type().elem_type(), ::onnx::TensorProto::FLOAT);
  EXPECT_FALSE(added.type().tensor_type().has_shape());
  EXPECT_EQ(cut->graph().node_size(), nodes_before - 3);  // conv1 bn1 relu1 are no longer needed
  for (const auto& node : cut->graph().node())
    for (const auto& output : node.output()) EXPECT_NE(output, "relu1_out") << node.name();
  NamedTensors cut_feed = feed;
  cut_feed.emplace_back("relu1_out", find(original, "relu1_out"));
  auto result = run(cut, cut_feed);
  auto whole = run(model, feed);
  EXPECT_EQ(max_abs_diff(find(result, "probabilities"), find(whole, "probabilities")), 0.0);
}

TEST(GraphPasses, MakeGraphInputsRejectsTensorsNoNodeComputes) {
  onnx::Model model = onnx::load_model(kExamples + "small_cnn.onnx");
  auto msg = error_of([&] { onnx::make_graph_inputs(*model->mutable_graph(), {"image"}); });
  EXPECT_NE(msg.find("'image'"), std::string::npos) << msg;
  msg = error_of([&] { onnx::make_graph_inputs(*model->mutable_graph(), {"ghost"}); });
  EXPECT_NE(msg.find("'ghost'"), std::string::npos) << msg;
}

// --- lint ---

// Lint on the reference runner (no ONNX Runtime needed) with one iteration of seeded inputs.
runtime::LintOptions reference_lint_options(const onnx::Model& model) {
  runtime::LintOptions options;
  options.runner = runtime::LintNodeRunner::kReference;
  options.feeds = runtime::DataLoader(runtime::DataLoaderOptions{}).generate_all(onnx::graph_inputs(model->graph()));
  return options;
}

TEST(Lint, ValidModelPassesEveryNode) {
  onnx::Model model = onnx::load_model(kExamples + "small_cnn.onnx");
  auto report = runtime::lint_model(model, reference_lint_options(model));
  EXPECT_TRUE(report.valid);
  EXPECT_EQ(report.passing.size(), static_cast<std::size_t>(model->graph().node_size()));
  EXPECT_TRUE(report.failing.empty());
  auto j = report.to_json();
  EXPECT_TRUE(j.contains("summary") && j["summary"].contains("passing") && j["summary"].contains("failing"));
  EXPECT_TRUE(j["lint_entries"].is_array());
}

TEST(Lint, FailingNodeIsReportedAndItsDependentsSkipped) {
  Builder b;
  b.input("x", 1, {3});
  b.input("unused_input", 1, {3});
  b.output("z");
  b.floats("four", {4}, {1, 2, 3, 4});
  b.floats("unused_weight", {1}, {1});
  b.node("Relu", {"x"}, {"r"}, "good");
  b.node("Add", {"r", "four"}, {"bad_sum"}, "bad");  // [3] + [4] cannot broadcast
  b.node("Neg", {"bad_sum"}, {"z"}, "downstream");
  auto report = runtime::lint_model(b.model, reference_lint_options(b.model));
  EXPECT_FALSE(report.valid);
  EXPECT_EQ(report.failing, std::vector<std::string>{"bad"});
  EXPECT_EQ(report.passing, std::vector<std::string>{"good"});
  // Polygraphy reports unused graph inputs, not unused initializers.
  bool unused_input = false, unused_weight = false;
  for (const auto& e : report.entries) {
    unused_input |= e.message.find("'unused_input'") != std::string::npos && e.source == "onnx_graphsurgeon";
    unused_weight |= e.message.find("'unused_weight'") != std::string::npos;
  }
  EXPECT_TRUE(unused_input);
  EXPECT_FALSE(unused_weight);
  bool failure_from_reference = false;
  for (const auto& e : report.entries)
    failure_from_reference |= e.node == std::optional<std::string>("bad") && e.source == "ref_runner";
  EXPECT_TRUE(failure_from_reference);
}

}  // namespace
}  // namespace parity
