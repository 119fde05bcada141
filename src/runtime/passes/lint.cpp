#include "parity/runtime/passes/lint.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

#include <onnx/defs/schema.h>

#include "evaluate_nodes.h"
#include "lint_onnxrt.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/graph_order.h"
#include "parity/onnx/passes.h"
#include "parity/runtime/ref/interpreter.h"

namespace parity::runtime {
namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;

constexpr const char* kGraphSource = "onnx_graphsurgeon";  // Polygraphy's graph checks use ONNX-GraphSurgeon
constexpr const char* kOnnxrtSource = "onnxruntime";
constexpr const char* kReferenceSource = "ref_runner";
constexpr const char* kCheckerPrefix = "ONNX checker: ";  // onnx::check_model's errors start with it

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
  // Takes a node off the passing list (Polygraphy's summary after a whole-model pass lists only the
  // nodes that affect the outputs).
  void unlist(const std::string& node) { passing_.erase(node); }
  void finish() {
    report_.passing.assign(passing_.begin(), passing_.end());
    report_.failing.assign(failing_.begin(), failing_.end());
  }

 private:
  LintReport& report_;
  std::set<std::string> passing_, failing_;
};

void collect_node_domains(const GraphProto& graph, std::set<std::string>& domains) {
  for (const auto& node : graph.node()) {
    if (!node.domain().empty()) domains.insert(node.domain());
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) collect_node_domains(attribute.g(), domains);
      for (const auto& subgraph : attribute.graphs()) collect_node_domains(subgraph, domains);
    }
  }
}

// As ONNX-GraphSurgeon's export, which Polygraphy's lint checks and runs nodes from: a custom
// domain that nodes use without an opset import gets one, at version 1.
void import_used_domains(::onnx::ModelProto& model) {
  std::set<std::string> used;
  collect_node_domains(model.graph(), used);
  for (const auto& import : model.opset_import()) used.erase(import.domain());
  for (const auto& domain : used) {
    auto* import = model.add_opset_import();
    import->set_domain(domain);
    import->set_version(1);
  }
}

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

// Polygraphy's report of what graph cleanup would remove: graph inputs (initializers aside) and
// top-level nodes that do not affect the outputs. Returns the nodes' names.
std::set<std::string> report_unused(const onnx::Model& model, Recorder& recorder) {
  GraphProto copy = model->graph();
  std::set<std::string> initializer_names;
  for (const auto& t : copy.initializer()) initializer_names.insert(t.name());
  std::set<std::string> inputs_before;
  for (const auto& v : copy.input())
    if (!initializer_names.count(v.name())) inputs_before.insert(v.name());
  std::set<std::pair<std::string, std::string>> nodes_before;
  for (const auto& n : copy.node()) nodes_before.insert({n.name(), n.op_type()});
  onnx::cleanup(copy, onnx::CleanupOptions{.remove_unused_graph_inputs = true, .recurse_subgraphs = false});
  std::set<std::string> inputs_after;
  for (const auto& v : copy.input()) inputs_after.insert(v.name());
  std::set<std::pair<std::string, std::string>> nodes_after;
  for (const auto& n : copy.node()) nodes_after.insert({n.name(), n.op_type()});
  for (const auto& name : inputs_before)
    if (!inputs_after.count(name))
      recorder.add("warning", kGraphSource, fmt::format("Input: '{}' does not affect outputs, can be removed.", name));
  std::set<std::string> unused_nodes;
  for (const auto& [name, op] : nodes_before)
    if (!nodes_after.count({name, op})) {
      recorder.add("warning", kGraphSource, "Does not affect outputs, can be removed.", name, op);
      unused_nodes.insert(name);
    }
  return unused_nodes;
}

bool is_unsupported_op(const Error& e) { return dynamic_cast<const UnsupportedError*>(&e) != nullptr; }

// The domains ONNX itself defines; ops of any other domain are custom ops, registered at run time.
bool is_onnx_domain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx" || domain == "ai.onnx.ml" || domain == "ai.onnx.preview.training";
}

// The level of a node that failed to run on the reference runner, as Polygraphy's lint judges
// it: a custom-domain op that cannot run is a warning (the node passes), an op that no ONNX schema
// defines fails its node, and an ONNX op the reference runner does not implement is a warning (a
// limit of Parity, not of the model).
std::string failed_reference_node_level(const NodeProto& node, const Error& e) {
  if (!is_onnx_domain(node.domain())) return "warning";
  if (::onnx::OpSchemaRegistry::Schema(node.op_type(), node.domain()) == nullptr) return "exception";
  return is_unsupported_op(e) ? "warning" : "exception";
}

// Polygraphy's level for a node ONNX Runtime refused: a custom op (no opset import for its domain,
// or no registered op of its name) is a warning, anything else an exception.
std::string failed_onnxrt_node_level(const std::string& message) {
  for (const char* custom_op : {"No opset import for domain", "is not a registered function/op"})
    if (message.find(custom_op) != std::string::npos) return "warning";
  return "exception";
}

// Raises the logger's threshold to warnings while alive: the node checks' own messages (ONNX
// Runtime sessions made and run per node) are not lint's output, as Polygraphy captures them.
class QuietLogging {
 public:
  QuietLogging() : saved_(Logger::global().severity()) {
    if (saved_ < Severity::kWarning) Logger::global().set_severity(Severity::kWarning);
  }
  ~QuietLogging() { Logger::global().set_severity(saved_); }
  QuietLogging(const QuietLogging&) = delete;
  QuietLogging& operator=(const QuietLogging&) = delete;

 private:
  Severity saved_;
};

// Runs the whole model on `feed`; throws parity::Error when it fails.
void run_whole_model(const onnx::Model& model, const NamedTensors& feed, const LintOptions& options) {
  if (options.runner == LintNodeRunner::kReference) {
    Interpreter interpreter(model, InterpreterOptions{});
    NamedValues values;
    for (const auto& [name, tensor] : feed) values.emplace_back(name, ops::Value::of(tensor));
    interpreter.run(values);
    return;
  }
  QuietLogging quiet;
  session_from_model(model, options.onnxrt)->run(feed);
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
  if (options.feeds.empty()) raise<InvalidInputError>("check lint needs at least one iteration of inputs, got none");
  LintReport report;
  Recorder recorder(report);
  GraphProto& graph = *model->mutable_graph();
  if (graph.node_size() == 0) {
    recorder.add("warning", "onnx_loader", "ONNX model has no nodes");
    recorder.finish();
    return report;
  }
  const bool on_onnxrt = options.runner == LintNodeRunner::kOnnxRuntime;
  if (on_onnxrt) {
    // A missing library or provider is the user's setup, not the model's fault: fail now, clearly.
    OnnxrtLibraryInfo library = load_onnxrt_library(options.onnxrt.library_path);
    auto providers = resolve_onnxrt_providers(options.onnxrt);
    log::verbose("Node checks run on ONNX Runtime {} ({}) with providers: {}", library.version, library.path,
                 fmt::join(providers, ", "));
  }
  std::optional<OnnxrtLogCapture> onnxrt_log;
  if (on_onnxrt) onnxrt_log.emplace();

  onnx::toposort(graph);  // throws, naming a node, on a cycle
  name_unnamed_nodes(graph);
  std::map<std::string, std::vector<int>> ids;
  for (int i = 0; i < graph.node_size(); ++i) ids[graph.node(i).name()].push_back(i);
  for (const auto& [name, where] : ids)
    if (where.size() > 1)
      recorder.add("exception", kGraphSource,
                   fmt::format("Duplicate node name: '{}' for nodes with topological IDs: [{}] found.", name,
                               fmt::join(where, ", ")),
                   name);

  // The model that is checked and whose nodes run alone; the whole model runs as loaded.
  onnx::Model exported{std::make_shared<::onnx::ModelProto>(*model.proto), model.path, model.base_dir};
  import_used_domains(*exported.proto);

  bool checker_ok = true;
  try {
    // Like Polygraphy: graph outputs declared without a shape get one (from shape inference when it
    // has one) so the checker judges the model, not the missing annotation.
    onnx::Model checked{std::make_shared<::onnx::ModelProto>(*exported.proto), model.path, model.base_dir};
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
    // Polygraphy reports the checker's own text (Parity's error says "ONNX checker: " first).
    std::string message = e.message();
    if (message.starts_with(kCheckerPrefix)) message.erase(0, std::string_view(kCheckerPrefix).size());
    if (message.find("Bad node spec for node") == std::string::npos) recorder.add("exception", "onnx_checker", message);
  }
  log::verbose("ONNX Checker passed: {}", checker_ok);

  // The feed the node checks start from: the first iteration, or the first the whole model fails on.
  const NamedTensors* node_check_feed = &options.feeds.front();
  if (checker_ok) {
    bool all_passed = true;
    for (std::size_t iteration = 0; iteration < options.feeds.size() && all_passed; ++iteration) {
      try {
        run_whole_model(model, options.feeds[iteration], options);
      } catch (const Error& e) {
        all_passed = false;
        node_check_feed = &options.feeds[iteration];
        log::verbose("Running the whole model on iteration {} failed ({}); linting node by node", iteration, e.what());
      }
    }
    if (all_passed) {
      // Polygraphy reports what ONNX Runtime printed while the model ran (only when it passed:
      // otherwise the node checks repeat it).
      if (onnxrt_log)
        for (const auto& message : onnxrt_log->take())
          recorder.add("warning", kOnnxrtSource, detail::polygraphy_onnxrt_message(message));
      for (const auto& n : graph.node()) recorder.pass(n.name());
      for (const auto& name : report_unused(model, recorder)) recorder.unlist(name);
      recorder.finish();
      log::verbose("The whole model ran on {}; every node passes.",
                   on_onnxrt ? "ONNX Runtime" : "the reference runner");
      return report;
    }
  }

  detail::ValueTable cache;
  for (const auto& [name, tensor] : *node_check_feed) cache[name] = ops::Value::of(tensor);
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
      detail::ValueTable values;
      if (on_onnxrt) {
        QuietLogging quiet;
        values = detail::run_node_on_onnxrt(exported, node, constants, cache, options.onnxrt);
      } else {
        values = detail::evaluate_nodes(model, {&node}, constants, cache);
      }
      for (auto& [name, v] : values) cache[name] = std::move(v);
      recorder.pass(node.name());
    } catch (const Error& e) {
      if (on_onnxrt) {
        auto onnxrt_message = onnxrt_error_message(e);
        std::string message = detail::polygraphy_onnxrt_message(onnxrt_message ? *onnxrt_message : e.message());
        recorder.add(failed_onnxrt_node_level(message), kOnnxrtSource, message, node.name(), node.op_type());
      } else {
        recorder.add(failed_reference_node_level(node, e), kReferenceSource, e.what(), node.name(), node.op_type());
      }
    }
    if (onnxrt_log) onnxrt_log->take();  // Polygraphy ignores what ONNX Runtime prints in node checks
  }
  report_unused(model, recorder);
  recorder.finish();
  return report;
}

}  // namespace parity::runtime
