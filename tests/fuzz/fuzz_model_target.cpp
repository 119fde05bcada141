// The structured fuzzer's model target: a valid ONNX model of one node of an op Parity has a kernel
// for, its attributes and inputs generated from ONNX's schema of the op (every attribute the schema
// declares, of its declared type, with extreme values; inputs of the types the schema allows, as
// initializers holding extreme values or as graph inputs whose declared dims are extreme), and
// sometimes the node wrapped in nested If branches. The case runs through the loader, ONNX's
// checker, ONNX's shape inference (data propagation on) and the reference interpreter.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <map>

#include <onnx/defs/schema.h>

#include "fuzz_targets.h"
#include "parity/core/error.h"
#include "parity/onnx/model.h"
#include "parity/onnx/tensor_proto.h"
#include "parity/ops/kernel.h"
#include "parity/runtime/ref/interpreter.h"

namespace parity::fuzz {
namespace {

namespace fs = std::filesystem;
using ::onnx::AttributeProto;
using ::onnx::OpSchema;

// The element type a schema's "tensor(float16)" names, when Parity has it.
std::optional<DType> tensor_type(const std::string& type) {
  if (!type.starts_with("tensor(") || !type.ends_with(")")) return std::nullopt;
  std::string name = type.substr(7, type.size() - 8);
  try {
    return dtype_from_name(name);
  } catch (const Error&) {
  }
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
  try {
    return dtype_from_name(name);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// A small tensor (0..3 per dim, rank 0..3) of `dtype` whose elements are extreme values.
::onnx::TensorProto extreme_tensor(FuzzValues& values, DType dtype, const std::string& name) {
  Shape shape;
  const uint64_t rank = values.below(4);
  for (uint64_t i = 0; i < rank; ++i) shape.push_back(values.small_dim());
  if (values.one_in(3)) shape = {static_cast<int64_t>(values.below(5))};  // a 1-D list (axes, pads, shapes)
  Tensor tensor = Tensor::zeros(dtype, shape);
  const int64_t count = tensor.size();
  if (dtype == DType::kString) {
    auto* strings = static_cast<std::string*>(tensor.mutable_raw());
    for (int64_t i = 0; i < count; ++i) strings[i] = values.name();
  } else if (dtype == DType::kFloat32 || dtype == DType::kFloat64) {
    for (int64_t i = 0; i < count; ++i) {
      const double v = values.real();
      if (dtype == DType::kFloat32) static_cast<float*>(tensor.mutable_raw())[i] = static_cast<float>(v);
      else static_cast<double*>(tensor.mutable_raw())[i] = v;
    }
  } else if (dtype == DType::kInt64 || dtype == DType::kInt32) {
    for (int64_t i = 0; i < count; ++i) {
      const int64_t v = values.integer();
      if (dtype == DType::kInt64) static_cast<int64_t*>(tensor.mutable_raw())[i] = v;
      else static_cast<int32_t*>(tensor.mutable_raw())[i] = static_cast<int32_t>(v);
    }
  } else {
    auto* bytes = static_cast<unsigned char*>(tensor.mutable_raw());
    for (std::size_t i = 0; i < tensor.byte_size(); ++i) bytes[i] = static_cast<unsigned char>(values.next());
    if (dtype == DType::kBool)
      for (std::size_t i = 0; i < tensor.byte_size(); ++i) bytes[i] &= 1;
  }
  return onnx::tensor_to_proto(tensor, name);
}

std::string attribute_string(FuzzValues& values) {
  if (values.one_in(4)) return values.name();
  return values.pick<std::string>({"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "constant", "reflect", "edge", "wrap",
                                   "nearest", "linear", "cubic", "DCR", "CRD", "half_pixel", "asymmetric",
                                   "align_corners", "round_prefer_floor", "floor", "ceil", "none", "tanh", "Sigmoid",
                                   "Tanh", "Relu", "forward", "reverse", "bidirectional", "mean", "sum", "max", "add",
                                   "mul", "ij,jk->ik", "...ii->...i", "i,i", "exclusive", "bilinear", "zeros", "border"});
}

void add_node(::onnx::GraphProto& graph, FuzzValues& values, const OpSchema& schema, int nesting);

// A graph attribute: no inputs, one output computed by a nested node (If branches nest this way),
// or an Identity of a constant.
void fill_subgraph(::onnx::GraphProto& graph, FuzzValues& values, int nesting) {
  graph.set_name("body" + std::to_string(nesting));
  const OpSchema* if_schema = ::onnx::OpSchemaRegistry::Schema("If", 21, "");
  if (nesting > 0 && if_schema) {
    add_node(graph, values, *if_schema, nesting - 1);
  } else {
    auto* constant = graph.add_initializer();
    *constant = extreme_tensor(values, values.pick({DType::kFloat32, DType::kInt64, DType::kBool}), "c");
    auto* node = graph.add_node();
    node->set_op_type("Identity");
    node->add_input("c");
    node->add_output("y0");
  }
  graph.add_output()->set_name(graph.node(graph.node_size() - 1).output(0));
}

void add_attribute(::onnx::NodeProto& node, FuzzValues& values, const std::string& name,
                   AttributeProto::AttributeType type, int nesting) {
  auto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(type);
  const uint64_t count = values.below(5);
  switch (type) {
    case AttributeProto::FLOAT: attribute->set_f(static_cast<float>(values.real())); break;
    case AttributeProto::INT: attribute->set_i(values.integer()); break;
    case AttributeProto::STRING: attribute->set_s(attribute_string(values)); break;
    case AttributeProto::TENSOR:
      *attribute->mutable_t() = extreme_tensor(values, values.pick({DType::kFloat32, DType::kInt64, DType::kInt32}), "");
      break;
    case AttributeProto::GRAPH: fill_subgraph(*attribute->mutable_g(), values, nesting); break;
    case AttributeProto::FLOATS:
      for (uint64_t i = 0; i < count; ++i) attribute->add_floats(static_cast<float>(values.real()));
      break;
    case AttributeProto::INTS:
      for (uint64_t i = 0; i < count; ++i) attribute->add_ints(values.integer());
      break;
    case AttributeProto::STRINGS:
      for (uint64_t i = 0; i < count; ++i) attribute->add_strings(attribute_string(values));
      break;
    default: node.mutable_attribute()->RemoveLast();  // sparse tensors, type protos: not generated
  }
}

// One node of `schema` in `graph` (inputs as initializers or graph inputs of the top graph, outputs
// "y<i>"); its first output is listed last among the graph's nodes' outputs.
void add_node(::onnx::GraphProto& graph, FuzzValues& values, const OpSchema& schema, int nesting) {
  auto* node = graph.add_node();
  node->set_op_type(schema.Name());
  node->set_domain(schema.domain());
  node->set_name(values.one_in(8) ? values.name() : "n" + std::to_string(nesting));
  std::map<std::string, DType> bound;  // type constraint -> the type chosen for it
  const std::string prefix = "x" + std::to_string(nesting) + "_";
  int index = 0;
  for (const auto& formal : schema.inputs()) {
    int copies = 1;
    if (formal.GetOption() == OpSchema::Optional && values.one_in(3)) copies = 0;
    if (formal.GetOption() == OpSchema::Variadic) copies = static_cast<int>(values.below(3)) + (formal.GetMinArity() > 0);
    std::vector<DType> allowed;
    for (const std::string* type : formal.GetTypes())
      if (auto dtype = tensor_type(*type)) allowed.push_back(*dtype);
    if (allowed.empty()) copies = 0;
    for (int c = 0; c < copies; ++c) {
      auto it = bound.find(formal.GetTypeStr());
      const DType dtype = it != bound.end() && !values.one_in(20) ? it->second : values.pick(allowed);
      bound.emplace(formal.GetTypeStr(), dtype);
      const std::string name = prefix + std::to_string(index++);
      node->add_input(name);
      if (nesting > 0 || !values.one_in(4)) {
        *graph.add_initializer() = extreme_tensor(values, dtype, name);
        continue;
      }
      auto* input = graph.add_input();
      input->set_name(name);
      auto* tensor = input->mutable_type()->mutable_tensor_type();
      tensor->set_elem_type(static_cast<int32_t>(dtype));
      if (values.one_in(6)) continue;  // no shape
      auto* shape = tensor->mutable_shape();
      const uint64_t rank = values.below(4);
      for (uint64_t d = 0; d < rank; ++d) {
        if (values.one_in(5)) shape->add_dim()->set_dim_param(values.name());
        else shape->add_dim()->set_dim_value(values.dim());
      }
    }
    if (copies == 0 && formal.GetOption() == OpSchema::Optional) node->add_input("");
  }
  while (node->input_size() > 0 && node->input(node->input_size() - 1).empty()) node->mutable_input()->RemoveLast();
  // Only the first graph attribute nests further (a chain, not a tree of 2^depth branches).
  int graph_nesting = nesting;
  for (const auto& [name, attribute] : schema.attributes()) {
    if (!attribute.required && !values.one_in(2)) continue;
    add_attribute(*node, values, name, attribute.type, graph_nesting);
    if (attribute.type == AttributeProto::GRAPH) graph_nesting = 0;
  }
  const int outputs = std::max(1, std::min(schema.max_output(), 1 + static_cast<int>(values.below(3))));
  for (int i = 0; i < outputs; ++i) node->add_output("y" + std::to_string(nesting) + "_" + std::to_string(i));
}

struct KernelOp {
  std::string domain, op_type;
  int since_version;
};

const std::vector<KernelOp>& kernel_ops() {
  static const std::vector<KernelOp> ops = [] {
    std::vector<KernelOp> out;
    for (const auto& kernel : ops::registered_kernels())
      if (::onnx::OpSchemaRegistry::Schema(kernel.op_type, kernel.since_version, kernel.domain))
        out.push_back({kernel.domain, kernel.op_type, kernel.since_version});
    std::sort(out.begin(), out.end(), [](const KernelOp& a, const KernelOp& b) {
      return std::tie(a.domain, a.op_type, a.since_version) < std::tie(b.domain, b.op_type, b.since_version);
    });
    return out;
  }();
  return ops;
}

std::string model_case(FuzzValues& values, const GenerationLimits&) {
  ::onnx::ModelProto model;
  model.set_ir_version(values.one_in(20) ? values.integer() : 9);
  model.set_producer_name("parity-fuzz");
  const bool nest = values.one_in(10);
  const KernelOp& op = nest ? KernelOp{"", "If", 21} : values.pick(kernel_ops());
  auto* opset = model.add_opset_import();
  opset->set_domain(op.domain);
  opset->set_version(op.since_version);
  if (!op.domain.empty()) {
    auto* main = model.add_opset_import();
    main->set_version(21);
  }
  auto* graph = model.mutable_graph();
  graph->set_name("fuzz");
  const OpSchema* schema = ::onnx::OpSchemaRegistry::Schema(op.op_type, op.since_version, op.domain);
  add_node(*graph, values, *schema, nest ? static_cast<int>(values.below(40)) : 1);
  for (const auto& output : graph->node(0).output()) graph->add_output()->set_name(output);
  return model.SerializeAsString();
}

void run_model(const std::string& bytes, const fs::path& scratch, const GenerationLimits& limits) {
  onnx::Model model = onnx::load_model_from_bytes(bytes, scratch);
  try {
    onnx::check_model(model);
  } catch (const Error&) {
  }
  bool infer = true;
  onnx::for_each_graph(*model.proto, [&](const ::onnx::GraphProto& graph, int) {
    for (const auto& node : graph.node())
      if (limits.no_shape_inference_ops.count(node.op_type())) infer = false;
  });
  if (infer) {
    ::onnx::ModelProto copy = *model.proto;
    (void)onnx::infer_shapes(copy);
  }
  runtime::InterpreterOptions options;
  options.limits.max_elements = 1 << 20;
  options.limits.max_loop_iterations = 1000;
  options.limits.max_subgraph_depth = 16;
  runtime::Interpreter interpreter(model, options);
  runtime::NamedValues feed;
  for (const auto& [name, info] : interpreter.input_metadata()) {
    Shape shape;
    if (info.shape)
      for (const Dim& dim : *info.shape) shape.push_back(dim.is_fixed() && *dim.value >= 0 && *dim.value < 4 ? *dim.value : 1);
    feed.emplace_back(name, ops::Value::of(Tensor::zeros(info.dtype, shape)));
  }
  interpreter.run(feed);
}

}  // namespace

std::vector<FuzzTarget> model_targets() { return {{"onnx-model", model_case, run_model}}; }

}  // namespace parity::fuzz
