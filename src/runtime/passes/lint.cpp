#include "parity/runtime/passes/lint.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_set>

#include <onnx/defs/schema.h>

#include "evaluate_nodes.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/graph_order.h"
#include "parity/onnx/passes.h"
#include "parity/runtime/interpreter.h"

namespace parity::runtime {
namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;

class Recorder {
 public:
  explicit Recorder(LintReport& report) : report_(report) {}

  void add(const std::string& level, const std::string& source, const std::string& message,
           const std::optional<std::string>& node = std::nullopt, const std::string& op = "") {
    std::string scope = node && !op.empty() ? fmt::format("Name: {}, Op: {} | ", *node, op) : "";
    std::string one_line = message;
    std::replace(one_line.begin(), one_line.end(), '\n', ' ');
    if (level == "exception") log::error("LINT | {}{}", scope, one_line);
    else if (level == "warning") log::warning("LINT | {}{}", scope, one_line);
    else log::info("LINT | {}{}", scope, one_line);
    report_.entries.push_back({level, source, one_line, node, op});
    if (node) {
      if (level == "exception") {
        failing_.insert(*node);
        passing_.erase(*node);
      } else if (!failing_.count(*node)) {
        passing_.insert(*node);
      }
    }
    if (level == "exception") report_.valid = false;
  }
  void pass(const std::string& node) {
    if (!failing_.count(node)) passing_.insert(node);
  }
  void finish() {
    report_.passing.assign(passing_.begin(), passing_.end());
    report_.failing.assign(failing_.begin(), failing_.end());
  }

 private:
  LintReport& report_;
  std::set<std::string> passing_, failing_;
};

void name_unnamed_nodes(GraphProto& graph) {
  std::unordered_set<std::string> names;
  for (const auto& n : graph.node()) names.insert(n.name());
  int uid = 0;
  for (int i = 0; i < graph.node_size(); ++i) {
    auto* node = graph.mutable_node(i);
    if (!node->name().empty()) continue;
    std::string name = fmt::format("polygraphy_unnamed_node_{}", i);
    while (names.count(name)) name = fmt::format("polygraphy_unnamed_node_{}_{}", i, uid++);
    log::verbose("Node with topological id: {} has empty name. Renaming to: {}", i, name);
    node->set_name(name);
    names.insert(name);
  }
}

void report_unused(const onnx::Model& model, Recorder& recorder) {
  GraphProto copy = model->graph();
  std::set<std::string> inputs_before, inits_before;
  std::set<std::pair<std::string, std::string>> nodes_before;
  std::set<std::string> initializer_names;
  for (const auto& t : copy.initializer()) initializer_names.insert(t.name());
  for (const auto& v : copy.input())
    if (!initializer_names.count(v.name())) inputs_before.insert(v.name());
  for (const auto& t : copy.initializer()) inits_before.insert(t.name());
  for (const auto& n : copy.node()) nodes_before.insert({n.name(), n.op_type()});
  onnx::cleanup(copy, onnx::CleanupOptions{.remove_unused_graph_inputs = true, .recurse_subgraphs = false});
  std::set<std::string> inputs_after, inits_after;
  std::set<std::pair<std::string, std::string>> nodes_after;
  for (const auto& v : copy.input()) inputs_after.insert(v.name());
  for (const auto& t : copy.initializer()) inits_after.insert(t.name());
  for (const auto& n : copy.node()) nodes_after.insert({n.name(), n.op_type()});
  for (const auto& name : inputs_before)
    if (!inputs_after.count(name))
      recorder.add("warning", "graph", fmt::format("Input: '{}' does not affect outputs, can be removed.", name));
  for (const auto& name : inits_before)
    if (!inits_after.count(name))
      recorder.add("warning", "graph",
                   fmt::format("Initializer: '{}' does not affect outputs, can be removed.", name));
  for (const auto& [name, op] : nodes_before)
    if (!nodes_after.count({name, op}))
      recorder.add("warning", "graph", "Does not affect outputs, can be removed.", name, op);
}

bool is_unsupported_op(const Error& e) { return dynamic_cast<const UnsupportedError*>(&e) != nullptr; }

// The domains ONNX itself defines; ops of any other domain are custom ops, registered at run time.
bool is_onnx_domain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx" || domain == "ai.onnx.ml" || domain == "ai.onnx.preview.training";
}

// The level of a node that failed to run, as Polygraphy's lint judges it: a custom-domain op that
// cannot run is a warning (the node passes), an op that no ONNX schema defines fails its node, and
// an ONNX op the reference runner does not implement is a warning (a limit of Parity, not of the model).
std::string failed_node_level(const NodeProto& node, const Error& e) {
  if (!is_onnx_domain(node.domain())) return "warning";
  if (::onnx::OpSchemaRegistry::Schema(node.op_type(), node.domain()) == nullptr) return "exception";
  return is_unsupported_op(e) ? "warning" : "exception";
}

}  // namespace

nlohmann::ordered_json LintReport::to_json() const {
  nlohmann::ordered_json j;
  j["summary"]["passing"] = passing;
  j["summary"]["failing"] = failing;
  j["lint_entries"] = nlohmann::ordered_json::array();
  for (const auto& e : entries) {
    nlohmann::ordered_json entry;
    entry["level"] = e.level;
    entry["source"] = e.source;
    entry["message"] = e.message;
    if (e.node) entry["nodes"] = {*e.node};
    j["lint_entries"].push_back(std::move(entry));
  }
  return j;
}

LintReport lint_model(onnx::Model model, const LintOptions& options) {
  LintReport report;
  Recorder recorder(report);
  GraphProto& graph = *model->mutable_graph();
  if (graph.node_size() == 0) {
    recorder.add("warning", "onnx_loader", "ONNX model has no nodes");
    recorder.finish();
    return report;
  }
  onnx::toposort(graph);  // throws, naming a node, on a cycle
  name_unnamed_nodes(graph);
  std::map<std::string, std::vector<int>> ids;
  for (int i = 0; i < graph.node_size(); ++i) ids[graph.node(i).name()].push_back(i);
  for (const auto& [name, where] : ids)
    if (where.size() > 1)
      recorder.add("exception", "graph",
                   fmt::format("Duplicate node name: '{}' for nodes with topological IDs: [{}] found.", name,
                               fmt::join(where, ", ")),
                   name);

  bool checker_ok = true;
  try {
    // Like Polygraphy: graph outputs declared without a shape get one (from shape inference when it
    // has one) so the checker judges the model, not the missing annotation.
    onnx::Model checked{std::make_shared<::onnx::ModelProto>(*model.proto), model.path, model.base_dir};
    std::map<std::string, const ::onnx::ValueInfoProto*> inferred;
    for (const auto& v : checked->graph().value_info()) inferred[v.name()] = &v;
    for (auto& out : *checked->mutable_graph()->mutable_output()) {
      auto* tensor_type = out.mutable_type()->mutable_tensor_type();
      if (!out.type().has_tensor_type() || tensor_type->has_shape()) continue;
      auto it = inferred.find(out.name());
      if (it != inferred.end() && it->second->type().tensor_type().has_shape())
        *tensor_type->mutable_shape() = it->second->type().tensor_type().shape();
      else
        tensor_type->mutable_shape()->add_dim();
    }
    onnx::check_model(checked, false);
  } catch (const Error& e) {
    checker_ok = false;
    if (std::string(e.message()).find("Bad node spec for node") == std::string::npos)
      recorder.add("exception", "onnx_checker", e.message());
  }
  log::verbose("ONNX Checker passed: {}", checker_ok);

  DataLoader loader(options.data);
  NamedTensors feed_tensors = loader.generate(onnx::graph_inputs(graph), 0);
  detail::ValueTable cache;
  for (auto& [name, t] : feed_tensors) cache[name] = ops::Value::of(t);

  if (checker_ok) {
    try {
      Interpreter interpreter(model, InterpreterOptions{});
      NamedValues feed(cache.begin(), cache.end());
      interpreter.run(feed);
      for (const auto& n : graph.node()) recorder.pass(n.name());
      report_unused(model, recorder);
      recorder.finish();
      log::verbose("The whole model ran on the reference runner; every node passes.");
      return report;
    } catch (const Error& e) {
      log::verbose("Running the whole model failed ({}); linting node by node", e.what());
    }
  }

  detail::ConstantTable constants;
  std::unordered_set<std::string> input_names;
  for (const auto& v : graph.input()) input_names.insert(v.name());
  for (const auto& t : graph.initializer())
    if (!input_names.count(t.name())) constants[t.name()] = &t;
  // Initializers that are also graph inputs got data from the loader only when not generated:
  for (const auto& t : graph.initializer())
    if (input_names.count(t.name()) && !cache.count(t.name())) constants[t.name()] = &t;

  for (const auto& node : graph.node()) {
    auto reads = onnx::node_reads(node);
    bool ready = std::all_of(reads.begin(), reads.end(),
                             [&](const std::string& r) { return cache.count(r) || constants.count(r); });
    if (!ready) {
      log::verbose("Skipping {}: it depends on a node that failed", onnx::describe_node(node));
      continue;
    }
    try {
      auto values = detail::evaluate_nodes(model, {&node}, constants, cache);
      for (auto& [name, v] : values) cache[name] = std::move(v);
      recorder.pass(node.name());
    } catch (const Error& e) {
      recorder.add(failed_node_level(node, e), "ref_runner", e.what(), node.name(), node.op_type());
    }
  }
  report_unused(model, recorder);
  recorder.finish();
  return report;
}

}  // namespace parity::runtime
