// convert --fp-to-fp16: float32 tensors and computation to float16, in the main graph and every
// subgraph (If/Loop/Scan bodies). Inputs an op's schema does not accept in float16 (Resize
// scales...) and ops the user keeps in float32 (with their subgraphs) read float32 through
// inserted Casts; graph inputs and outputs keep float32 with Casts at the boundary unless asked
// otherwise.
#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include "parity/core/error.h"
#include "parity/core/half.h"
#include "parity/core/logger.h"
#include "parity/onnx/graph_order.h"
#include "parity/onnx/passes.h"
#include "parity/onnx/tensor_proto.h"

namespace parity::onnx {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

namespace {

constexpr int32_t kFloat = TensorProto::FLOAT;
constexpr int32_t kHalf = TensorProto::FLOAT16;

TensorProto to_half(const TensorProto& t, const std::filesystem::path& base_dir) {
  Tensor source = tensor_from_proto(t, base_dir);
  Tensor half = Tensor::zeros(DType::kFloat16, source.shape());
  auto in = source.span<float>();
  auto* out = half.mutable_data<uint16_t>();
  // Finite values beyond float16's range are clamped to +-65504 rather than becoming infinities.
  for (std::size_t i = 0; i < in.size(); ++i)
    out[i] = float_to_float16_bits(std::isfinite(in[i]) ? std::clamp(in[i], -65504.0f, 65504.0f) : in[i]);
  return tensor_to_proto(half.view(), t.name());
}

// Whether the op's schema lets input `index` be float16.
bool input_accepts_half(const NodeProto& node, int index, int64_t opset) {
  const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
  const auto* schema = ::onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), domain);
  if (!schema || schema->inputs().empty()) return true;  // unknown op: leave it to the user
  const auto& formals = schema->inputs();
  std::size_t formal = std::min<std::size_t>(static_cast<std::size_t>(index), formals.size() - 1);
  if (static_cast<std::size_t>(index) >= formals.size() &&
      formals.back().GetOption() != ::onnx::OpSchema::Variadic)
    return true;
  const std::string& type = formals[formal].GetTypeStr();
  for (const auto& constraint : schema->typeConstraintParams())
    if (constraint.type_param_str == type)
      return std::find(constraint.allowed_type_strs.begin(), constraint.allowed_type_strs.end(),
                       "tensor(float16)") != constraint.allowed_type_strs.end();
  return type == "tensor(float16)";
}

void rename_graph_reads(GraphProto& graph, const std::unordered_map<std::string, std::string>& names) {
  for (auto& node : *graph.mutable_node()) {
    for (auto& in : *node.mutable_input())
      if (auto it = names.find(in); it != names.end()) in = it->second;
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) rename_graph_reads(*a.mutable_g(), names);
      for (auto& g : *a.mutable_graphs()) rename_graph_reads(g, names);
    }
  }
  for (auto& o : *graph.mutable_output())
    if (auto it = names.find(o.name()); it != names.end()) o.set_name(it->second);
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

}  // namespace

namespace {

bool has_subgraph(const NodeProto& node) {
  return std::any_of(node.attribute().begin(), node.attribute().end(),
                     [](const AttributeProto& a) { return a.has_g() || a.graphs_size() > 0; });
}

template <typename Fn>
void for_each_subgraph(NodeProto& node, Fn&& fn) {
  for (auto& a : *node.mutable_attribute()) {
    if (a.has_g()) fn(*a.mutable_g());
    for (auto& g : *a.mutable_graphs()) fn(g);
  }
}

// Names are unique across a model's graphs (ONNX's SSA rule), so one table serves every graph.
class Converter {
 public:
  Converter(Model& owner, const Fp16Options& options, Fp16Report& report)
      : owner_(owner), options_(options), report_(report), opset_(default_opset(*owner)),
        keep_(options.keep_fp32.begin(), options.keep_fp32.end()) {}

  void run() {
    GraphProto& graph = *owner_->mutable_graph();
    lower_constant_nodes(graph);
    collect_types(graph);
    for (const auto& v : graph.input()) main_inputs_.insert(v.name());
    for (const auto& v : graph.output()) main_outputs_.insert(v.name());
    collect_reads(graph, /*is_main=*/true);
    convert_initializers(graph);
    rewrite(graph, /*is_main=*/true);
    for (const auto& name : keep_)
      if (!matched_keep_.count(name))
        raise<InvalidInputError>("--keep-fp32: no node is named '{}' and no node has that op type", name);
    if (!options_.keep_io_types) {
      for (auto& v : *graph.mutable_input())
        if (is_float(v.name()) && !initializer_names_.count(v.name()))
          v.mutable_type()->mutable_tensor_type()->set_elem_type(kHalf);
      for (auto& v : *graph.mutable_output())
        if (becomes_half(v.name()) || (is_float(v.name()) && !initializer_names_.count(v.name())))
          v.mutable_type()->mutable_tensor_type()->set_elem_type(kHalf);
    }
    toposort(graph);
  }

 private:
  bool is_float(const std::string& name) const {
    auto it = types_.find(name);
    return it != types_.end() && it->second == kFloat;
  }
  bool kept_by_user(const NodeProto& node) {
    bool by_name = !node.name().empty() && keep_.count(node.name());
    bool by_op = keep_.count(node.op_type()) > 0;
    if (by_name) matched_keep_.insert(node.name());
    if (by_op) matched_keep_.insert(node.op_type());
    return by_name || by_op;
  }
  // Whether a float tensor holds float16 after conversion.
  bool becomes_half(const std::string& name) const {
    if (!is_float(name)) return false;
    if (initializer_names_.count(name)) return half_initializers_.count(name) > 0;
    if (main_inputs_.count(name)) return !options_.keep_io_types;
    return true;  // produced by a node (a kept node's output is cast back to float16)
  }

  void collect_types(GraphProto& graph) {
    for (const auto& t : graph.initializer()) {
      types_[t.name()] = t.data_type();
      initializer_names_.insert(t.name());
    }
    auto note = [&](const ::onnx::ValueInfoProto& v) {
      if (v.type().has_tensor_type() && v.type().tensor_type().elem_type() != 0)
        types_[v.name()] = v.type().tensor_type().elem_type();
    };
    for (const auto& v : graph.value_info()) note(v);
    for (const auto& v : graph.input()) note(v);
    for (const auto& v : graph.output()) note(v);
    for (auto& node : *graph.mutable_node()) for_each_subgraph(node, [&](GraphProto& g) { collect_types(g); });
  }

  // Float tensors some float16 slot reads (subgraph outputs count: they become float16 too).
  void collect_reads(GraphProto& graph, bool is_main) {
    if (!is_main)
      for (const auto& o : graph.output())
        if (is_float(o.name())) read_as_half_.insert(o.name());
    for (auto& node : *graph.mutable_node()) {
      bool kept = keep_.count(node.op_type()) || (!node.name().empty() && keep_.count(node.name()));
      for (int k = 0; k < node.input_size(); ++k)
        if (is_float(node.input(k)) && !kept && input_accepts_half(node, k, opset_))
          read_as_half_.insert(node.input(k));
      if (kept) continue;  // a kept node's subgraphs stay float32
      for_each_subgraph(node, [&](GraphProto& g) {
        collect_reads(g, false);
        for (const auto& name : outer_references(g))
          if (is_float(name)) read_as_half_.insert(name);
      });
    }
  }

  void convert_initializers(GraphProto& graph) {
    for (auto& t : *graph.mutable_initializer()) {
      if (t.data_type() != kFloat || !read_as_half_.count(t.name())) continue;
      t = to_half(t, owner_.base_dir);
      half_initializers_.insert(t.name());
      ++report_.initializers_converted;
    }
    for (auto& node : *graph.mutable_node()) {
      bool kept = keep_.count(node.op_type()) || (!node.name().empty() && keep_.count(node.name()));
      if (!kept) for_each_subgraph(node, [&](GraphProto& g) { convert_initializers(g); });
    }
  }

  void rewrite(GraphProto& graph, bool is_main) {
    google::protobuf::RepeatedPtrField<NodeProto> nodes;
    std::unordered_map<std::string, std::string> fp32_alias;  // float16 tensor -> its float32 cast, in this graph
    auto add_cast = [&](const std::string& in, const std::string& out, int32_t to) {
      nodes.Add(make_cast(in, out, to, fmt::format("parity_fp16_cast_{}", cast_id_++)));
      ++report_.casts_inserted;
    };
    auto fp32_of = [&](const std::string& name) {
      auto it = fp32_alias.find(name);
      if (it == fp32_alias.end()) {
        std::string cast = fmt::format("{}_fp32_{}", name, cast_id_);
        add_cast(name, cast, kFloat);
        it = fp32_alias.emplace(name, cast).first;
      }
      return it->second;
    };
    if (is_main && options_.keep_io_types)
      for (const auto& v : graph.input())
        if (is_float(v.name()) && !initializer_names_.count(v.name()) && read_as_half_.count(v.name())) {
          std::string cast = v.name() + "_fp16";
          add_cast(v.name(), cast, kHalf);
          half_alias_[v.name()] = cast;
        }
    for (int i = 0; i < graph.node_size(); ++i) {
      NodeProto node = std::move(*graph.mutable_node(i));
      bool kept = kept_by_user(node);
      for (int k = 0; k < node.input_size(); ++k) {
        const std::string name = node.input(k);
        if (!is_float(name)) continue;
        bool fp32_slot = kept || !input_accepts_half(node, k, opset_);
        if (fp32_slot) {
          if (becomes_half(name)) node.set_input(k, fp32_of(name));
        } else if (auto it = half_alias_.find(name); it != half_alias_.end()) {
          node.set_input(k, it->second);
        }
      }
      std::vector<std::pair<std::string, std::string>> after;  // (from, to) casts after the node
      if (kept) {
        ++report_.nodes_kept_fp32;
        // Its subgraphs stay float32: point their outer reads of converted values at float32 casts.
        std::unordered_map<std::string, std::string> renames;
        for_each_subgraph(node, [&](GraphProto& g) {
          for (const auto& name : outer_references(g))
            if (becomes_half(name)) renames[name] = fp32_of(name);
        });
        if (!renames.empty()) for_each_subgraph(node, [&](GraphProto& g) { rename_graph_reads(g, renames); });
        for (int o = 0; o < node.output_size(); ++o) {
          const std::string name = node.output(o);
          if (!is_float(name)) continue;
          if (is_main && options_.keep_io_types && main_outputs_.count(name)) continue;
          node.set_output(o, name + "_fp32");
          after.emplace_back(name + "_fp32", name);
        }
        nodes.Add(std::move(node));
        for (auto& [from, to] : after) add_cast(from, to, kHalf);
        continue;
      }
      // Attributes that name float32 as the type produced.
      for (auto& a : *node.mutable_attribute()) {
        bool is_cast_to = node.op_type() == "Cast" && a.name() == "to" && a.i() == kFloat;
        bool is_dtype = (node.op_type() == "EyeLike" || node.op_type().rfind("Random", 0) == 0) &&
                        a.name() == "dtype" && a.i() == kFloat;
        if (is_cast_to || is_dtype) a.set_i(kHalf);
        if (node.op_type() == "ConstantOfShape" && a.name() == "value" && a.has_t() && a.t().data_type() == kFloat)
          *a.mutable_t() = to_half(a.t(), owner_.base_dir);
      }
      // ConstantOfShape without a value makes float32 zeros: give it a float16 zero.
      if (node.op_type() == "ConstantOfShape" && node.output_size() == 1 && is_float(node.output(0)) &&
          std::none_of(node.attribute().begin(), node.attribute().end(),
                       [](const AttributeProto& a) { return a.name() == "value"; })) {
        auto* a = node.add_attribute();
        a->set_name("value");
        a->set_type(AttributeProto::TENSOR);
        auto* t = a->mutable_t();
        t->set_data_type(kHalf);
        t->add_dims(1);
        t->add_int32_data(0);  // float16 bits in int32_data, as ONNX stores them
      }
      if (has_subgraph(node))
        for_each_subgraph(node, [&](GraphProto& g) {
          rewrite(g, false);
          for (auto& v : *g.mutable_input())
            if (is_float(v.name())) v.mutable_type()->mutable_tensor_type()->set_elem_type(kHalf);
          for (auto& v : *g.mutable_output())
            if (becomes_half(v.name())) v.mutable_type()->mutable_tensor_type()->set_elem_type(kHalf);
        });
      if (is_main && options_.keep_io_types)
        for (int o = 0; o < node.output_size(); ++o) {
          const std::string name = node.output(o);
          if (!is_float(name) || !main_outputs_.count(name)) continue;
          node.set_output(o, name + "_fp16");
          after.emplace_back(name + "_fp16", name);
          half_alias_[name] = name + "_fp16";  // float16 readers keep reading the float16 value
        }
      nodes.Add(std::move(node));
      for (auto& [from, to] : after) add_cast(from, to, kFloat);
    }
    graph.mutable_node()->Swap(&nodes);
    graph.clear_value_info();
  }

  Model& owner_;
  const Fp16Options& options_;
  Fp16Report& report_;
  int64_t opset_;
  std::unordered_set<std::string> keep_, matched_keep_;
  std::unordered_map<std::string, int32_t> types_;
  std::unordered_set<std::string> initializer_names_, half_initializers_, read_as_half_;
  std::unordered_set<std::string> main_inputs_, main_outputs_;
  std::unordered_map<std::string, std::string> half_alias_;  // float32 graph input/output -> float16 twin
  int cast_id_ = 0;
};

}  // namespace

Fp16Report convert_float_to_float16(Model& owner, const Fp16Options& options) {
  Fp16Report report;
  Converter(owner, options, report).run();
  return report;
}

}  // namespace parity::onnx
