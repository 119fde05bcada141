// convert --fp-to-fp16 / --fp-to-bf16: the float32 -> float16/bfloat16 pass and its keep list.
// Every converted model is checked by ONNX's checker and run on the reference interpreter.
#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "graph_test_helpers.h"
#include "parity/core/half.h"
#include "parity/onnx/precision_keep_list.h"
#include "parity/onnx/reduced_precision.h"
#include "parity/onnx/tensor_proto.h"

namespace parity {
namespace {

using namespace graph_test;
using ::onnx::GraphProto;
using ::onnx::NodeProto;
using onnx::PrecisionKeepList;
using onnx::ReducedPrecision;
using onnx::ReducedPrecisionOptions;

constexpr int32_t kFloat = 1, kHalf = 10, kBool = 9, kBFloat = 16;

// Casts the pass inserted (named parity_*) reading or writing `tensor`, in the graph and its subgraphs.
int casts_touching(const GraphProto& g, const std::string& tensor) {
  int n = 0;
  for (const auto& node : g.node()) {
    if (node.op_type() == "Cast" && node.name().starts_with("parity_") &&
        (node.input(0) == tensor || node.output(0) == tensor))
      ++n;
    for (const auto& a : node.attribute())
      if (a.has_g()) n += casts_touching(a.g(), tensor);
  }
  return n;
}

Tensor floats(std::vector<float> values) {
  Tensor t = Tensor::zeros(DType::kFloat32, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.mutable_data<float>());
  return t;
}

ReducedPrecisionOptions keeping(std::vector<std::string> entries, bool default_keep = true) {
  ReducedPrecisionOptions options;
  options.keep_fp32 = std::move(entries);
  options.default_keep = default_keep;
  return options;
}

// x -> square (Mul x*x) -> root (Sqrt) -> shift (Add 1) -> y. With x = 300 the square, 90000, is
// beyond float16's 65504 although x and y are not.
Builder square_root_model() {
  Builder b;
  b.input("x", kFloat, {4});
  b.output("y");
  b.floats("one", {1}, {1.0f});
  b.node("Mul", {"x", "x"}, {"squared"}, "square");
  b.node("Sqrt", {"squared"}, {"root"}, "root");
  b.node("Add", {"root", "one"}, {"y"}, "shift");
  onnx::infer_shapes(*b.model);
  return b;
}

const NamedTensors kSquareRootFeed = {{"x", floats({300.0f, -300.0f, 2.0f, 1000.0f})}};

void expect_square_root_finite(const Tensor& y) {
  ASSERT_EQ(y.dtype(), DType::kFloat32);
  for (int64_t i = 0; i < y.size(); ++i) EXPECT_TRUE(std::isfinite(y.data<float>()[i])) << "element " << i;
  EXPECT_NEAR(y.data<float>()[0], 301.0f, 0.5f);
  EXPECT_NEAR(y.data<float>()[3], 1001.0f, 1.0f);
}

// --- the adjacency rule ---

TEST(ReducedPrecision, TensorBetweenTwoKeptNodesStaysFloat32) {
  Builder b = square_root_model();
  onnx::Model half = copy_of(b.model);
  auto report = onnx::convert_float_to_reduced_precision(half, keeping({"square", "root"}));
  EXPECT_EQ(report.nodes_kept_by_list, 2);
  onnx::check_model(half);
  // Nothing casts the tensor between the two kept nodes: it is float32 from producer to consumer.
  EXPECT_EQ(casts_touching(half->graph(), "squared"), 0);
  // x feeds only the kept square (no Cast), root's result goes to the converted Add (one Cast),
  // the Add's float16 result to the float32 output y (one Cast).
  EXPECT_EQ(report.casts_inserted, 2);
  expect_square_root_finite(find(run(half, kSquareRootFeed), "y"));
}

TEST(ReducedPrecision, KeepingOnlyTheProducerStillOverflowsAtTheCast) {
  // The control: with only the producer kept, the consumer reads float16 and 90000 overflows.
  Builder b = square_root_model();
  onnx::Model half = copy_of(b.model);
  onnx::convert_float_to_reduced_precision(half, keeping({"square"}));
  onnx::check_model(half);
  EXPECT_EQ(casts_touching(half->graph(), "squared"), 1);
  auto result = run(half, kSquareRootFeed);
  EXPECT_TRUE(std::isinf(find(result, "y").data<float>()[0]));
}

// A then-branch and an else-branch, each a kept Sqrt of the main graph's `squared`.
GraphProto sqrt_branch(const std::string& name) {
  GraphProto g;
  g.set_name(name);
  auto* n = g.add_node();
  n->set_op_type("Sqrt");
  n->set_name(name + "_root");
  n->add_input("squared");
  n->add_output(name + "_out");
  auto* out = g.add_output();
  out->set_name(name + "_out");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
  return g;
}

Builder if_model() {
  Builder b;
  b.input("x", kFloat, {4});
  b.input("cond", kBool, {});
  b.output("y");
  b.floats("one", {1}, {1.0f});
  b.node("Mul", {"x", "x"}, {"squared"}, "square");
  auto* branch = b.node("If", {"cond"}, {"chosen"}, "choose");
  for (const char* which : {"then_branch", "else_branch"}) {
    auto* a = branch->add_attribute();
    a->set_name(which);
    a->set_type(::onnx::AttributeProto::GRAPH);
    *a->mutable_g() = sqrt_branch(which);
  }
  b.node("Add", {"chosen", "one"}, {"y"}, "shift");
  onnx::infer_shapes(*b.model);
  return b;
}

NamedTensors if_feed() {
  Tensor cond = Tensor::zeros(DType::kBool, {});
  cond.mutable_data<uint8_t>()[0] = 1;
  return {{"x", floats({300.0f, -300.0f, 2.0f, 1000.0f})}, {"cond", cond}};
}

TEST(ReducedPrecision, KeptNodeInAConvertedSubgraphReadsAKeptOuterProducerDirectly) {
  Builder b = if_model();
  onnx::Model half = copy_of(b.model);
  auto report = onnx::convert_float_to_reduced_precision(half, keeping({"square", "re:_root$"}));
  EXPECT_EQ(report.nodes_kept_by_list, 3);
  onnx::check_model(half, /*full_check=*/true);
  EXPECT_EQ(casts_touching(half->graph(), "squared"), 0);
  // The converted If's branches output float16: each casts its float32 root once.
  const NodeProto& choose = *std::find_if(half->graph().node().begin(), half->graph().node().end(),
                                          [](const NodeProto& n) { return n.op_type() == "If"; });
  for (const auto& a : choose.attribute()) {
    EXPECT_EQ(count_op(a.g(), "Cast"), 1) << a.name();
    EXPECT_EQ(a.g().output(0).type().tensor_type().elem_type(), kHalf) << a.name();
  }
  expect_square_root_finite(find(run(half, if_feed()), "y"));
}

TEST(ReducedPrecision, KeptIfKeepsItsBranchesAndReadsAKeptProducerDirectly) {
  Builder b = if_model();
  onnx::Model half = copy_of(b.model);
  auto report = onnx::convert_float_to_reduced_precision(half, keeping({"square", "choose"}));
  EXPECT_EQ(report.nodes_kept_by_list, 2);
  onnx::check_model(half, /*full_check=*/true);
  EXPECT_EQ(casts_touching(half->graph(), "squared"), 0);
  expect_square_root_finite(find(run(half, if_feed()), "y"));
}

TEST(ReducedPrecision, InitializerSharedByKeptAndConvertedNodesKeepsExactValuesForTheKeptOne) {
  Builder b;
  b.input("x", kFloat, {2});
  b.output("exact");
  b.output("reduced");
  b.floats("tiny", {1}, {1e-8f});  // below float16's smallest subnormal: 0 in float16
  b.node("Mul", {"x", "tiny"}, {"exact"}, "kept_mul");
  b.node("Mul", {"x", "tiny"}, {"reduced"}, "converted_mul");
  onnx::infer_shapes(*b.model);
  onnx::Model half = copy_of(b.model);
  auto report = onnx::convert_float_to_reduced_precision(half, keeping({"kept_mul"}));
  EXPECT_EQ(report.initializers_converted, 1);
  onnx::check_model(half, /*full_check=*/true);
  std::map<std::string, int32_t> initializer_types;
  for (const auto& t : half->graph().initializer()) initializer_types[t.name()] = t.data_type();
  EXPECT_EQ(initializer_types, (std::map<std::string, int32_t>{{"tiny", kFloat}, {"tiny_fp16", kHalf}}));
  auto result = run(half, {{"x", floats({1e4f, 2e4f})}});
  EXPECT_NEAR(find(result, "exact").data<float>()[0], 1e-4f, 1e-9f);
  EXPECT_EQ(find(result, "reduced").data<float>()[0], 0.0f);
}

TEST(ReducedPrecision, ConvertedCastReadsAKeptProducersFloat32DirectlyAndAConvertedOnesFloat16) {
  // x -> scale (Mul by 1000, kept) -> to_int (Cast to int64) -> count; scale -> round_trip (Cast to
  // float: becomes float16) -> y. 70 * 1000 = 70000 is beyond float16: through a float16 Cast on
  // the way to int64 it would be lost.
  Builder b;
  b.input("x", kFloat, {2});
  b.output("count", 7);
  b.output("y");
  b.floats("thousand", {1}, {1000.0f});
  b.node("Mul", {"x", "thousand"}, {"scaled"}, "scale");
  b.node("Cast", {"scaled"}, {"count"}, "to_int")->add_attribute()->set_name("to");
  b.node("Cast", {"scaled"}, {"y"}, "round_trip")->add_attribute()->set_name("to");
  for (int i : {1, 2}) {
    auto* to = b.g->mutable_node(i)->mutable_attribute(0);
    to->set_type(::onnx::AttributeProto::INT);
    to->set_i(i == 1 ? 7 : kFloat);
  }
  onnx::infer_shapes(*b.model);
  onnx::Model half = copy_of(b.model);
  auto report = onnx::convert_float_to_reduced_precision(half, keeping({"scale"}));
  onnx::check_model(half, /*full_check=*/true);
  EXPECT_EQ(casts_touching(half->graph(), "scaled"), 0);
  EXPECT_EQ(report.casts_inserted, 1);  // round_trip's float16 result back to the float32 output y
  auto result = run(half, {{"x", floats({70.0f, 2.0f})}});
  EXPECT_EQ(find(result, "count").data<int64_t>()[0], 70000);
  EXPECT_TRUE(std::isinf(find(result, "y").data<float>()[0]));  // round_trip now casts to float16
  EXPECT_EQ(find(result, "y").data<float>()[1], 2000.0f);
}

// --- small_cnn end to end ---

TEST(ReducedPrecision, SmallCnnToFloat16RunsOnRefCloseToFloat32) {
  onnx::Model model = onnx::load_model(kExamples + "small_cnn.onnx");
  onnx::infer_shapes(*model);
  auto feed = make_feed(model, {{"image", {2, 3, 32, 32}}});
  auto fp32 = run(model, feed);
  onnx::Model half = copy_of(model);
  auto report = onnx::convert_float_to_reduced_precision(half, {});
  EXPECT_GT(report.initializers_converted, 0);
  // image in; the Gemm's float16 logits into the Softmax, kept by the default list, whose float32
  // result is the output itself.
  EXPECT_EQ(report.casts_inserted, 2);
  EXPECT_EQ(report.nodes_kept_by_list, 1);
  onnx::infer_shapes(*half);
  onnx::check_model(half);
  for (const auto& t : half->graph().initializer())
    if (t.name().find("weight") != std::string::npos) {
      EXPECT_EQ(t.data_type(), kHalf) << t.name();
    }
  auto fp16 = run(half, feed);
  EXPECT_EQ(find(fp16, "probabilities").dtype(), DType::kFloat32);
  double error = max_abs_diff(find(fp32, "probabilities"), find(fp16, "probabilities"));
  std::printf("[ info ] small_cnn float16 vs float32: max abs error %g\n", error);
  EXPECT_LT(error, 1e-2);
  EXPECT_GT(error, 0.0);  // the computation really happened in float16
}

TEST(ReducedPrecision, KeepFp32LeavesChosenOpsInFloat32) {
  onnx::Model model = onnx::load_model(kExamples + "small_cnn.onnx");
  onnx::infer_shapes(*model);
  onnx::Model half = copy_of(model);
  auto report = onnx::convert_float_to_reduced_precision(half, keeping({"Softmax", "conv1"}));
  EXPECT_EQ(report.nodes_kept_by_list, 2);
  onnx::check_model(half);
  auto feed = make_feed(model, {{"image", {1, 3, 32, 32}}});
  auto result = run(half, feed);
  EXPECT_LT(max_abs_diff(find(run(model, feed), "probabilities"), find(result, "probabilities")), 1e-2);
  // conv1's weight stays float32.
  for (const auto& t : half->graph().initializer())
    if (t.name() == "conv1.weight") {
      EXPECT_EQ(t.data_type(), kFloat);
    }
  auto unknown = error_of([&] {
    onnx::Model m = copy_of(model);
    onnx::convert_float_to_reduced_precision(m, keeping({"NoSuchOp"}));
  });
  EXPECT_NE(unknown.find("'NoSuchOp'"), std::string::npos) << unknown;
}

// --- bfloat16 ---

TEST(ReducedPrecision, BFloat16InitializersRoundToNearestEven) {
  Builder b;
  b.input("x", kFloat, {6});
  b.output("y");
  const float largest_float = std::bit_cast<float>(uint32_t{0x7F7FFFFF});
  // 1 + 2^-8 ties between 1 and 1 + 2^-7: even is 1. 1 + 3*2^-8 ties between 1 + 2^-7 and 1 + 2^-6:
  // even is 1 + 2^-6. 1 + 2^-8 + 2^-20 is above the tie: 1 + 2^-7. The largest float is clamped to
  // bfloat16's largest finite value instead of rounding to infinity.
  b.floats("w", {6}, {1.00390625f, 1.01171875f, 1.0f + 0.00390625f + 0x1p-20f, largest_float, -0.0f, -3.5f});
  b.node("Mul", {"x", "w"}, {"y"}, "scale");
  onnx::infer_shapes(*b.model);
  onnx::Model reduced = copy_of(b.model);
  ReducedPrecisionOptions options;
  options.precision = ReducedPrecision::kBFloat16;
  auto report = onnx::convert_float_to_reduced_precision(reduced, options);
  EXPECT_EQ(report.initializers_converted, 1);
  onnx::check_model(reduced, /*full_check=*/true);
  const auto& w = reduced->graph().initializer(0);
  ASSERT_EQ(w.data_type(), kBFloat);
  Tensor bits = onnx::tensor_from_proto(w, ".");
  std::vector<uint16_t> got(bits.data<uint16_t>(), bits.data<uint16_t>() + 6);
  EXPECT_EQ(got, (std::vector<uint16_t>{0x3F80, 0x3F82, 0x3F81, 0x7F7F, 0x8000, 0xC060}));
  auto result = run(reduced, {{"x", floats({1, 1, 1, 1, 1, 1})}});
  EXPECT_EQ(find(result, "y").data<float>()[1], 1.015625f);
}

TEST(ReducedPrecision, OpsWithoutABFloat16SchemaAtTheOpsetStayFloat32) {
  // small_cnn's opset has Conv-11 (float16/float/double only; bfloat16 arrives in Conv-22).
  onnx::Model model = onnx::load_model(kExamples + "small_cnn.onnx");
  onnx::infer_shapes(*model);
  onnx::Model reduced = copy_of(model);
  ReducedPrecisionOptions options;
  options.precision = ReducedPrecision::kBFloat16;
  auto report = onnx::convert_float_to_reduced_precision(reduced, options);
  EXPECT_EQ(report.nodes_kept_by_schema, count_op(model->graph(), "Conv") + count_op(model->graph(), "MaxPool"))
      << fmt::format("{}", fmt::join(report.op_types_kept_by_schema, ","));
  EXPECT_NE(std::find(report.op_types_kept_by_schema.begin(), report.op_types_kept_by_schema.end(), "Conv"),
            report.op_types_kept_by_schema.end());
  onnx::infer_shapes(*reduced);
  onnx::check_model(reduced, /*full_check=*/true);
  for (const auto& t : reduced->graph().initializer())
    if (t.name().rfind("conv", 0) == 0) {
      EXPECT_EQ(t.data_type(), kFloat) << t.name();
    }
  auto feed = make_feed(model, {{"image", {2, 3, 32, 32}}});
  double error = max_abs_diff(find(run(model, feed), "probabilities"), find(run(reduced, feed), "probabilities"));
  std::printf("[ info ] small_cnn bfloat16 vs float32: max abs error %g\n", error);
  EXPECT_LT(error, 5e-2);
  EXPECT_GT(error, 0.0);
}

// --- the default keep list ---

// x [1000] -> ReduceSum -> y: a sum of 1000 values of 100 is 100000, beyond float16.
Builder reduce_sum_model() {
  Builder b;
  b.input("x", kFloat, {1000});
  b.output("y");
  b.node("ReduceSum", {"x"}, {"y"}, "total")->add_attribute()->set_name("keepdims");
  auto& keepdims = *b.g->mutable_node(0)->mutable_attribute(0);
  keepdims.set_type(::onnx::AttributeProto::INT);
  keepdims.set_i(0);
  onnx::infer_shapes(*b.model);
  return b;
}

TEST(ReducedPrecision, DefaultListKeepsReductionsAndNoDefaultKeepTurnsItOff) {
  Builder b = reduce_sum_model();
  NamedTensors feed = {{"x", floats(std::vector<float>(1000, 100.0f))}};
  onnx::Model kept = copy_of(b.model);
  auto report = onnx::convert_float_to_reduced_precision(kept, {});
  EXPECT_EQ(report.nodes_kept_by_list, 1);
  onnx::check_model(kept);
  EXPECT_EQ(find(run(kept, feed), "y").data<float>()[0], 100000.0f);

  onnx::Model converted = copy_of(b.model);
  report = onnx::convert_float_to_reduced_precision(converted, keeping({}, /*default_keep=*/false));
  EXPECT_EQ(report.nodes_kept_by_list, 0);
  onnx::check_model(converted);
  EXPECT_TRUE(std::isinf(find(run(converted, feed), "y").data<float>()[0]));
}

TEST(PrecisionKeepList, DefaultListHoldsOnlyOnnxOpTypes) {
  for (const auto& op : PrecisionKeepList::default_op_types()) {
    PrecisionKeepList list;
    list.add(op);
    EXPECT_EQ(list.entries()[0].kind, PrecisionKeepList::Kind::kOpType) << op;
  }
}

// --- keep-list entries ---

NodeProto node_named(const std::string& op, const std::string& name) {
  NodeProto node;
  node.set_op_type(op);
  node.set_name(name);
  return node;
}

TEST(PrecisionKeepList, EntriesAreOpTypesNodeNamesOrPatterns) {
  PrecisionKeepList list;
  list.add_all({"Softmax", "encoder/attn", "op:MyCustomOp", "node:Relu", "re:^decoder/.*/Pow$"});
  using Kind = PrecisionKeepList::Kind;
  std::vector<Kind> kinds;
  for (const auto& e : list.entries()) kinds.push_back(e.kind);
  EXPECT_EQ(kinds, (std::vector<Kind>{Kind::kOpType, Kind::kNodeName, Kind::kOpType, Kind::kNodeName,
                                      Kind::kNodeNamePattern}));
  EXPECT_TRUE(list.would_match(node_named("Softmax", "anything")));
  EXPECT_TRUE(list.would_match(node_named("MatMul", "encoder/attn")));
  EXPECT_TRUE(list.would_match(node_named("MyCustomOp", "x")));
  EXPECT_TRUE(list.would_match(node_named("Sigmoid", "Relu")));  // node:Relu names a node...
  EXPECT_FALSE(list.would_match(node_named("Relu", "relu_1")));  // ...not the op type
  EXPECT_TRUE(list.would_match(node_named("Pow", "decoder/layer3/Pow")));
  EXPECT_FALSE(list.would_match(node_named("Pow", "encoder/layer3/Pow")));
  EXPECT_FALSE(list.would_match(node_named("Pow", "decoder/layer3/Pow_1")));
  // would_match marks nothing; matches does.
  EXPECT_EQ(list.unmatched().size(), 5u);
  EXPECT_TRUE(list.matches(node_named("Softmax", "encoder/attn")));
  EXPECT_EQ(list.unmatched().size(), 3u);
}

TEST(PrecisionKeepList, FileEntriesWithComments) {
  auto path = std::filesystem::temp_directory_path() / "parity_keep_list_test.txt";
  {
    std::ofstream file(path);
    file << "# kept for overflow\n\nSoftmax   # trailing comment\n  re:^block#1/  \nnode:conv1\n";
  }
  PrecisionKeepList list;
  list.add("@" + path.string());
  ASSERT_EQ(list.entries().size(), 3u);
  EXPECT_EQ(list.entries()[0].text, "Softmax");
  EXPECT_EQ(list.entries()[1].text, "^block#1/");  // '#' inside an entry is not a comment
  EXPECT_EQ(list.entries()[2].origin, path.string() + ":5");
  EXPECT_TRUE(list.would_match(node_named("Add", "block#1/add")));
  EXPECT_EQ(PrecisionKeepList::describe(list.entries()[2]), "node 'conv1' (" + path.string() + ":5)");
  {
    std::ofstream file(path);
    file << "Softmax\n@other.txt\n";
  }
  PrecisionKeepList nested;
  auto nested_error = error_of([&] { nested.add("@" + path.string()); });
  EXPECT_NE(nested_error.find(":2"), std::string::npos) << nested_error;
  std::filesystem::remove(path);
  PrecisionKeepList missing;
  auto missing_error = error_of([&] { missing.add("@" + path.string()); });
  EXPECT_NE(missing_error.find(path.string()), std::string::npos) << missing_error;
}

TEST(PrecisionKeepList, BadEntriesAreErrorsNamingThem) {
  PrecisionKeepList list;
  auto bad_pattern = error_of([&] { list.add("re:(unclosed"); });
  EXPECT_NE(bad_pattern.find("'(unclosed'"), std::string::npos) << bad_pattern;
  auto empty = error_of([&] { list.add("op:"); });
  EXPECT_NE(empty.find("empty"), std::string::npos) << empty;
}

TEST(ReducedPrecision, UnmatchedNodeNamesAndPatternsAreErrorsUnmatchedOpTypesAreNot) {
  Builder b = square_root_model();
  auto attempt = [&](std::vector<std::string> entries) {
    onnx::Model m = copy_of(b.model);
    return error_of([&] { onnx::convert_float_to_reduced_precision(m, keeping(std::move(entries))); });
  };
  EXPECT_EQ(attempt({"LSTM", "square"}), "<no error>");
  auto error = attempt({"no_such_node", "re:^nothing", "square"});
  EXPECT_NE(error.find("node 'no_such_node'"), std::string::npos) << error;
  EXPECT_NE(error.find("pattern 're:^nothing'"), std::string::npos) << error;
}

}  // namespace
}  // namespace parity
