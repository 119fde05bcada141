#include "parity/runtime/passes/fold_constants.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/graph_order.h"
#include "parity/onnx/passes.h"
#include "parity/onnx/tensor_proto.h"
#include "parity/runtime/onnxrt/symbolic_shape_inference.h"
#include "evaluate_nodes.h"
#include "fold_partitions.h"

namespace parity::runtime {
namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

using ConstTable = detail::ConstantTable;
using InfoTable = std::map<std::string, TensorInfo>;

bool is_default_domain(const NodeProto& node) { return node.domain().empty() || node.domain() == "ai.onnx"; }

bool is_nondeterministic(const NodeProto& node) {
  static const std::unordered_set<std::string> kRandom = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                                          "RandomUniformLike", "Multinomial", "Bernoulli"};
  return is_default_domain(node) && kRandom.count(node.op_type());
}

const ::onnx::AttributeProto* find_attribute(const NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

// Dims of `name` with unknown ones as nullopt; nullopt when even the rank is unknown.
std::optional<std::vector<std::optional<int64_t>>> partial_shape(const std::string& name, const InfoTable& infos) {
  auto it = infos.find(name);
  if (it == infos.end() || !it->second.shape) return std::nullopt;
  std::vector<std::optional<int64_t>> dims;
  for (const auto& d : *it->second.shape) dims.push_back(d.value && *d.value >= 0 ? d.value : std::nullopt);
  return dims;
}

std::vector<std::optional<int64_t>> shape_node_value(const NodeProto& shape_node,
                                                     std::vector<std::optional<int64_t>> dims) {
  auto rank = static_cast<int64_t>(dims.size());
  int64_t start = 0, end = rank;
  if (const auto* a = find_attribute(shape_node, "start")) start = a->i();
  if (const auto* a = find_attribute(shape_node, "end")) end = a->i();
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  if (end <= start) return {};
  return {dims.begin() + start, dims.begin() + end};
}

TensorProto int64_constant(const std::string& name, const std::vector<int64_t>& values, std::vector<int64_t> dims) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(TensorProto::INT64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

std::optional<std::vector<int64_t>> constant_ints(const std::string& name, const ConstTable& constants,
                                                  const onnx::Model& model, std::vector<int64_t>* dims = nullptr) {
  auto it = constants.find(name);
  if (it == constants.end()) return std::nullopt;
  Tensor t = onnx::tensor_from_proto(*it->second, model.base_dir);
  if (dims) *dims = std::vector<int64_t>(t.shape().begin(), t.shape().end());
  std::vector<int64_t> values;
  if (t.dtype() == DType::kInt64) for (auto v : t.span<int64_t>()) values.push_back(v);
  else if (t.dtype() == DType::kInt32) for (auto v : t.span<int32_t>()) values.push_back(v);
  else return std::nullopt;
  return values;
}

// Renames reads (inputs, recursively into subgraphs) per `names`.
void rename_reads(GraphProto& graph, const std::unordered_map<std::string, std::string>& names) {
  for (auto& node : *graph.mutable_node()) {
    for (auto& in : *node.mutable_input())
      if (auto it = names.find(in); it != names.end()) in = it->second;
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) rename_reads(*a.mutable_g(), names);
      for (auto& g : *a.mutable_graphs()) rename_reads(g, names);
    }
  }
  for (auto& o : *graph.mutable_output())
    if (auto it = names.find(o.name()); it != names.end()) o.set_name(it->second);
}

class Folder {
 public:
  Folder(onnx::Model& model, const FoldOptions& options, FoldReport& report)
      : model_(model), options_(options), report_(report) {}

  // One pass over `graph` and (recursively) its subgraphs. Returns whether anything changed.
  bool fold_graph(GraphProto& graph, const ConstTable& outer, const InfoTable& outer_infos, bool is_main,
                  bool shapes_trustworthy, int depth) {
    if (depth > 64) raise<ResourceLimitError>("subgraphs nested deeper than 64 levels");
    bool changed = false;
    ConstTable constants = local_constants(graph, outer, is_main);
    InfoTable infos = outer_infos;
    for (auto& [name, info] : onnx::known_value_infos(graph)) infos[name] = info;

    if (options_.flatten_subgraphs && inline_constant_ifs(graph, constants)) {
      changed = true;
      constants = local_constants(graph, outer, is_main);
    }
    if (options_.fold_shapes && shapes_trustworthy && fold_shapes(graph, constants, infos)) {
      changed = true;
      constants = local_constants(graph, outer, is_main);
    }
    if (fold_nodes(graph, constants)) {
      changed = true;
      constants = local_constants(graph, outer, is_main);
    }
    for (auto& node : *graph.mutable_node()) {
      // Shapes inferred inside Loop/Scan bodies describe one iteration; only If branches keep them.
      bool trust = shapes_trustworthy && node.op_type() == "If";
      for (auto& a : *node.mutable_attribute()) {
        if (a.has_g()) changed |= fold_graph(*a.mutable_g(), constants, infos, false, trust, depth + 1);
        for (auto& g : *a.mutable_graphs()) changed |= fold_graph(g, constants, infos, false, trust, depth + 1);
      }
    }
    return changed;
  }

 private:
  ConstTable local_constants(const GraphProto& graph, const ConstTable& outer, bool is_main) const {
    ConstTable constants = outer;
    std::unordered_set<std::string> inputs;
    for (const auto& v : graph.input()) inputs.insert(v.name());
    for (const auto& v : graph.input()) constants.erase(v.name());
    for (const auto& n : graph.node())
      for (const auto& o : n.output()) constants.erase(o);
    for (const auto& t : graph.initializer())
      if (!(is_main && inputs.count(t.name()))) constants[t.name()] = &t;
    return constants;
  }

  bool inline_constant_ifs(GraphProto& graph, const ConstTable& constants) {
    bool any = false;
    google::protobuf::RepeatedPtrField<NodeProto> nodes;
    std::vector<TensorProto> new_initializers;
    for (auto& node : *graph.mutable_node()) {
      if (!(is_default_domain(node) && node.op_type() == "If" && node.input_size() == 1 &&
            constants.count(node.input(0)))) {
        nodes.Add(std::move(node));
        continue;
      }
      Tensor cond = onnx::tensor_from_proto(*constants.at(node.input(0)), model_.base_dir);
      if (cond.size() != 1 || cond.dtype() != DType::kBool) {
        nodes.Add(std::move(node));
        continue;
      }
      bool taken = cond.data<bool>()[0];
      const auto* attr = find_attribute(node, taken ? "then_branch" : "else_branch");
      if (!attr || !attr->has_g() || attr->g().output_size() < node.output_size()) {
        nodes.Add(std::move(node));
        continue;
      }
      GraphProto branch = attr->g();
      std::unordered_map<std::string, std::string> renames;
      std::unordered_set<std::string> produced;
      for (const auto& n : branch.node())
        for (const auto& o : n.output()) produced.insert(o);
      std::unordered_set<std::string> branch_inits;
      for (const auto& t : branch.initializer()) branch_inits.insert(t.name());
      std::vector<NodeProto> identities;
      for (int i = 0; i < node.output_size(); ++i) {
        const std::string& target = node.output(i);
        const std::string& source = branch.output(i).name();
        if (target.empty()) continue;
        bool renamable = (produced.count(source) || branch_inits.count(source)) && !renames.count(source);
        if (renamable) {
          renames[source] = target;
        } else {
          NodeProto id;
          id.set_op_type("Identity");
          id.set_name(target + "_inlined_identity");
          id.add_input(renames.count(source) ? renames[source] : source);
          id.add_output(target);
          identities.push_back(std::move(id));
        }
      }
      for (auto& n : *branch.mutable_node())
        for (auto& o : *n.mutable_output())
          if (auto it = renames.find(o); it != renames.end()) o = it->second;
      rename_reads(branch, renames);
      for (auto& t : *branch.mutable_initializer()) {
        if (auto it = renames.find(t.name()); it != renames.end()) t.set_name(it->second);
        new_initializers.push_back(std::move(t));
      }
      for (auto& n : *branch.mutable_node()) nodes.Add(std::move(n));
      for (auto& n : identities) nodes.Add(std::move(n));
      ++report_.ifs_inlined;
      any = true;
    }
    graph.mutable_node()->Swap(&nodes);
    for (auto& t : new_initializers) *graph.add_initializer() = std::move(t);
    return any;
  }

  bool fold_shapes(GraphProto& graph, const ConstTable& constants, const InfoTable& infos) {
    std::unordered_map<std::string, const NodeProto*> producer;
    for (const auto& n : graph.node())
      for (const auto& o : n.output()) producer[o] = &n;
    std::unordered_map<int, TensorProto> replacements;  // node index -> its constant output
    for (int i = 0; i < graph.node_size(); ++i) {
      const NodeProto& node = graph.node(i);
      if (!is_default_domain(node) || node.output_size() != 1 || node.input_size() < 1) continue;
      const std::string& out = node.output(0);
      if (constants.count(node.input(0))) continue;  // folded by evaluation anyway
      if (node.op_type() == "Shape" || node.op_type() == "Size") {
        auto dims = partial_shape(node.input(0), infos);
        if (!dims) continue;
        if (node.op_type() == "Size") {
          if (std::any_of(dims->begin(), dims->end(), [](const auto& d) { return !d; })) continue;
          int64_t n = 1;
          for (const auto& d : *dims) n *= *d;
          replacements[i] = int64_constant(out, {n}, {});
          continue;
        }
        auto picked = shape_node_value(node, *dims);
        if (std::any_of(picked.begin(), picked.end(), [](const auto& d) { return !d; })) continue;
        std::vector<int64_t> values;
        for (const auto& d : picked) values.push_back(*d);
        replacements[i] = int64_constant(out, values, {static_cast<int64_t>(values.size())});
        continue;
      }
      // Gather / Slice of a Shape that picks only static dims.
      if (node.op_type() != "Gather" && node.op_type() != "Slice") continue;
      auto p = producer.find(node.input(0));
      if (p == producer.end() || p->second->op_type() != "Shape" || !is_default_domain(*p->second)) continue;
      auto dims = partial_shape(p->second->input(0), infos);
      if (!dims) continue;
      auto shape_value = shape_node_value(*p->second, *dims);
      auto n = static_cast<int64_t>(shape_value.size());
      std::vector<int64_t> values, out_dims;
      if (node.op_type() == "Gather") {
        if (node.input_size() != 2) continue;
        if (const auto* axis = find_attribute(node, "axis"); axis && axis->i() != 0 && axis->i() != -1) continue;
        auto indices = constant_ints(node.input(1), constants, model_, &out_dims);
        if (!indices) continue;
        bool ok = true;
        for (int64_t idx : *indices) {
          if (idx < 0) idx += n;
          if (idx < 0 || idx >= n || !shape_value[static_cast<std::size_t>(idx)]) { ok = false; break; }
          values.push_back(*shape_value[static_cast<std::size_t>(idx)]);
        }
        if (!ok) continue;
      } else {
        if (node.input_size() < 3) continue;
        auto starts = constant_ints(node.input(1), constants, model_);
        auto ends = constant_ints(node.input(2), constants, model_);
        if (!starts || !ends || starts->size() != 1 || ends->size() != 1) continue;
        int64_t step = 1;
        if (node.input_size() > 3 && !node.input(3).empty()) {
          auto axes = constant_ints(node.input(3), constants, model_);
          if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1)) continue;
        }
        if (node.input_size() > 4 && !node.input(4).empty()) {
          auto steps = constant_ints(node.input(4), constants, model_);
          if (!steps || steps->size() != 1 || (*steps)[0] == 0) continue;
          step = (*steps)[0];
        }
        // Python slicing semantics, as ONNX defines Slice.
        auto clamp_index = [&](int64_t v, bool is_start) {
          if (v < 0) v += n;
          if (step > 0) return std::clamp<int64_t>(v, 0, n);
          return std::clamp<int64_t>(v, is_start ? 0 : -1, n - 1);
        };
        int64_t s = clamp_index((*starts)[0], true), e = clamp_index((*ends)[0], false);
        bool ok = true;
        for (int64_t k = s; step > 0 ? k < e : k > e; k += step) {
          if (k < 0 || k >= n || !shape_value[static_cast<std::size_t>(k)]) { ok = false; break; }
          values.push_back(*shape_value[static_cast<std::size_t>(k)]);
        }
        if (!ok) continue;
        out_dims = {static_cast<int64_t>(values.size())};
      }
      replacements[i] = int64_constant(out, values, out_dims);
    }
    if (replacements.empty()) return false;
    google::protobuf::RepeatedPtrField<NodeProto> nodes;
    for (int i = 0; i < graph.node_size(); ++i) {
      auto it = replacements.find(i);
      if (it == replacements.end()) {
        nodes.Add(std::move(*graph.mutable_node(i)));
      } else {
        log::verbose("Folding {} to a constant from the static shape of its input", onnx::describe_node(graph.node(i)));
        *graph.add_initializer() = std::move(it->second);
        ++report_.shapes_folded;
      }
    }
    graph.mutable_node()->Swap(&nodes);
    return true;
  }

  bool fold_nodes(GraphProto& graph, const ConstTable& constants) {
    std::unordered_set<std::string> constant_names;
    for (const auto& [name, t] : constants) constant_names.insert(name);
    std::vector<int> foldable;
    for (int i = 0; i < graph.node_size(); ++i) {
      const NodeProto& node = graph.node(i);
      if (is_nondeterministic(node) || node.output_size() == 0) continue;
      auto reads = onnx::node_reads(node);
      if (!std::all_of(reads.begin(), reads.end(), [&](const std::string& r) { return constant_names.count(r) > 0; }))
        continue;
      foldable.push_back(i);
      for (const auto& o : node.output())
        if (!o.empty()) constant_names.insert(o);
    }
    if (foldable.empty()) return false;
    auto values = detail::evaluate_foldable_nodes(model_, graph, foldable, constants, options_.partitioning,
                                                  report_.failed_evaluations);
    // A node is replaced when every output it has came back as a tensor within the threshold.
    std::unordered_map<int, std::vector<TensorProto>> replaced;
    for (int i : foldable) {
      const NodeProto& node = graph.node(i);
      std::vector<TensorProto> outs;
      bool ok = true;
      for (const auto& o : node.output()) {
        if (o.empty()) continue;
        auto it = values.find(o);
        if (it == values.end() || !it->second.is_tensor()) { ok = false; break; }
        const Tensor& t = it->second.tensor();
        if (options_.size_threshold && static_cast<int64_t>(t.byte_size()) > *options_.size_threshold) {
          log::verbose("Not folding '{}': {} bytes, over the size threshold of {} bytes", o, t.byte_size(),
                       *options_.size_threshold);
          ++report_.skipped_over_threshold;
          ok = false;
          break;
        }
        outs.push_back(onnx::tensor_to_proto(t.view(), o));
      }
      if (ok) replaced[i] = std::move(outs);
    }
    if (replaced.empty()) return false;
    google::protobuf::RepeatedPtrField<NodeProto> kept;
    std::vector<TensorProto> new_initializers;
    for (int i = 0; i < graph.node_size(); ++i) {
      auto it = replaced.find(i);
      if (it == replaced.end()) {
        kept.Add(std::move(*graph.mutable_node(i)));
        continue;
      }
      log::extra_verbose("Folded {}", onnx::describe_node(graph.node(i)));
      for (auto& t : it->second) {
        new_initializers.push_back(std::move(t));
        ++report_.tensors_folded;
      }
    }
    graph.mutable_node()->Swap(&kept);
    for (auto& t : new_initializers) *graph.add_initializer() = std::move(t);
    return true;
  }

  onnx::Model& model_;
  const FoldOptions& options_;
  FoldReport& report_;
};

}  // namespace

namespace {

// The graph as shape inference here sees it (its value_info cleared first), the initializers'
// values left out (their names, types and dims kept): equal strings mean shape inference would give
// the same types again.
std::string graph_structure(const GraphProto& graph) {
  GraphProto shell;
  *shell.mutable_node() = graph.node();
  *shell.mutable_input() = graph.input();
  *shell.mutable_output() = graph.output();
  for (const auto& initializer : graph.initializer()) {
    auto& entry = *shell.add_initializer();
    entry.set_name(initializer.name());
    entry.set_data_type(initializer.data_type());
    *entry.mutable_dims() = initializer.dims();
  }
  return shell.SerializeAsString();
}

}  // namespace

FoldReport fold_constants(onnx::Model& model, const FoldOptions& options) {
  FoldReport report;
  GraphProto& graph = *model->mutable_graph();
  report.nodes_before = onnx::count_nodes(graph);
  const int max_passes = options.num_passes > 0 ? options.num_passes : 100;
  Folder folder(model, options, report);
  bool warned = false;
  // The graph's structure when shape inference last ran here: inference runs again only on a graph
  // that changed since (ONNX Runtime's symbolic shape inference costs a round trip to Python).
  std::optional<std::string> inferred;
  if (options.shapes_inferred) inferred = graph_structure(graph);
  auto infer = [&] {
    onnx::clear_value_info(graph);
    auto result = infer_shapes(model, options.allow_onnxruntime_shape_inference);
    if (!result.ok && !warned) {
      log::warning("ONNX shape inference stopped with an error; shapes it could not reach are not folded.\n"
                   "Note: error was: {}",
                   result.error);
      warned = true;
    }
    inferred = graph_structure(graph);
  };
  for (int pass = 0; pass < max_passes; ++pass) {
    int64_t before = onnx::count_nodes(graph);
    if (options.log_passes) log::start("Folding Constants | Pass {}", pass + 1);
    const bool first_with_given_shapes = pass == 0 && options.shapes_inferred;
    if (options.shape_inference && (options.per_pass_shape_inference || pass == 0) && !first_with_given_shapes)
      infer();
    onnx::lower_constant_nodes(graph);
    onnx::toposort(graph);
    bool changed = folder.fold_graph(graph, {}, {}, /*is_main=*/true, /*shapes_trustworthy=*/true, 0);
    onnx::cleanup(graph, onnx::CleanupOptions{.remove_unused_graph_inputs = false, .recurse_subgraphs = true});
    ++report.passes;
    int64_t after = onnx::count_nodes(graph);
    log::verbose("Constant folding pass {}: {} -> {} nodes", pass + 1, before, after);
    if (options.log_passes)
      log::finish("    Total Nodes | Original: {:5}, After Folding: {:5} | {:5} Nodes Folded", before, after,
                  before - after);
    if (!changed) break;
  }
  if (options.shape_inference && (!inferred || *inferred != graph_structure(graph))) infer();
  report.nodes_after = onnx::count_nodes(graph);
  return report;
}

}  // namespace parity::runtime
