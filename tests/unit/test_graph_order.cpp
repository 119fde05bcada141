// What nodes read (outer references of If/Loop/Scan bodies, node_reads) and topological_order, the
// one implementation the reference interpreter, the ONNX Runtime graph cutter and the passes share.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "parity/core/error.h"
#include "parity/onnx/graph_order.h"
#include "test_support.h"

namespace parity {
namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;
using Names = std::set<std::string>;

// Graphs of names only: ordering and references need no types or data.
NodeProto* add_node(GraphProto& graph, const std::string& op, const std::vector<std::string>& inputs,
                    const std::vector<std::string>& outputs, const std::string& name = "") {
  NodeProto* node = graph.add_node();
  node->set_op_type(op);
  node->set_name(name);
  for (const auto& input : inputs) node->add_input(input);
  for (const auto& output : outputs) node->add_output(output);
  return node;
}

GraphProto make_graph(const std::string& name, const std::vector<std::string>& inputs,
                      const std::vector<std::string>& outputs) {
  GraphProto graph;
  graph.set_name(name);
  for (const auto& input : inputs) graph.add_input()->set_name(input);
  for (const auto& output : outputs) graph.add_output()->set_name(output);
  return graph;
}

void add_subgraph(NodeProto& node, const std::string& attribute_name, const GraphProto& body) {
  auto* attribute = node.add_attribute();
  attribute->set_name(attribute_name);
  attribute->set_type(::onnx::AttributeProto::GRAPH);
  *attribute->mutable_g() = body;
}

std::vector<std::vector<std::string>> reads_of(const GraphProto& graph) {
  std::vector<std::vector<std::string>> reads;
  for (const auto& node : graph.node()) reads.push_back(onnx::node_reads(node));
  return reads;
}

onnx::CycleWording wording_for(const GraphProto& graph, bool name_graph = false) {
  return {.describe_node = [&graph](int index) { return "node '" + graph.node(index).name() + "'"; },
          .name_graph_when_node_reads_itself = name_graph};
}

std::vector<int> order_of(const GraphProto& graph) {
  const onnx::CycleWording wording = wording_for(graph);
  return onnx::topological_order(graph, reads_of(graph), onnx::unique_producers(graph, wording.describe_node),
                                 wording);
}

template <typename Fn>
std::string invalid_input_message(Fn&& fn) {
  return testing_support::message_of_thrown<InvalidInputError>(std::forward<Fn>(fn));
}

TEST(GraphOrder, OuterReferencesExcludeWhatTheGraphDefines) {
  GraphProto body = make_graph("body", {"own_input"}, {"result", "outer_output"});
  body.add_initializer()->set_name("own_weight");
  body.add_sparse_initializer()->mutable_values()->set_name("own_sparse");
  add_node(body, "Add", {"own_input", "outer_a"}, {"sum"});
  add_node(body, "Mul", {"sum", "own_weight"}, {"product"});
  add_node(body, "Where", {"own_sparse", "product", "outer_b"}, {"result"});
  add_node(body, "Clip", {"result", "", "outer_a"}, {"clipped"});  // "" is an omitted optional input
  // "outer_output" is returned as it is: an output read straight from the enclosing graph.
  EXPECT_EQ(onnx::outer_references(body), (Names{"outer_a", "outer_b", "outer_output"}));
}

TEST(GraphOrder, OuterReferencesOfNestedBodiesWithShadowing) {
  // A Loop body holding an If: the If's branches read the body's own values (not outer), names the
  // branches define themselves, and values from the graph around the Loop.
  GraphProto then_branch = make_graph("then", {}, {"then_out"});
  add_node(then_branch, "Add", {"carried", "outer_a"}, {"then_out"});
  GraphProto else_branch = make_graph("else", {}, {"else_out"});
  add_node(else_branch, "Neg", {"outer_c"}, {"shadowed"});  // defines "shadowed" inside the branch
  add_node(else_branch, "Add", {"shadowed", "body_value"}, {"else_out"});

  GraphProto loop_body = make_graph("loop_body", {"iteration", "condition", "carried"}, {"condition", "next"});
  add_node(loop_body, "Relu", {"outer_b"}, {"body_value"});
  NodeProto* if_node = add_node(loop_body, "If", {"condition"}, {"next"});
  add_subgraph(*if_node, "then_branch", then_branch);
  add_subgraph(*if_node, "else_branch", else_branch);

  EXPECT_EQ(onnx::outer_references(then_branch), (Names{"carried", "outer_a"}));
  EXPECT_EQ(onnx::outer_references(else_branch), (Names{"body_value", "outer_c"}));
  // Both branches together, sorted; "shadowed" stays inside the else branch.
  EXPECT_EQ(onnx::subgraph_outer_references(*if_node), (Names{"body_value", "carried", "outer_a", "outer_c"}));
  // Through the Loop body, only what the graph around the Loop must provide.
  EXPECT_EQ(onnx::outer_references(loop_body), (Names{"outer_a", "outer_b", "outer_c"}));

  GraphProto main = make_graph("main", {"outer_a", "trip_count"}, {"final"});
  add_node(main, "Relu", {"outer_a"}, {"outer_b"});
  add_node(main, "Relu", {"outer_a"}, {"outer_c"});
  NodeProto* loop = add_node(main, "Loop", {"trip_count", "", "outer_a"}, {"final"});
  add_subgraph(*loop, "body", loop_body);
  EXPECT_EQ(onnx::node_reads(*loop), (std::vector<std::string>{"trip_count", "outer_a", "outer_a", "outer_b",
                                                               "outer_c"}));
  EXPECT_TRUE(onnx::outer_references(main).empty());
}

TEST(GraphOrder, ScanBodyInputsShadowOuterNames) {
  // A Scan body's input "x" is its own value even though the graph around it has an "x" too.
  GraphProto scan_body = make_graph("scan_body", {"state", "x"}, {"next_state", "y"});
  add_node(scan_body, "Add", {"state", "x"}, {"next_state"});
  add_node(scan_body, "Mul", {"x", "scale"}, {"y"});
  EXPECT_EQ(onnx::outer_references(scan_body), (Names{"scale"}));

  GraphProto main = make_graph("main", {"init", "x"}, {"final", "ys"});
  NodeProto* scan = add_node(main, "Scan", {"init", "x"}, {"final", "ys"}, "scan");
  add_subgraph(*scan, "body", scan_body);
  add_node(main, "Constant", {}, {"scale"}, "scale");
  EXPECT_EQ(onnx::node_reads(*scan), (std::vector<std::string>{"init", "x", "scale"}));
  // The body's read of "scale" orders its producer before the Scan.
  EXPECT_EQ(order_of(main), (std::vector<int>{1, 0}));
}

TEST(GraphOrder, NodeWithoutSubgraphsReadsItsNonEmptyInputsInOrder) {
  GraphProto graph = make_graph("g", {"a", "b"}, {"y"});
  NodeProto* node = add_node(graph, "Clip", {"b", "", "a", "b"}, {"y"});
  EXPECT_TRUE(onnx::subgraph_outer_references(*node).empty());
  EXPECT_EQ(onnx::node_reads(*node), (std::vector<std::string>{"b", "a", "b"}));
}

TEST(GraphOrder, SortedGraphKeepsItsOrder) {
  GraphProto graph = make_graph("g", {"x"}, {"d"});
  add_node(graph, "Relu", {"x"}, {"a"}, "a");
  add_node(graph, "Neg", {"x"}, {"b"}, "b");
  add_node(graph, "Add", {"a", "b"}, {"c"}, "c");
  add_node(graph, "Abs", {"c"}, {"d"}, "d");
  EXPECT_EQ(order_of(graph), (std::vector<int>{0, 1, 2, 3}));
}

TEST(GraphOrder, ReadyNodesRunInTheModelsOrder) {
  GraphProto graph = make_graph("g", {"x"}, {"c", "d"});
  add_node(graph, "Abs", {"b"}, {"c"}, "reads_b");  // 0
  add_node(graph, "Relu", {"x"}, {"a"}, "makes_a");  // 1
  add_node(graph, "Neg", {"a"}, {"b"}, "makes_b");   // 2
  add_node(graph, "Sin", {"x"}, {"d"}, "reads_x");   // 3: ready from the start, but after 0 in the model
  // Ready at first: 1 and 3; 1 runs first (earlier in the model), which makes 2 ready before 3, and
  // 2 makes 0 ready, again before 3.
  EXPECT_EQ(order_of(graph), (std::vector<int>{1, 2, 0, 3}));
}

TEST(GraphOrder, ACycleNamesANodeOfIt) {
  GraphProto graph = make_graph("cyclic", {"x"}, {"z"});
  add_node(graph, "Neg", {"x"}, {"u"}, "before");
  add_node(graph, "Add", {"u", "w"}, {"v"}, "first");
  add_node(graph, "Relu", {"v"}, {"w"}, "second");
  add_node(graph, "Neg", {"v"}, {"z"}, "after");
  EXPECT_EQ(invalid_input_message([&] { order_of(graph); }),
            "the graph 'cyclic' has a cycle: node 'first' depends (directly or not) on its own output");
}

TEST(GraphOrder, ACycleThroughASubgraphReadIsACycle) {
  GraphProto branch = make_graph("branch", {}, {"branch_out"});
  add_node(branch, "Identity", {"late"}, {"branch_out"});
  GraphProto graph = make_graph("g", {"condition"}, {"late"});
  NodeProto* if_node = add_node(graph, "If", {"condition"}, {"early"}, "if");
  add_subgraph(*if_node, "then_branch", branch);
  add_subgraph(*if_node, "else_branch", branch);
  add_node(graph, "Relu", {"early"}, {"late"}, "relu");
  EXPECT_EQ(invalid_input_message([&] { order_of(graph); }),
            "the graph 'g' has a cycle: node 'if' depends (directly or not) on its own output");
}

TEST(GraphOrder, ANodeReadingItsOwnOutputIsNamedInEitherWording) {
  GraphProto graph = make_graph("loopy", {"x"}, {"y"});
  add_node(graph, "Relu", {"x"}, {"a"}, "fine");
  add_node(graph, "Add", {"a", "y"}, {"y"}, "self");
  auto reads = reads_of(graph);
  auto producers = onnx::unique_producers(graph, wording_for(graph).describe_node);
  EXPECT_EQ(invalid_input_message([&] { onnx::topological_order(graph, reads, producers, wording_for(graph)); }),
            "node 'self' reads its own output: the graph has a cycle");
  EXPECT_EQ(invalid_input_message(
                [&] { onnx::topological_order(graph, reads, producers, wording_for(graph, /*name_graph=*/true)); }),
            "node 'self' reads its own output: the graph 'loopy' has a cycle");
}

TEST(GraphOrder, UniqueProducersRefusesATensorProducedTwice) {
  GraphProto graph = make_graph("g", {"x"}, {"y"});
  add_node(graph, "Relu", {"x"}, {"y", ""}, "one");
  add_node(graph, "Neg", {"x"}, {"z", ""}, "other");  // empty names are omitted outputs, not tensors
  auto producers = onnx::unique_producers(graph, wording_for(graph).describe_node);
  EXPECT_EQ(producers.size(), 2u);
  EXPECT_EQ(producers.at("y"), 0);
  EXPECT_EQ(producers.at("z"), 1);
  add_node(graph, "Abs", {"x"}, {"y"}, "again");
  EXPECT_EQ(invalid_input_message([&] { onnx::unique_producers(graph, wording_for(graph).describe_node); }),
            "tensor 'y' is produced by two nodes: node 'one' and node 'again'");
}

TEST(GraphOrder, ReadListsMustCoverEveryNode) {
  GraphProto graph = make_graph("g", {"x"}, {"y"});
  add_node(graph, "Relu", {"x"}, {"y"}, "relu");
  EXPECT_THROW(onnx::topological_order(graph, {}, {}, wording_for(graph)), InternalError);
}

}  // namespace
}  // namespace parity
