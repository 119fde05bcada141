// surgeon insert: put one node between chosen tensors, replacing what produced its outputs.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <unordered_set>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/onnx/passes.h"

namespace parity::onnx {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::NodeProto;

namespace {

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

enum class Kind { kInt, kFloat, kString };

struct Scalar {
  Kind kind;
  int64_t i = 0;
  double f = 0;
  std::string s;
};

Scalar parse_scalar(const std::string& raw, const std::string& name) {
  std::string text = trim(raw);
  if (text.size() >= 1 && (text.front() == '"' || text.front() == '\'')) {
    if (text.size() < 2 || text.back() != text.front())
      raise<InvalidInputError>("--attrs {}: unterminated quote in value {}", name, raw);
    return {Kind::kString, 0, 0, text.substr(1, text.size() - 2)};
  }
  if (text.empty()) raise<InvalidInputError>("--attrs {}: empty value", name);
  if (text.find_first_of("'\"[]") != std::string::npos)
    raise<InvalidInputError>("--attrs {}: cannot parse value '{}' (stray quote or bracket)", name, raw);
  errno = 0;
  char* end = nullptr;
  long long i = std::strtoll(text.c_str(), &end, 10);
  if (end && *end == '\0' && errno == 0) return {Kind::kInt, i, 0, {}};
  errno = 0;
  double f = std::strtod(text.c_str(), &end);
  if (end && *end == '\0' && errno == 0) return {Kind::kFloat, 0, f, {}};
  return {Kind::kString, 0, 0, text};
}

}  // namespace

AttributeProto parse_attribute(const std::string& name, const std::string& raw) {
  if (name.empty()) raise<InvalidInputError>("--attrs: attribute without a name in '={}'", raw);
  AttributeProto a;
  a.set_name(name);
  std::string text = trim(raw);
  bool opens = !text.empty() && text.front() == '[';
  bool closes = !text.empty() && text.back() == ']';
  if (opens != closes)
    raise<InvalidInputError>("--attrs {}: unbalanced brackets in value '{}' (expected a list like [1,2,3])", name, raw);
  if (!opens) {
    Scalar v = parse_scalar(text, name);
    switch (v.kind) {
      case Kind::kInt: a.set_type(AttributeProto::INT); a.set_i(v.i); break;
      case Kind::kFloat: a.set_type(AttributeProto::FLOAT); a.set_f(static_cast<float>(v.f)); break;
      case Kind::kString: a.set_type(AttributeProto::STRING); a.set_s(v.s); break;
    }
    return a;
  }
  std::string body = text.substr(1, text.size() - 2);
  if (body.find_first_of("[]") != std::string::npos)
    raise<InvalidInputError>("--attrs {}: nested lists are not supported ('{}')", name, raw);
  std::vector<Scalar> items;
  if (!trim(body).empty()) {
    std::size_t start = 0;
    while (true) {
      auto comma = body.find(',', start);
      items.push_back(parse_scalar(body.substr(start, comma == std::string::npos ? std::string::npos : comma - start),
                                   name));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  bool any_string = std::any_of(items.begin(), items.end(), [](const Scalar& s) { return s.kind == Kind::kString; });
  bool all_string = std::all_of(items.begin(), items.end(), [](const Scalar& s) { return s.kind == Kind::kString; });
  if (any_string && !all_string)
    raise<InvalidInputError>("--attrs {}: list '{}' mixes strings and numbers", name, raw);
  bool any_float = std::any_of(items.begin(), items.end(), [](const Scalar& s) { return s.kind == Kind::kFloat; });
  if (items.empty()) {
    a.set_type(AttributeProto::INTS);
  } else if (all_string) {
    a.set_type(AttributeProto::STRINGS);
    for (const auto& s : items) a.add_strings(s.s);
  } else if (any_float) {
    a.set_type(AttributeProto::FLOATS);
    for (const auto& s : items)
      a.add_floats(static_cast<float>(s.kind == Kind::kFloat ? s.f : static_cast<double>(s.i)));
  } else {
    a.set_type(AttributeProto::INTS);
    for (const auto& s : items) a.add_ints(s.i);
  }
  return a;
}

void insert_node(::onnx::ModelProto& model, const InsertNodeOptions& options) {
  GraphProto& graph = *model.mutable_graph();
  if (options.op.empty()) raise<InvalidInputError>("surgeon insert: --op is empty");
  std::unordered_set<std::string> known;
  for (const auto& v : graph.input()) known.insert(v.name());
  for (const auto& t : graph.initializer()) known.insert(t.name());
  for (const auto& n : graph.node())
    for (const auto& o : n.output())
      if (!o.empty()) known.insert(o);
  auto require = [&](const std::string& name) {
    if (!known.count(name)) raise<InvalidInputError>("tensor '{}' does not exist in the model", name);
  };
  for (const auto& name : options.inputs) require(name);
  for (const auto& name : options.outputs) require(name);

  const std::string suffix = "_polygraphy_surgeon_insert_output";
  auto rename_reads = [&](const std::string& from, const std::string& to) {
    for (auto& n : *graph.mutable_node())
      for (auto& in : *n.mutable_input())
        if (in == from) in = to;
  };
  std::vector<std::string> node_outputs;
  std::vector<std::string> node_inputs = options.inputs;
  for (const auto& name : options.outputs) {
    bool also_input = std::find(options.inputs.begin(), options.inputs.end(), name) != options.inputs.end();
    if (!also_input) {
      // Whatever produced this tensor no longer does.
      for (auto& n : *graph.mutable_node())
        for (auto& o : *n.mutable_output())
          if (o == name) o.clear();
      node_outputs.push_back(name);
      continue;
    }
    bool is_graph_output = std::any_of(graph.output().begin(), graph.output().end(),
                                       [&](const auto& v) { return v.name() == name; });
    if (is_graph_output) {
      // The old tensor takes the suffixed name; the new node produces the graph output's name.
      const std::string old_name = name + suffix;
      rename_reads(name, old_name);
      for (auto& n : *graph.mutable_node())
        for (auto& o : *n.mutable_output())
          if (o == name) o = old_name;
      for (auto& t : *graph.mutable_initializer())
        if (t.name() == name) t.set_name(old_name);
      for (auto& v : *graph.mutable_input())
        if (v.name() == name) v.set_name(old_name);
      for (auto& in : node_inputs)
        if (in == name) in = old_name;
      node_outputs.push_back(name);
    } else {
      const std::string new_name = name + suffix;
      rename_reads(name, new_name);
      for (auto& v : *graph.mutable_output())
        if (v.name() == name) v.set_name(new_name);
      node_outputs.push_back(new_name);
    }
  }
  NodeProto node;
  node.set_op_type(options.op);
  if (!options.name.empty()) node.set_name(options.name);
  if (!options.domain.empty()) node.set_domain(options.domain);
  for (const auto& in : node_inputs) node.add_input(in);
  for (const auto& out : node_outputs) node.add_output(out);
  for (const auto& a : options.attributes) *node.add_attribute() = a;
  // As Polygraphy does, the node goes right after the last producer of its inputs (first when none
  // is produced by a node), so the toposort below keeps it there in a sorted graph.
  int position = 0;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const auto& out : graph.node(i).output())
      if (std::find(node_inputs.begin(), node_inputs.end(), out) != node_inputs.end()) position = i + 1;
  *graph.add_node() = std::move(node);
  for (int i = graph.node_size() - 1; i > position; --i) graph.mutable_node()->SwapElements(i, i - 1);
  // Stale shapes of the replaced tensors would mislead shape inference.
  std::unordered_set<std::string> touched(options.outputs.begin(), options.outputs.end());
  auto* infos = graph.mutable_value_info();
  for (int i = infos->size() - 1; i >= 0; --i)
    if (touched.count(infos->Get(i).name())) infos->DeleteSubrange(i, 1);
  with_context("inserting the node would make its inputs depend on its outputs", [&] { toposort(graph); });
  cleanup(graph, CleanupOptions{.remove_unused_graph_inputs = false, .recurse_subgraphs = false});
}

}  // namespace parity::onnx
