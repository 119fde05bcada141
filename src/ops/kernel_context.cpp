#include <onnx/defs/schema.h>

#include "parity/ops/kernel.h"
#include "parity/onnx/tensor_proto.h"

namespace parity::ops {

KernelContext::KernelContext(const ::onnx::NodeProto& node, int64_t opset, std::vector<const Value*> inputs,
                             bool fp64, const ExecutionLimits& limits, SubgraphRunner subgraphs)
    : node_(node),
      opset_(opset),
      inputs_(std::move(inputs)),
      output_tensors_(static_cast<std::size_t>(node.output_size())),
      output_values_(static_cast<std::size_t>(node.output_size())),
      fp64_(fp64),
      limits_(limits),
      subgraphs_(std::move(subgraphs)) {}

std::string KernelContext::label() const {
  std::string op = node_.domain().empty() ? node_.op_type() : node_.domain() + "." + node_.op_type();
  if (node_.name().empty()) return fmt::format("node <unnamed> ({})", op);
  return fmt::format("node '{}' ({})", node_.name(), op);
}

const Value& KernelContext::input_value(std::size_t i) const {
  if (!has_input(i)) fail("required input {} is missing", i);
  return *inputs_[i];
}

const Tensor& KernelContext::input(std::size_t i) const {
  const Value& v = input_value(i);
  if (!v.is_tensor())
    fail("input {} ('{}') is a {}, expected a tensor", i, node_.input(static_cast<int>(i)), v.kind_name());
  return v.tensor();
}

Tensor& KernelContext::allocate_output(std::size_t i, DType dtype, Shape shape) {
  if (i >= output_tensors_.size()) fail("has no output {}", i);
  try {
    output_tensors_[i] = Tensor::zeros(dtype, std::move(shape), limits_.max_elements);
  } catch (Error& e) {
    e.add_context(fmt::format("{}: output {} ('{}')", label(), i, node_.output(static_cast<int>(i))));
    throw;
  }
  output_values_[i] = Value();
  return output_tensors_[i];
}

void KernelContext::set_output(std::size_t i, Tensor tensor) {
  if (i >= output_tensors_.size()) fail("has no output {}", i);
  if (tensor.size() > limits_.max_elements)
    fail("output {} has {} elements, over the limit of {}", i, tensor.size(), limits_.max_elements);
  output_tensors_[i] = std::move(tensor);
  output_values_[i] = Value();
}

void KernelContext::set_output(std::size_t i, Value value) {
  if (i >= output_values_.size()) fail("has no output {}", i);
  if (value.is_tensor()) {
    set_output(i, value.tensor());
    return;
  }
  output_tensors_[i] = Tensor();
  output_values_[i] = std::move(value);
}

std::vector<Value> KernelContext::take_outputs() {
  std::vector<Value> out(output_values_.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!output_values_[i].is_none()) out[i] = std::move(output_values_[i]);
    else if (!output_tensors_[i].empty_handle()) out[i] = Value::of(std::move(output_tensors_[i]));
  }
  return out;
}

const ::onnx::AttributeProto* KernelContext::attribute(const std::string& name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

const ::onnx::AttributeProto* KernelContext::schema_default(const std::string& name) const {
  const auto* schema = ::onnx::OpSchemaRegistry::Schema(node_.op_type(), static_cast<int>(opset_), node_.domain());
  if (!schema) return nullptr;
  auto it = schema->attributes().find(name);
  if (it == schema->attributes().end() || !it->second.default_value.has_type()) return nullptr;
  return &it->second.default_value;
}

namespace {
template <typename T, typename Get>
T attr_or(const KernelContext& ctx, const ::onnx::AttributeProto* a, const ::onnx::AttributeProto* d,
          const std::optional<T>& fallback, const std::string& name, Get get) {
  if (a) return get(*a);
  if (fallback) return *fallback;
  if (d) return get(*d);
  ctx.fail("required attribute '{}' is missing", name);
}
}  // namespace

int64_t KernelContext::attr_int(const std::string& name, std::optional<int64_t> fallback) const {
  return attr_or<int64_t>(*this, attribute(name), fallback ? nullptr : schema_default(name), fallback, name,
                          [](const auto& a) { return a.i(); });
}
float KernelContext::attr_float(const std::string& name, std::optional<float> fallback) const {
  return attr_or<float>(*this, attribute(name), fallback ? nullptr : schema_default(name), fallback, name,
                        [](const auto& a) { return a.f(); });
}
std::string KernelContext::attr_string(const std::string& name, std::optional<std::string> fallback) const {
  return attr_or<std::string>(*this, attribute(name), fallback ? nullptr : schema_default(name), fallback, name,
                              [](const auto& a) { return a.s(); });
}
std::vector<int64_t> KernelContext::attr_ints(const std::string& name,
                                              std::optional<std::vector<int64_t>> fallback) const {
  return attr_or<std::vector<int64_t>>(
      *this, attribute(name), fallback ? nullptr : schema_default(name), fallback, name,
      [](const auto& a) { return std::vector<int64_t>(a.ints().begin(), a.ints().end()); });
}
std::vector<float> KernelContext::attr_floats(const std::string& name,
                                              std::optional<std::vector<float>> fallback) const {
  return attr_or<std::vector<float>>(
      *this, attribute(name), fallback ? nullptr : schema_default(name), fallback, name,
      [](const auto& a) { return std::vector<float>(a.floats().begin(), a.floats().end()); });
}
std::vector<std::string> KernelContext::attr_strings(const std::string& name) const {
  const auto* a = attribute(name);
  if (!a) a = schema_default(name);
  if (!a) return {};
  return {a->strings().begin(), a->strings().end()};
}
Tensor KernelContext::attr_tensor(const std::string& name) const {
  const auto* a = attribute(name);
  if (!a || !a->has_t()) fail("required tensor attribute '{}' is missing", name);
  return onnx::tensor_from_proto(a->t(), ".", limits_.max_elements);
}
const ::onnx::GraphProto* KernelContext::attr_graph(const std::string& name) const {
  const auto* a = attribute(name);
  return a && a->has_g() ? &a->g() : nullptr;
}

}  // namespace parity::ops
