// convert --fp-to-fp16 / --fp-to-bf16: float32 tensors and computation to float16 or bfloat16, in
// the main graph and every subgraph (If/Loop/Scan bodies).
//
// Every node is either converted or kept in float32 (the keep list, ops ONNX does not define in the
// reduced type at the model's opset, and every node inside a kept node's subgraphs). Each float
// tensor then has the type its producer gives it, and a reader that wants the other type reads a
// Cast of it, made once per graph. So a tensor between two kept nodes stays float32, and Casts sit
// only where a float32 node meets a reduced one, at graph inputs/outputs, and before inputs whose
// schema does not accept the reduced type (Resize scales...).
#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/defs/schema.h>

#include "parity/core/error.h"
#include "parity/core/half.h"
#include "parity/core/logger.h"
#include "parity/onnx/graph_order.h"
#include "parity/onnx/passes.h"
#include "parity/onnx/precision_keep_list.h"
#include "parity/onnx/reduced_precision.h"
#include "parity/onnx/tensor_proto.h"

namespace parity::onnx {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

std::string_view reduced_precision_name(ReducedPrecision precision) {
  return precision == ReducedPrecision::kFloat16 ? "float16" : "bfloat16";
}

namespace {

constexpr int32_t kFloat = TensorProto::FLOAT;

// The reduced type's ONNX names.
struct ReducedType {
  int32_t onnx_type;
  std::string type_string;  // as in schemas: "tensor(float16)"
  std::string suffix;       // for inserted names: "fp16"
};

ReducedType reduced_type(ReducedPrecision precision) {
  if (precision == ReducedPrecision::kFloat16) return {TensorProto::FLOAT16, "tensor(float16)", "fp16"};
  return {TensorProto::BFLOAT16, "tensor(bfloat16)", "bf16"};
}

// Float32 values rounded to nearest-even in the reduced type. Finite values beyond its range are
// clamped to its largest finite value rather than becoming infinities.
TensorProto to_reduced(const TensorProto& t, const std::filesystem::path& base_dir, ReducedPrecision precision,
                       const std::string& name) {
  Tensor source = tensor_from_proto(t, base_dir);
  const bool half = precision == ReducedPrecision::kFloat16;
  Tensor reduced = Tensor::zeros(half ? DType::kFloat16 : DType::kBFloat16, source.shape());
  const float largest = half ? 65504.0f : std::bit_cast<float>(uint32_t{0x7F7F0000});
  auto in = source.span<float>();
  auto* out = reduced.mutable_data<uint16_t>();
  for (std::size_t i = 0; i < in.size(); ++i) {
    float value = std::isfinite(in[i]) ? std::clamp(in[i], -largest, largest) : in[i];
    out[i] = half ? float_to_float16_bits(value) : float_to_bfloat16_bits(value);
  }
  return tensor_to_proto(reduced.view(), name);
}

// Whether formal `index` of the list (inputs or outputs of a schema) may have `type_string`.
bool formal_accepts(const ::onnx::OpSchema& schema, const std::vector<::onnx::OpSchema::FormalParameter>& formals,
                    int index, const std::string& type_string) {
  if (formals.empty()) return true;
  if (static_cast<std::size_t>(index) >= formals.size() && formals.back().GetOption() != ::onnx::OpSchema::Variadic)
    return true;
  const auto& formal = formals[std::min<std::size_t>(static_cast<std::size_t>(index), formals.size() - 1)];
  const std::string& type = formal.GetTypeStr();
  for (const auto& constraint : schema.typeConstraintParams())
    if (constraint.type_param_str == type)
      return std::find(constraint.allowed_type_strs.begin(), constraint.allowed_type_strs.end(), type_string) !=
             constraint.allowed_type_strs.end();
  return type == type_string;
}

NodeProto make_cast(const std::string& input, const std::string& output, int32_t to, const std::string& name) {
  NodeProto cast;
  cast.set_op_type("Cast");
  cast.set_name(name);
  cast.add_input(input);
  cast.add_output(output);
  auto* a = cast.add_attribute();
  a->set_name("to");
  a->set_type(AttributeProto::INT);
  a->set_i(to);
  return cast;
}

template <typename Fn>
void for_each_subgraph(NodeProto& node, Fn&& fn) {
  for (auto& a : *node.mutable_attribute()) {
    if (a.has_g()) fn(*a.mutable_g());
    for (auto& g : *a.mutable_graphs()) fn(g);
  }
}

enum class Keep { kConverted, kInherited, kListed, kBySchema };

// Names are unique across a model's graphs (ONNX's SSA rule), so one table of types serves every
// graph; which version (float32 or reduced) of a tensor a graph can read is scoped, though: a Cast
// made inside a subgraph is not visible outside it.
class Converter {
 public:
  Converter(Model& owner, const ReducedPrecisionOptions& options, ReducedPrecisionReport& report)
      : owner_(owner), options_(options), report_(report), reduced_(reduced_type(options.precision)) {
    for (const auto& o : owner->opset_import()) opsets_[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
    if (options.default_keep) keep_.add_default_op_types();
    keep_.add_all(options.keep_fp32);
  }

  void run() {
    GraphProto& graph = *owner_->mutable_graph();
    // A kept Constant keeps its value in float32: converted readers read a Cast of it.
    lower_constant_nodes(graph, [&](const NodeProto& node) {
      if (!keep_.matches(node)) return;
      kept_constants_.insert(node.output(0));
      ++report_.nodes_kept_by_list;
    });
    toposort(graph);
    collect_types_and_names(graph);
    collect_initializer_reads(graph, /*is_main=*/true, /*owner_kept=*/false);
    rewrite(graph, /*is_main=*/true, /*owner_kept=*/false);
    report_.op_types_kept_by_schema.assign(schema_kept_ops_.begin(), schema_kept_ops_.end());
    std::vector<std::string> unmatched;
    for (const auto* entry : keep_.unmatched()) {
      if (entry->kind == PrecisionKeepList::Kind::kOpType)
        log::warning("--keep-fp32: no node has {}; nothing is kept for it", PrecisionKeepList::describe(*entry));
      else
        unmatched.push_back(PrecisionKeepList::describe(*entry));
    }
    if (!unmatched.empty())
      raise<InvalidInputError>("--keep-fp32: no node matches {}", fmt::join(unmatched, ", "));
  }

 private:
  struct Scope {
    std::unordered_map<std::string, std::map<int32_t, std::string>> versions;  // tensor -> type -> name to read
    google::protobuf::RepeatedPtrField<NodeProto>* nodes;                      // where this graph's Casts go
  };

  bool is_float(const std::string& name) const {
    auto it = types_.find(name);
    return it != types_.end() && it->second == kFloat;
  }

  const ::onnx::OpSchema* schema_of(const NodeProto& node) const {
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    auto it = opsets_.find(domain);
    if (it == opsets_.end()) return nullptr;
    return ::onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(it->second), domain);
  }
  // Whether input `index` may be the reduced type (an op ONNX does not know: yes, the user's call).
  bool input_accepts_reduced(const NodeProto& node, int index) const {
    const auto* schema = schema_of(node);
    return !schema || formal_accepts(*schema, schema->inputs(), index, reduced_.type_string);
  }
  // Whether every float32 output may become the reduced type.
  bool outputs_accept_reduced(const NodeProto& node) const {
    const auto* schema = schema_of(node);
    if (!schema) return true;
    for (int o = 0; o < node.output_size(); ++o)
      if (is_float(node.output(o)) && !formal_accepts(*schema, schema->outputs(), o, reduced_.type_string))
        return false;
    return true;
  }

  // A converted Cast's input: it reads whichever version exists, float32 first, rather than a new
  // Cast (a kept producer's 70000.0 cast to int64 must not pass through float16 on the way).
  static bool reads_any_float(const NodeProto& node, int index) {
    return index == 0 && node.op_type() == "Cast" && node.domain().empty();
  }

  Keep decide(const NodeProto& node, bool owner_kept, bool mark) {
    if (owner_kept) return Keep::kInherited;
    if (mark ? keep_.matches(node) : keep_.would_match(node)) return Keep::kListed;
    if (!outputs_accept_reduced(node)) return Keep::kBySchema;
    return Keep::kConverted;
  }

  std::string fresh_name(const std::string& base) {
    std::string name = base;
    for (int i = 1; used_names_.count(name); ++i) name = fmt::format("{}_{}", base, i);
    used_names_.insert(name);
    return name;
  }

  void collect_types_and_names(GraphProto& graph) {
    for (const auto& t : graph.initializer()) {
      types_[t.name()] = t.data_type();
      used_names_.insert(t.name());
    }
    auto note = [&](const ::onnx::ValueInfoProto& v) {
      used_names_.insert(v.name());
      if (v.type().has_tensor_type() && v.type().tensor_type().elem_type() != 0)
        types_[v.name()] = v.type().tensor_type().elem_type();
    };
    for (const auto& v : graph.value_info()) note(v);
    for (const auto& v : graph.input()) note(v);
    for (const auto& v : graph.output()) note(v);
    for (auto& node : *graph.mutable_node()) {
      for (const auto& o : node.output()) used_names_.insert(o);
      for_each_subgraph(node, [&](GraphProto& g) { collect_types_and_names(g); });
    }
  }

  int32_t declared_output_type(bool is_main, bool owner_kept) const {
    if (is_main) return options_.keep_io_types ? kFloat : reduced_.onnx_type;
    return owner_kept ? kFloat : reduced_.onnx_type;
  }

  // Which float32 initializers are read in float32, which in the reduced type.
  void collect_initializer_reads(GraphProto& graph, bool is_main, bool owner_kept) {
    for (auto& node : *graph.mutable_node()) {
      Keep keep = decide(node, owner_kept, /*mark=*/false);
      bool kept = keep != Keep::kConverted;
      for (int k = 0; k < node.input_size(); ++k)
        if (is_float(node.input(k)))
          (kept || !input_accepts_reduced(node, k) || reads_any_float(node, k) ? read_float_ : read_reduced_)
              .insert(node.input(k));
      for_each_subgraph(node, [&](GraphProto& g) { collect_initializer_reads(g, false, kept); });
    }
    int32_t declared = declared_output_type(is_main, owner_kept);
    for (const auto& o : graph.output())
      if (is_float(o.name())) (declared == kFloat ? read_float_ : read_reduced_).insert(o.name());
  }

  // The name to read `tensor` as `type` in the innermost graph, casting (once per graph) when no
  // visible version has that type. A tensor no version is known for is left as it is.
  std::string version_of(const std::string& tensor, int32_t type) {
    const std::map<int32_t, std::string>* nearest = nullptr;
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      auto it = scope->versions.find(tensor);
      if (it == scope->versions.end()) continue;
      if (auto found = it->second.find(type); found != it->second.end()) return found->second;
      if (!nearest) nearest = &it->second;
    }
    if (!nearest || nearest->empty()) return tensor;
    const std::string source = nearest->begin()->second;
    const std::string cast = fresh_name(fmt::format("{}_{}", tensor, type == kFloat ? "fp32" : reduced_.suffix));
    add_cast(source, cast, type);
    scopes_.back().versions[tensor][type] = cast;
    return cast;
  }

  // The float32 version of `tensor` if one is visible, else the nearest visible one, never a Cast.
  std::string visible_version(const std::string& tensor) const {
    const std::map<int32_t, std::string>* nearest = nullptr;
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      auto it = scope->versions.find(tensor);
      if (it == scope->versions.end()) continue;
      if (auto found = it->second.find(kFloat); found != it->second.end()) return found->second;
      if (!nearest) nearest = &it->second;
    }
    return nearest && !nearest->empty() ? nearest->begin()->second : tensor;
  }

  void add_cast(const std::string& from, const std::string& to, int32_t type) {
    scopes_.back().nodes->Add(make_cast(from, to, type, fmt::format("parity_{}_cast_{}", reduced_.suffix, cast_id_++)));
    ++report_.casts_inserted;
  }

  void convert_initializers(GraphProto& graph) {
    std::vector<TensorProto> copies;
    for (auto& t : *graph.mutable_initializer()) {
      const std::string name = t.name();
      if (t.data_type() != kFloat) continue;
      auto& versions = scopes_.back().versions[name];
      bool reduced = read_reduced_.count(name) > 0 && !kept_constants_.count(name), full = read_float_.count(name) > 0;
      if (reduced && !full) {
        t = to_reduced(t, owner_.base_dir, options_.precision, name);
        versions[reduced_.onnx_type] = name;
        ++report_.initializers_converted;
      } else if (reduced) {  // read both ways: float32 readers keep the exact values
        const std::string copy = fresh_name(fmt::format("{}_{}", name, reduced_.suffix));
        copies.push_back(to_reduced(t, owner_.base_dir, options_.precision, copy));
        versions[kFloat] = name;
        versions[reduced_.onnx_type] = copy;
        ++report_.initializers_converted;
      } else {
        versions[kFloat] = name;
      }
    }
    for (auto& copy : copies) *graph.add_initializer() = std::move(copy);
  }

  // A converted node's attributes that name float32 as the type it produces.
  void retype_attributes(NodeProto& node) {
    const int32_t target = reduced_.onnx_type;
    for (auto& a : *node.mutable_attribute()) {
      bool is_cast_to = node.op_type() == "Cast" && a.name() == "to" && a.i() == kFloat;
      bool is_dtype = (node.op_type() == "EyeLike" || node.op_type().rfind("Random", 0) == 0) &&
                      a.name() == "dtype" && a.i() == kFloat;
      if (is_cast_to || is_dtype) a.set_i(target);
      if (node.op_type() == "ConstantOfShape" && a.name() == "value" && a.has_t() && a.t().data_type() == kFloat)
        *a.mutable_t() = to_reduced(a.t(), owner_.base_dir, options_.precision, a.t().name());
    }
    auto has = [&](const char* name) {
      return std::any_of(node.attribute().begin(), node.attribute().end(),
                         [&](const AttributeProto& a) { return a.name() == name; });
    };
    if (node.output_size() != 1 || !is_float(node.output(0))) return;
    // ConstantOfShape without a value makes float32 zeros: give it a reduced zero.
    if (node.op_type() == "ConstantOfShape" && !has("value")) {
      auto* a = node.add_attribute();
      a->set_name("value");
      a->set_type(AttributeProto::TENSOR);
      auto* t = a->mutable_t();
      t->set_data_type(target);
      t->add_dims(1);
      t->add_int32_data(0);  // 16-bit float bits in int32_data, as ONNX stores them
    }
    // RandomNormal/RandomUniform without dtype make float32.
    if ((node.op_type() == "RandomNormal" || node.op_type() == "RandomUniform") && !has("dtype")) {
      auto* a = node.add_attribute();
      a->set_name("dtype");
      a->set_type(AttributeProto::INT);
      a->set_i(target);
    }
  }

  void rewrite(GraphProto& graph, bool is_main, bool owner_kept) {
    google::protobuf::RepeatedPtrField<NodeProto> nodes;
    scopes_.push_back(Scope{{}, &nodes});
    convert_initializers(graph);
    const int32_t io_type = declared_output_type(is_main, owner_kept);
    for (auto& v : *graph.mutable_input()) {
      if (!is_float(v.name())) continue;
      auto& versions = scopes_.back().versions[v.name()];
      if (!versions.empty()) {  // an input with an initializer as its default: the initializer's type
        v.mutable_type()->mutable_tensor_type()->set_elem_type(versions.count(kFloat) ? kFloat : reduced_.onnx_type);
        continue;
      }
      versions[io_type] = v.name();
      v.mutable_type()->mutable_tensor_type()->set_elem_type(io_type);
    }
    std::unordered_set<std::string> graph_outputs;
    for (const auto& o : graph.output()) graph_outputs.insert(o.name());

    for (int i = 0; i < graph.node_size(); ++i) {
      NodeProto node = std::move(*graph.mutable_node(i));
      const Keep keep = decide(node, owner_kept, /*mark=*/true);
      const bool kept = keep != Keep::kConverted;
      if (keep == Keep::kListed) ++report_.nodes_kept_by_list;
      if (keep == Keep::kBySchema) {
        ++report_.nodes_kept_by_schema;
        schema_kept_ops_.insert(node.op_type());
      }
      for (int k = 0; k < node.input_size(); ++k) {
        if (!is_float(node.input(k))) continue;
        if (!kept && reads_any_float(node, k))
          node.set_input(k, visible_version(node.input(k)));
        else
          node.set_input(k, version_of(node.input(k), kept || !input_accepts_reduced(node, k) ? kFloat
                                                                                              : reduced_.onnx_type));
      }
      for_each_subgraph(node, [&](GraphProto& g) { rewrite(g, /*is_main=*/false, kept); });
      if (!kept) retype_attributes(node);
      const int32_t produced = kept ? kFloat : reduced_.onnx_type;
      std::vector<std::pair<std::string, std::string>> casts_after;  // (from, graph output)
      for (int o = 0; o < node.output_size(); ++o) {
        const std::string name = node.output(o);
        if (!is_float(name)) continue;
        auto& versions = scopes_.back().versions[name];
        if (graph_outputs.count(name) && produced != io_type) {
          // The graph output keeps its declared type: the node writes a twin that is cast to it.
          const std::string twin =
              fresh_name(fmt::format("{}_{}", name, produced == kFloat ? "fp32" : reduced_.suffix));
          node.set_output(o, twin);
          versions[produced] = twin;
          versions[io_type] = name;
          casts_after.emplace_back(twin, name);
        } else {
          versions[produced] = name;
        }
      }
      nodes.Add(std::move(node));
      for (const auto& [from, to] : casts_after) add_cast(from, to, io_type);
    }
    for (auto& v : *graph.mutable_output()) {
      if (!is_float(v.name())) continue;
      v.mutable_type()->mutable_tensor_type()->set_elem_type(io_type);
      const std::string read = version_of(v.name(), io_type);
      if (read == v.name()) continue;
      // An outer value or an input passed through: a subgraph outputs its Cast instead.
      if (is_main) raise<InternalError>("float conversion: graph output '{}' has no {} version", v.name(), io_type);
      v.set_name(read);
    }
    graph.mutable_node()->Swap(&nodes);
    graph.clear_value_info();
    scopes_.pop_back();
  }

  Model& owner_;
  const ReducedPrecisionOptions& options_;
  ReducedPrecisionReport& report_;
  const ReducedType reduced_;
  PrecisionKeepList keep_;
  std::map<std::string, int64_t> opsets_;  // domain ("" for ai.onnx) -> version
  std::unordered_map<std::string, int32_t> types_;
  std::unordered_set<std::string> used_names_, read_float_, read_reduced_;
  std::unordered_set<std::string> kept_constants_;  // outputs of Constant nodes the keep list matched
  std::set<std::string> schema_kept_ops_;
  std::vector<Scope> scopes_;
  int cast_id_ = 0;
};

}  // namespace

ReducedPrecisionReport convert_float_to_reduced_precision(Model& owner, const ReducedPrecisionOptions& options) {
  ReducedPrecisionReport report;
  Converter(owner, options, report).run();
  return report;
}

}  // namespace parity::onnx
