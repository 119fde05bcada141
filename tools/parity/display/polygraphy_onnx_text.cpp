#include "display/polygraphy_onnx_text.h"

#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "display/numpy_tensor_text.h"
#include "parity/core/python_format.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::cli {
namespace {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;

// ---- Python's string methods, as Polygraphy's f-strings use them ----

// str.splitlines(): \n, \r, \r\n, \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029 end a line; a
// trailing line break adds no empty line.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    std::size_t break_length = 0;
    if (c == '\n' || c == '\v' || c == '\f' || c == '\x1c' || c == '\x1d' || c == '\x1e') break_length = 1;
    else if (c == '\r') break_length = (i + 1 < text.size() && text[i + 1] == '\n') ? 2 : 1;
    else if (text.compare(i, 2, "\xc2\x85") == 0) break_length = 2;
    else if (text.compare(i, 3, "\xe2\x80\xa8") == 0 || text.compare(i, 3, "\xe2\x80\xa9") == 0) break_length = 3;
    if (break_length == 0) {
      line += c;
      continue;
    }
    lines.push_back(std::move(line));
    line.clear();
    i += break_length - 1;
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

// Polygraphy's util.indent_block: every line of `block` behind `level` tabs of 4 spaces.
std::string indent_block(const std::string& block, int level = 1) {
  const std::string tab(static_cast<std::size_t>(level) * 4, ' ');
  std::string out = tab;
  auto lines = split_lines(block);
  for (std::size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" + tab : std::string()) + lines[i];
  return out;
}

// str.strip() for ASCII whitespace (and the separators Python counts as whitespace).
std::string strip(const std::string& text) {
  auto is_space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f'); };
  std::size_t begin = 0, end = text.size();
  while (begin < end && is_space(text[begin])) ++begin;
  while (end > begin && is_space(text[end - 1])) --end;
  return text.substr(begin, end - begin);
}

std::string python_list(const std::vector<std::string>& items) { return fmt::format("[{}]", fmt::join(items, ", ")); }

std::string python_tuple(const std::vector<std::string>& items) {
  if (items.size() == 1) return "(" + items[0] + ",)";
  return fmt::format("({})", fmt::join(items, ", "));
}

// ---- Polygraphy's TensorMetadata ----

// One entry: "[dtype=float32, shape=(1, 'N')]", or nothing when neither is known.
struct Metadata {
  std::optional<std::string> dtype;
  std::optional<std::vector<std::string>> shape;  // Python reprs of the dims

  std::string to_string() const {
    std::vector<std::string> items;
    if (dtype) items.push_back("dtype=" + *dtype);
    if (shape) items.push_back("shape=" + python_tuple(*shape));
    return items.empty() ? "" : fmt::format("[{}]", fmt::join(items, ", "));
  }
};

// An ordered dict of name -> Metadata (a later add of a name replaces its value, keeps its place).
class MetadataTable {
 public:
  void add(const std::string& name, Metadata metadata) {
    auto [it, inserted] = entries_.insert_or_assign(name, std::move(metadata));
    if (inserted) order_.push_back(name);
  }
  void update(const MetadataTable& other) {
    for (const auto& name : other.order_) add(name, other.entries_.at(name));
  }
  const Metadata* find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }
  bool contains(const std::string& name) const { return entries_.count(name) > 0; }
  std::size_t size() const { return order_.size(); }
  // str(TensorMetadata): "{a [dtype=..., shape=...],\n b}".
  std::string to_string() const {
    std::vector<std::string> items;
    for (const auto& name : order_) items.push_back(strip(name + " " + entries_.at(name).to_string()));
    return "{" + fmt::format("{}", fmt::join(items, ",\n ")) + "}";
  }

 private:
  std::vector<std::string> order_;
  std::unordered_map<std::string, Metadata> entries_;
};

// Polygraphy's names for ONNX element types; the others it leaves as their number.
std::optional<std::string> polygraphy_dtype_name(int32_t onnx_type) {
  static const std::map<int32_t, std::string> names = {
      {1, "float32"},       {2, "uint8"},           {3, "int8"},          {4, "uint16"},
      {5, "int16"},         {6, "int32"},           {7, "int64"},         {8, "string"},
      {9, "bool"},          {10, "float16"},        {11, "float64"},      {12, "uint32"},
      {13, "uint64"},       {16, "bfloat16"},       {17, "float8e4m3fn"}, {18, "float8e4m3fnuz"},
      {19, "float8e5m2"},   {20, "float8e5m2fnuz"}, {22, "int4"},
  };
  auto it = names.find(onnx_type);
  if (it == names.end()) return std::nullopt;
  return it->second;
}

// AttributeProto.AttributeType's names, as Polygraphy's warnings spell them.
std::optional<std::string> attribute_type_name(int type) {
  static const std::map<int, std::string> names = {
      {0, "UNDEFINED"}, {1, "FLOAT"},   {2, "INT"},           {3, "STRING"},         {4, "TENSOR"},
      {5, "GRAPH"},     {6, "FLOATS"},  {7, "INTS"},          {8, "STRINGS"},        {9, "TENSORS"},
      {10, "GRAPHS"},   {11, "SPARSE_TENSOR"}, {12, "SPARSE_TENSORS"}, {13, "TYPE_PROTO"}, {14, "TYPE_PROTOS"},
  };
  auto it = names.find(type);
  if (it == names.end()) return std::nullopt;
  return it->second;
}

class PolygraphyOnnxText {
 public:
  PolygraphyOnnxText(const onnx::Model& model, const OnnxTextOptions& options) : model_(model), options_(options) {}

  std::string model_text() {
    const auto& proto = *model_.proto;
    std::string default_opset = "Unknown";
    std::vector<std::string> other_domains;
    std::unordered_map<std::string, int64_t> other_versions;
    for (const auto& opset : proto.opset_import()) {
      if (opset.domain().empty()) {
        default_opset = std::to_string(opset.version());
      } else {
        if (!other_versions.count(opset.domain())) other_domains.push_back(opset.domain());
        other_versions[opset.domain()] = opset.version();
      }
    }
    std::string text = fmt::format("Name: {} | ONNX Opset: {}", proto.graph().name(), default_opset);
    if (!other_domains.empty()) {
      std::vector<std::string> items;
      for (const auto& domain : other_domains)
        items.push_back(fmt::format("{}: {}", python_str_repr(domain), other_versions[domain]));
      text += fmt::format(" | Other Opsets: {{{}}}", fmt::join(items, ", "));
    }
    text += "\n\n" + graph_text(proto.graph(), MetadataTable{}, 0);
    return strip(text);
  }

 private:
  std::string dtype_text(int32_t onnx_type) {
    if (auto name = polygraphy_dtype_name(onnx_type)) return *name;
    if (warned_types_.insert(onnx_type).second)
      log::warning("Could not convert: {} to a corresponding Polygraphy data type. Leaving this type in its source "
                   "format.",
                   onnx_type);
    return std::to_string(onnx_type);
  }

  Metadata value_metadata(const ::onnx::ValueInfoProto& value) {
    const auto& tensor_type = value.type().tensor_type();
    std::vector<std::string> dims;
    for (const auto& dim : tensor_type.shape().dim()) {
      if (dim.value_case() == ::onnx::TensorShapeProto::Dimension::kDimParam)
        dims.push_back(python_str_repr(dim.dim_param()));
      else if (dim.value_case() == ::onnx::TensorShapeProto::Dimension::kDimValue)
        dims.push_back(std::to_string(dim.dim_value()));
      else
        dims.push_back("-1");
    }
    return Metadata{dtype_text(tensor_type.elem_type()), std::move(dims)};
  }

  Metadata tensor_metadata(const ::onnx::TensorProto& tensor) {
    std::vector<std::string> dims;
    for (int64_t dim : tensor.dims()) dims.push_back(std::to_string(dim));
    return Metadata{dtype_text(tensor.data_type()), std::move(dims)};
  }

  // "[dtype=float32, shape=[2, 2]]": Polygraphy prints a TensorProto's dims as a list here.
  std::string tensor_header(const ::onnx::TensorProto& tensor) {
    std::vector<std::string> dims;
    for (int64_t dim : tensor.dims()) dims.push_back(std::to_string(dim));
    return fmt::format("[dtype={}, shape={}]", dtype_text(tensor.data_type()), python_list(dims));
  }

  // str(numpy_helper.to_array(tensor)), or Polygraphy's placeholder (and error, logged once per
  // message) when the values cannot be read.
  std::string values_text(const ::onnx::TensorProto& tensor) {
    try {
      return numpy_tensor_text(tensor, model_);
    } catch (const Error& e) {
      std::string message = fmt::format("Failed to load weights.\nNote: Error was: {}", e.message());
      if (logged_errors_.insert(message).second) log::error("{}", message);
      return "<error: failed to load weights>";
    }
  }

  std::string graph_text(const GraphProto& graph, const MetadataTable& outer_tensors, int indent_level) {
    std::unordered_set<std::string> initializer_names;
    for (const auto& tensor : graph.initializer()) initializer_names.insert(tensor.name());
    MetadataTable inputs, outputs, initializers, value_infos;
    for (const auto& value : graph.input())
      if (!initializer_names.count(value.name())) inputs.add(value.name(), value_metadata(value));
    for (const auto& value : graph.output()) outputs.add(value.name(), value_metadata(value));
    for (const auto& tensor : graph.initializer()) initializers.add(tensor.name(), tensor_metadata(tensor));
    for (const auto& value : graph.value_info()) value_infos.add(value.name(), value_metadata(value));

    // Subgraphs see the outer graph's tensors; their own stay local to them.
    MetadataTable tensors = outer_tensors;
    tensors.update(value_infos);
    tensors.update(initializers);
    tensors.update(inputs);
    tensors.update(outputs);

    const char* kind = indent_level == 0 ? "Graph" : "Subgraph";
    std::string text;
    if (options_.show_attrs && !graph.doc_string().empty())
      text += fmt::format("---- Docstring ----\n{}\n\n", graph.doc_string());
    text += fmt::format("---- {} {} Input(s) ----\n{}\n\n", inputs.size(), kind, inputs.to_string());
    text += fmt::format("---- {} {} Output(s) ----\n{}\n\n", outputs.size(), kind, outputs.to_string());
    text += fmt::format("---- {} Initializer(s) ----\n", initializers.size());
    if (options_.show_weights) {
      for (const auto& tensor : graph.initializer())
        text += fmt::format("Initializer | {} {} | Values:\n{}\n\n", tensor.name(), tensor_header(tensor),
                            indent_block(values_text(tensor)));
      if (graph.initializer().empty()) text += "{}\n\n";
    } else if (options_.show_layers) {
      text += initializers.to_string() + "\n\n";
    } else {
      text += "\n";
    }

    text += fmt::format("---- {} Node(s) ----\n", graph.node_size());
    if (options_.show_layers) {
      for (int index = 0; index < graph.node_size(); ++index)
        text += node_text(index, graph.node(index), tensors, initializers, indent_level);
    }
    return indent_block(text, indent_level);
  }

  // "{a [dtype=..., shape=...],\n Initializer | w [...]}" for a node's inputs or outputs.
  static std::string tensor_list_text(const google::protobuf::RepeatedPtrField<std::string>& names,
                                      const MetadataTable& tensors, const MetadataTable& initializers) {
    std::vector<std::string> items;
    for (const auto& name : names) {
      const Metadata* metadata = tensors.find(name);
      std::string shown = initializers.contains(name) ? "Initializer | " + name : name;
      items.push_back(strip(shown + " " + (metadata ? metadata->to_string() : std::string())));
    }
    return "{" + fmt::format("{}", fmt::join(items, ",\n ")) + "}";
  }

  std::string node_text(int index, const ::onnx::NodeProto& node, const MetadataTable& tensors,
                        const MetadataTable& initializers, int indent_level) {
    std::string text = fmt::format("Node {:<4} | {} [Op: {}]\n", index, node.name(), node.op_type());
    text += indent_block(tensor_list_text(node.input(), tensors, initializers));
    const bool both = node.input_size() > 0 && node.output_size() > 0;
    const int output_level = both ? 1 : 0;
    if (both) text += "\n";
    std::string outputs = strip(indent_block(tensor_list_text(node.output(), tensors, initializers), output_level));
    text += indent_block(" -> " + outputs, output_level) + "\n";

    if (options_.show_attrs) {
      auto attributes = attribute_texts(node, tensors, indent_level);
      if (!attributes.empty()) text += indent_block("---- Attributes ----") + "\n";
      const std::string owner = node.name().empty() ? "" : node.name() + ".";
      for (const auto& [name, value] : attributes) text += indent_block(owner + name + " = " + value) + "\n";
    }
    return text + "\n";
  }

  // The node's attributes in order, one per name (a repeated name keeps its first place and its
  // last value), as Python's str() of Polygraphy's value for each.
  std::vector<std::pair<std::string, std::string>> attribute_texts(const ::onnx::NodeProto& node,
                                                                   const MetadataTable& tensors, int indent_level) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& attribute : node.attribute()) {
      auto type_name = attribute_type_name(attribute.type());
      if (!type_name) {
        log::warning("Attribute type: {} was not recognized. Was the graph generated with a newer IR version than "
                     "the installed `onnx` package? Skipping attribute.",
                     static_cast<int>(attribute.type()));
        continue;
      }
      std::optional<std::string> value = attribute_value(attribute, tensors, indent_level);
      if (!value) {
        log::warning("Attribute of type {} is currently unsupported. Skipping attribute.", *type_name);
        continue;
      }
      auto existing =
          std::find_if(out.begin(), out.end(), [&](const auto& entry) { return entry.first == attribute.name(); });
      if (existing != out.end()) existing->second = std::move(*value);
      else out.emplace_back(attribute.name(), std::move(*value));
    }
    return out;
  }

  std::optional<std::string> attribute_value(const AttributeProto& attribute, const MetadataTable& tensors,
                                             int indent_level) {
    switch (attribute.type()) {
      case AttributeProto::FLOAT: return python_float_repr(static_cast<double>(attribute.f()));
      case AttributeProto::INT: return std::to_string(attribute.i());
      case AttributeProto::STRING: return attribute.s();
      case AttributeProto::TENSOR: {
        std::string text = "Tensor: " + tensor_header(attribute.t());
        if (options_.show_weights) text += " | Values:\n" + indent_block(values_text(attribute.t()));
        return text;
      }
      case AttributeProto::GRAPH: return "\n" + graph_text(attribute.g(), tensors, indent_level + 2);
      case AttributeProto::FLOATS: {
        std::vector<std::string> items;
        for (float value : attribute.floats()) items.push_back(python_float_repr(static_cast<double>(value)));
        return python_list(items);
      }
      case AttributeProto::INTS: {
        std::vector<std::string> items;
        for (int64_t value : attribute.ints()) items.push_back(std::to_string(value));
        return python_list(items);
      }
      case AttributeProto::STRINGS: {
        std::vector<std::string> items;
        for (const auto& value : attribute.strings()) items.push_back(python_str_repr(value));
        return python_list(items);
      }
      default: return std::nullopt;
    }
  }

  const onnx::Model& model_;
  OnnxTextOptions options_;
  std::set<int32_t> warned_types_;
  std::set<std::string> logged_errors_;
};

}  // namespace

std::string polygraphy_onnx_text(const onnx::Model& model, const OnnxTextOptions& options) {
  return PolygraphyOnnxText(model, options).model_text();
}

}  // namespace parity::cli
