// Unit tests for onnx::extract_node_range, runtime::analyze_capability (with a scripted
// SupportQuery), OpenVINO's conversion messages read into reasons and blamed nodes, and the
// HybridRunner (both sides on the reference interpreter: its outputs must equal one run's).
#include <set>

#include <gtest/gtest.h>

#include "graph_test_helpers.h"
#include "parity/onnx/node_range.h"
#include "parity/runtime/capability.h"
#include "parity/runtime/hybrid_runner.h"
#include "parity/runtime/onnxrt/onnxrt_support_query.h"
#include "parity/runtime/openvino/openvino_support_query.h"
#include "parity/runtime/ref/ref_runner.h"

namespace parity {
namespace {

using graph_test::Builder;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// x[2,3] -> 0 Constant k -> 1 Add(x,k) a -> 2 Mul(a,w) b -> 3 Sigmoid(b) y ; 4 Neg(a) z
onnx::Model chain() {
  Builder b;
  b.input("x", 1, {2, 3});
  b.floats("w", {3}, {1, 2, 3});
  auto* constant = b.node("Constant", {}, {"k"}, "make_k");
  auto* value = constant->add_attribute();
  value->set_name("value_float");
  value->set_type(::onnx::AttributeProto::FLOAT);
  value->set_f(0.5f);
  b.node("Add", {"x", "k"}, {"a"}, "add");
  b.node("Mul", {"a", "w"}, {"b"}, "mul");
  b.node("Sigmoid", {"b"}, {"y"}, "squash");
  b.node("Neg", {"a"}, {"z"}, "negate");
  b.output("y");
  b.output("z");
  return runtime::prepare_for_partitioning(b.model);
}

std::vector<std::string> names_of(
    const google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto>& values) {
  std::vector<std::string> names;
  for (const auto& value : values) names.push_back(value.name());
  return names;
}

TEST(ExtractNodeRange, CopiesInitializersAndConstantsAndKeepsWhatLaterNodesRead) {
  onnx::Model model = chain();
  onnx::Model middle = onnx::extract_node_range(model, 2, 3);
  EXPECT_EQ(names_of(middle->graph().input()), std::vector<std::string>{"a"});
  ASSERT_EQ(middle->graph().initializer_size(), 1);
  EXPECT_EQ(middle->graph().initializer(0).name(), "w");
  EXPECT_EQ(names_of(middle->graph().output()), std::vector<std::string>{"b"});
  onnx::check_model(middle);

  onnx::Model add = onnx::extract_node_range(model, 1, 2);
  ASSERT_EQ(add->graph().node_size(), 2);  // the Constant producing k is copied in front
  EXPECT_EQ(add->graph().node(0).op_type(), "Constant");
  EXPECT_EQ(names_of(add->graph().input()), std::vector<std::string>{"x"});
  EXPECT_EQ(names_of(add->graph().output()), std::vector<std::string>{"a"});  // read by Mul and Neg
  onnx::check_model(add);

  onnx::Model tail = onnx::extract_node_range(model, 2, 5);
  EXPECT_EQ(names_of(tail->graph().output()), (std::vector<std::string>{"y", "z"}));
}

TEST(ExtractNodeRange, RefusesBadRangesAndUntypedBoundaries) {
  onnx::Model model = chain();
  EXPECT_TRUE(contains(graph_test::error_of([&] { onnx::extract_node_range(model, 3, 3); }),
                       "no such range"));
  EXPECT_TRUE(contains(graph_test::error_of([&] { onnx::extract_node_range(model, 0, 9); }),
                       "no such range"));
  model->mutable_graph()->clear_value_info();
  std::string error = graph_test::error_of([&] { onnx::extract_node_range(model, 2, 3); });
  EXPECT_TRUE(contains(error, "tensor 'a'") && contains(error, "no known type")) << error;
}

// Refuses a model holding any op of `refused` (naming each such node as OpenVINO does, behind an
// inlining prefix), or holding all of `refused_together`; op types in `device_lacks` convert but
// their outputs are reported unsupported. Bodies of control-flow nodes count.
class ScriptedQuery : public runtime::SupportQuery {
 public:
  std::set<std::string> refused, refused_together, device_lacks;
  int queries = 0;
  std::string backend_name() const override { return "Scripted"; }
  std::optional<std::string> refuse_input_type(DType dtype) const override {
    if (dtype == DType::kComplex64) return std::string("no complex types here");
    return std::nullopt;
  }
  runtime::SupportAnswer query(const onnx::Model& model) override {
    ++queries;
    runtime::SupportAnswer answer;
    std::set<std::string> present;
    visit(model->graph(), present, answer);
    bool together = !refused_together.empty() &&
                    std::all_of(refused_together.begin(), refused_together.end(),
                                [&](const std::string& op) { return present.count(op) > 0; });
    if (!answer.blamed.empty() || together) {
      answer.converted = false;
      answer.reason = together ? "not together" : "no rule for " + answer.blamed.front().second;
      answer.detail = answer.reason;
      answer.unsupported_tensors.clear();
    }
    return answer;
  }

 private:
  void visit(const ::onnx::GraphProto& graph, std::set<std::string>& present,
             runtime::SupportAnswer& answer) {
    for (const auto& node : graph.node()) {
      present.insert(node.op_type());
      if (refused.count(node.op_type()))
        answer.blamed.emplace_back("Outer__Inline_0__" + node.name(), node.op_type());
      if (device_lacks.count(node.op_type())) {
        answer.unsupported_tensors.insert(answer.unsupported_tensors.end(), node.output().begin(),
                                          node.output().end());
        answer.unsupported_reason = "the device lacks " + node.op_type();
      }
      for (const auto& attribute : node.attribute())
        if (attribute.has_g()) visit(attribute.g(), present, answer);
    }
  }
};

std::vector<std::string> file_names(const runtime::CapabilityReport& report) {
  std::vector<std::string> names;
  for (const auto& partition : report.partitions) names.push_back(partition.file_name());
  return names;
}

TEST(AnalyzeCapability, FullySupportedModelIsOneSupportedSubgraph) {
  onnx::Model model = chain();
  ScriptedQuery query;
  auto report = runtime::analyze_capability(model, query);
  EXPECT_TRUE(report.fully_supported());
  EXPECT_EQ(file_names(report), std::vector<std::string>{"supported_subgraph-nodes-0-4.onnx"});
  EXPECT_EQ(query.queries, 1);
  EXPECT_TRUE(contains(report.summary(), "Graph is fully supported by Scripted"))
      << report.summary();
}

TEST(AnalyzeCapability, RefusedNodesSplitTheGraphIntoMaximalSubgraphs) {
  onnx::Model model = chain();
  ScriptedQuery query;
  query.refused = {"Mul"};
  auto report = runtime::analyze_capability(model, query);
  EXPECT_EQ(file_names(report), (std::vector<std::string>{"supported_subgraph-nodes-0-1.onnx",
                                                          "unsupported_subgraph-nodes-2-2.onnx",
                                                          "supported_subgraph-nodes-3-4.onnx"}));
  ASSERT_EQ(report.unsupported.size(), 1u);
  EXPECT_EQ(report.unsupported[0].name, "mul");
  std::string summary = report.summary();
  EXPECT_TRUE(contains(summary, "Mul") && contains(summary, "no rule for Mul") &&
              contains(summary, "| mul"))
      << summary;
}

TEST(AnalyzeCapability, NeighboursThatConvertApartButNotTogetherStayApart) {
  onnx::Model model = chain();
  ScriptedQuery query;
  query.refused_together = {"Add", "Sigmoid"};
  auto report = runtime::analyze_capability(model, query);
  EXPECT_TRUE(report.unsupported.empty());
  ASSERT_GE(report.partitions.size(), 2u);
  for (const auto& partition : report.partitions) EXPECT_TRUE(partition.supported);
  ASSERT_FALSE(report.notes.empty());
  EXPECT_TRUE(contains(report.notes[0], "convert apart but not together: not together"))
      << report.notes[0];
}

TEST(AnalyzeCapability, OpsTheDeviceLacksAreUnsupportedWithoutSplittingQueries) {
  onnx::Model model = chain();
  ScriptedQuery query;
  query.device_lacks = {"Sigmoid"};
  auto report = runtime::analyze_capability(model, query);
  EXPECT_EQ(query.queries, 1);
  EXPECT_EQ(file_names(report), (std::vector<std::string>{"supported_subgraph-nodes-0-2.onnx",
                                                          "unsupported_subgraph-nodes-3-3.onnx",
                                                          "supported_subgraph-nodes-4-4.onnx"}));
  EXPECT_EQ(report.unsupported.at(0).reason, "the device lacks Sigmoid");
}

TEST(AnalyzeCapability, ControlFlowNodeIsUnsupportedAsAWholeWithItsBodyNodesNamed) {
  Builder b;
  b.input("x", 1, {3});
  b.input("c", 9, {});
  b.node("Relu", {"x"}, {"r"}, "rectify");
  auto* branch = b.node("If", {"c"}, {"chosen"}, "choose");
  for (const char* which : {"then_branch", "else_branch"}) {
    auto* attribute = branch->add_attribute();
    attribute->set_name(which);
    attribute->set_type(::onnx::AttributeProto::GRAPH);
    auto* body = attribute->mutable_g();
    body->set_name(which);
    auto* node = body->add_node();
    node->set_op_type(std::string(which) == "then_branch" ? "Erf" : "Neg");
    node->set_name(std::string(which) + "_op");
    node->add_input("r");
    node->add_output(std::string(which) + "_out");
    auto* output = body->add_output();
    output->set_name(std::string(which) + "_out");
    output->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  }
  b.node("Abs", {"chosen"}, {"y"}, "absolute");
  b.output("y");
  onnx::Model model = runtime::prepare_for_partitioning(b.model);
  ScriptedQuery query;
  query.refused = {"Erf"};
  auto report = runtime::analyze_capability(model, query);
  ASSERT_EQ(report.unsupported.size(), 1u);
  const auto& node = report.unsupported[0];
  EXPECT_TRUE(node.control_flow);
  ASSERT_EQ(node.body_failures.size(), 1u);
  EXPECT_EQ(node.body_failures[0].body, "then_branch");
  EXPECT_EQ(node.body_failures[0].node_name, "then_branch_op");
  EXPECT_TRUE(contains(report.summary(), "choose (If) is unsupported as a whole"))
      << report.summary();
  EXPECT_EQ(file_names(report)[1], "unsupported_subgraph-nodes-1-1.onnx");
}

TEST(AnalyzeCapability, RefusesInputTypesTheBackendCannotTake) {
  Builder b;
  b.input("z", 14, {2});
  b.node("Identity", {"z"}, {"w"}, "copy");
  b.output("w", 14);
  onnx::Model model = runtime::prepare_for_partitioning(b.model);
  ScriptedQuery query;
  std::string error = graph_test::error_of([&] { runtime::analyze_capability(model, query); });
  EXPECT_TRUE(contains(error, "input 'z'") && contains(error, "complex64") &&
              contains(error, "no complex types"))
      << error;
}

// OpenVINO 2026.4.1's message for silero_vad_v5.onnx (shortened to two failed operations).
const char* kSileroMessage = R"(Exception from src/inference/src/cpp/core.cpp:84:
Check 'false' failed at src/frontends/common_translators/src/unconverted_ops_report.cpp:151:
FrontEnd API failed with OpConversionFailure:
Model wasn't fully converted. Failed operations detailed log:
-- Conv-16 with a message:
While validating ONNX node '<Node(Conv): If_0_then_branch__Inline_0__/decoder/decoder/2/Conv_output_0>': Check 'data.get_partial_shape().rank().is_static()' failed at src/frontends/onnx/frontend/src/op/conv.cpp:38:
FrontEnd API failed with GeneralFailure:
The input data tensor's rank has to be known (static)

-- ReduceMean-16 with a message:
Check '(supported_types.find(ov_input.get_element_type()) != supported_types.end())' failed at src/frontends/onnx/frontend/src/op/reduce.cpp:134:
While validating ONNX node '<Node(ReduceMean): If_0_then_branch__Inline_0__/ReduceMean_output_0>':
Unsupported input type dynamic

Summary:
-- Conversion is failed for: Conv-16, ReduceMean-16
)";

TEST(OpenvinoMessages, ReasonsAndBlamedNodes) {
  EXPECT_EQ(
      runtime::concise_openvino_reason(kSileroMessage),
      "The input data tensor's rank has to be known (static); Unsupported input type dynamic");
  auto blamed = runtime::openvino_blamed_nodes(kSileroMessage);
  ASSERT_EQ(blamed.size(), 2u);
  EXPECT_EQ(blamed[0].first, "If_0_then_branch__Inline_0__/decoder/decoder/2/Conv_output_0");
  EXPECT_EQ(blamed[0].second, "The input data tensor's rank has to be known (static)");
  EXPECT_EQ(blamed[1].second, "Unsupported input type dynamic");
  auto op_types = runtime::openvino_unconvertible_op_types(
      "Summary:\n-- No conversion rule found for operations: Det-17, com.example.Odd-1\nTo "
      "facilitate the "
      "conversion of unsupported operations, refer to Frontend Extension documentation");
  ASSERT_EQ(op_types.size(), 2u);
  EXPECT_EQ(op_types[0].first, "Det");
  EXPECT_EQ(op_types[1].first, "com.example.Odd");
  EXPECT_EQ(op_types[0].second,
            "No conversion rule found for operations: Det-17, com.example.Odd-1");
}

TEST(HybridRunner, SubgraphsInSequenceGiveTheWholeModelsOutputsAndEveryTensorOnce) {
  onnx::Model model = chain();
  auto make_ref = [](runtime::ModelLoader loader) -> std::unique_ptr<runtime::Runner> {
    return std::make_unique<runtime::RefRunner>(std::move(loader));
  };
  runtime::HybridRunner hybrid([&] { return model; },
                               [] {
                                 auto query = std::make_unique<ScriptedQuery>();
                                 query->refused = {"Mul"};
                                 return query;
                               },
                               {"primary", make_ref}, {"fallback", make_ref});
  hybrid.set_intermediate_outputs(runtime::IntermediateOutputs::all());
  runtime::ActiveRunner active(hybrid);
  ASSERT_EQ(hybrid.placements().size(), 3u);
  EXPECT_EQ(hybrid.placements()[1].backend, "fallback");
  EXPECT_EQ(hybrid.placements()[1].node_names, std::vector<std::string>{"mul"});
  NamedTensors feed = graph_test::make_feed(model);
  NamedTensors outputs = active->infer(feed);
  auto expected = graph_test::run(model, feed);
  EXPECT_EQ(outputs[0].first, "y");
  EXPECT_EQ(outputs[1].first, "z");
  EXPECT_EQ(graph_test::max_abs_diff(outputs[0].second, graph_test::find(expected, "y")), 0.0);
  EXPECT_EQ(graph_test::max_abs_diff(outputs[1].second, graph_test::find(expected, "z")), 0.0);
  std::multiset<std::string> names;
  for (const auto& [name, tensor] : outputs) names.insert(name);
  for (const char* name : {"k", "a", "b"}) EXPECT_EQ(names.count(name), 1u) << name;

  std::multiset<std::string> streamed;
  hybrid.set_intermediate_outputs(runtime::IntermediateOutputs::none());
  hybrid.set_tensor_callback(
      [&](const runtime::ProducedTensor& produced) { streamed.insert(produced.name); });
  active->infer(feed);
  for (const char* name : {"k", "a", "b", "y", "z"}) EXPECT_EQ(streamed.count(name), 1u) << name;
}

}  // namespace
}  // namespace parity

namespace parity {
namespace {

TEST(OnnxrtMessages, ReasonAndBlamedNode) {
  const std::string message =
      "onnxrt-runner-N3-11/24/26-03:40:17: det64.onnx: ONNX Runtime error while creating the "
      "session: [NOT_IMPLEMENTED] Could not find an implementation for Det(11) node with name "
      "'planted_det'";
  EXPECT_EQ(runtime::concise_onnxrt_reason(message),
            "Could not find an implementation for Det(11) node with name 'planted_det'");
  auto blamed = runtime::onnxrt_blamed_nodes(message);
  ASSERT_EQ(blamed.size(), 1u);
  EXPECT_EQ(blamed[0].first, "planted_det");
}

}  // namespace
}  // namespace parity
