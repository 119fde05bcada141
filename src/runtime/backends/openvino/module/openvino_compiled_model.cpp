#include "openvino_compiled_model.h"

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include <openvino/op/convert.hpp>
#include <openvino/runtime/exception.hpp>
#include <openvino/frontend/manager.hpp>

#include "element_types.h"

namespace parity::runtime::openvino {
namespace {

std::string shape_text(const ov::PartialShape& shape) { return shape.to_string(); }

ov::PartialShape bounded_shape(const InputShapeBounds& bounds) {
  std::vector<ov::Dimension> dims;
  for (const auto& dim : bounds.dims) {
    if (dim.max < 0) dims.emplace_back(dim.min, -1);
    else dims.emplace_back(dim.min, dim.max);
  }
  return ov::PartialShape(dims);
}

ov::element::Type precision_type(const std::string& name) {
  if (name == "f32") return ov::element::f32;
  if (name == "bf16") return ov::element::bf16;
  if (name == "f16") return ov::element::f16;
  throw BackendFailure(BackendFailure::Kind::kInvalidInput, "unknown inference precision '" + name + "'");
}

ov::hint::PerformanceMode performance_mode(const std::string& name) {
  if (name == "LATENCY") return ov::hint::PerformanceMode::LATENCY;
  if (name == "THROUGHPUT") return ov::hint::PerformanceMode::THROUGHPUT;
  throw BackendFailure(BackendFailure::Kind::kInvalidInput, "unknown performance hint '" + name + "'");
}

int32_t onnx_type_or_throw(const ov::element::Type& type, const std::string& tensor) {
  auto onnx = onnx_element_type(type);
  if (!onnx)
    throw BackendFailure(BackendFailure::Kind::kUnsupported,
                         "tensor '" + tensor + "' has OpenVINO element type " + type.get_type_name() +
                             ", which Parity cannot represent");
  return *onnx;
}

std::vector<int64_t> dims_of(const ov::Shape& shape) { return {shape.begin(), shape.end()}; }

TensorDescription describe(const ov::Output<const ov::Node>& port, const std::string& name) {
  TensorDescription description;
  description.name = name;
  description.element_type = onnx_type_or_throw(port.get_element_type(), name);
  const ov::PartialShape& shape = port.get_partial_shape();
  if (shape.rank().is_dynamic())
    throw BackendFailure(BackendFailure::Kind::kUnsupported, "'" + name + "' has a dynamic rank in OpenVINO's model");
  for (const auto& dim : shape) {
    description.dims.push_back(dim.is_static() ? dim.get_length() : -1);
    description.bounds.push_back({dim.get_min_length(), dim.get_max_length()});
  }
  return description;
}

// A runtime op's rt_info entry as text ("" when absent).
std::string rt_info_text(const ov::Node& node, const std::string& key) {
  const auto& info = node.get_rt_info();
  auto it = info.find(key);
  return it == info.end() ? std::string() : it->second.as<std::string>();
}

std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> names;
  std::string current;
  for (char c : list) {
    if (c == ',') {
      if (!current.empty()) names.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) names.push_back(current);
  return names;
}

}  // namespace

std::shared_ptr<ov::Model> read_onnx_model(const CompileRequest& request) {
  ov::frontend::FrontEndManager manager;
  auto frontend = manager.load_by_framework("onnx");
  if (!frontend) throw BackendFailure(BackendFailure::Kind::kOther, "OpenVINO's ONNX frontend could not be loaded");
  std::istringstream stream(request.model_bytes);
  std::istream* stream_pointer = &stream;
  ov::frontend::InputModel::Ptr input_model = frontend->load(stream_pointer, request.model_path);
  if (!input_model)
    throw BackendFailure(BackendFailure::Kind::kInvalidInput, "OpenVINO's ONNX frontend could not read the model");
  std::shared_ptr<ov::Model> model = frontend->convert(input_model);
  if (!request.input_bounds.empty()) {
    std::map<std::string, ov::PartialShape> shapes;
    const std::vector<ov::Output<ov::Node>> inputs = model->inputs();
    for (const auto& bounds : request.input_bounds) {
      bool known = std::any_of(inputs.begin(), inputs.end(),
                               [&](const ov::Output<ov::Node>& input) { return input.get_names().count(bounds.name); });
      if (!known)
        throw BackendFailure(BackendFailure::Kind::kInvalidInput,
                             "shape bounds given for '" + bounds.name + "', which is not an input of the model");
      shapes.emplace(bounds.name, bounded_shape(bounds));
    }
    model->reshape(shapes);
  }
  return model;
}

// The properties a compile (CompileRequest) and an import (ImportRequest) both set; unset ones are
// left to OpenVINO.
template <typename Request>
ov::AnyMap shared_properties(const Request& request) {
  ov::AnyMap properties;
  if (request.inference_precision)
    properties.emplace(ov::hint::inference_precision(precision_type(*request.inference_precision)));
  if (request.threads) properties.emplace(ov::inference_num_threads(*request.threads));
  if (request.performance_hint)
    properties.emplace(ov::hint::performance_mode(performance_mode(*request.performance_hint)));
  if (request.streams) properties.emplace(ov::num_streams(*request.streams));
  if (request.profiling) properties.emplace(ov::enable_profiling(true));
  return properties;
}

ov::AnyMap compile_properties(const CompileRequest& request) {
  ov::AnyMap properties = shared_properties(request);
  if (request.cache_dir) properties.emplace(ov::cache_dir(*request.cache_dir));
  return properties;
}

OpenvinoCompiledModel::OpenvinoCompiledModel(ov::Core& core, const CompileRequest& request,
                                             std::shared_ptr<ov::Model> model, const LogFunction& log) {
  outputs_ = mark_outputs(*model, request);
  if (!unmarkable_.empty() && log)
    log(LogLevel::kVerbose, "OpenVINO has no tensor called: " + [&] {
      std::string names;
      for (const auto& name : unmarkable_) names += (names.empty() ? "" : ", ") + name;
      return names;
    }());
  compiled_ = core.compile_model(model, request.device, compile_properties(request));
  request_ = compiled_.create_infer_request();
}

std::vector<std::pair<std::string, std::size_t>> OpenvinoCompiledModel::mark_outputs(ov::Model& model,
                                                                                     const CompileRequest& request) {
  std::vector<std::pair<std::string, std::size_t>> outputs;
  const auto& results = model.get_results();
  if (results.size() != request.graph_outputs.size())
    throw BackendFailure(BackendFailure::Kind::kOther,
                         "OpenVINO's model has " + std::to_string(results.size()) + " outputs, the ONNX graph " +
                             std::to_string(request.graph_outputs.size()));
  if (!request.marked_output_precisions.empty() &&
      request.marked_output_precisions.size() != request.marked_outputs.size())
    throw BackendFailure(BackendFailure::Kind::kOther,
                         "marked_output_precisions must give one entry per marked output");
  // What each result reads (and in which type it returns it), so that a tensor already an output
  // is not marked twice.
  using Source = std::tuple<const ov::Node*, std::size_t, std::string>;
  std::map<Source, std::size_t> result_of;
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto source = results[i]->input_value(0);
    result_of.emplace(Source(source.get_node(), source.get_index(), ""), i);
    outputs.emplace_back(request.graph_outputs[i], i);
  }
  if (request.marked_outputs.empty()) return outputs;
  std::unordered_map<std::string, ov::Output<ov::Node>> by_name;
  for (const auto& node : model.get_ordered_ops()) {
    if (ov::is_type<ov::op::v0::Result>(node)) continue;
    for (const auto& output : node->outputs())
      for (const auto& name : output.get_names()) by_name.emplace(name, output);
  }
  ov::ResultVector added;
  for (std::size_t m = 0; m < request.marked_outputs.size(); ++m) {
    const std::string& name = request.marked_outputs[m];
    if (std::any_of(outputs.begin(), outputs.end(), [&](const auto& output) { return output.first == name; })) continue;
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      unmarkable_.push_back(name);
      continue;
    }
    // A float32 tensor asked for in a reduced type is returned through a Convert to it: the
    // Convert of what the layer writes in that type is exact and fuses away. (A Convert, not
    // ov::preprocess::PrePostProcessor: building one transforms the whole model, which then
    // compiles to other layers than the plain model even where nothing is marked.)
    std::string precision = request.marked_output_precisions.empty() ? "" : request.marked_output_precisions[m];
    if (it->second.get_element_type() != ov::element::f32) precision.clear();
    Source key(it->second.get_node(), it->second.get_index(), precision);
    auto existing = result_of.find(key);
    if (existing == result_of.end()) {
      ov::Output<ov::Node> value = it->second;
      if (!precision.empty()) value = std::make_shared<ov::op::v0::Convert>(value, precision_type(precision))->output(0);
      added.push_back(std::make_shared<ov::op::v0::Result>(value));
      existing = result_of.emplace(key, results.size() + added.size() - 1).first;
    }
    outputs.emplace_back(name, existing->second);
  }
  model.add_results(added);
  return outputs;
}

OpenvinoCompiledModel::OpenvinoCompiledModel(ov::Core& core, const ImportRequest& request) {
  ov::AnyMap properties = shared_properties(request);
  std::istringstream stream(request.exported);
  compiled_ = core.import_model(stream, request.device, properties);
  if (compiled_.outputs().size() != request.output_names.size())
    throw BackendFailure(BackendFailure::Kind::kInvalidInput,
                         "the imported model has " + std::to_string(compiled_.outputs().size()) +
                             " outputs, its description " + std::to_string(request.output_names.size()));
  for (std::size_t i = 0; i < request.output_names.size(); ++i) outputs_.emplace_back(request.output_names[i], i);
  request_ = compiled_.create_infer_request();
}

std::vector<TensorDescription> OpenvinoCompiledModel::outputs() const {
  std::vector<TensorDescription> outputs;
  for (const auto& [name, index] : outputs_) outputs.push_back(describe(compiled_.outputs().at(index), name));
  return outputs;
}

std::string OpenvinoCompiledModel::export_model() const {
  std::ostringstream stream;
  const_cast<ov::CompiledModel&>(compiled_).export_model(stream);  // not const in OpenVINO's API
  return std::move(stream).str();
}

std::vector<ExecutedLayer> OpenvinoCompiledModel::executed_layers() const {
  std::shared_ptr<const ov::Model> runtime = compiled_.get_runtime_model();
  std::vector<std::pair<int64_t, ExecutedLayer>> layers;
  for (const auto& node : runtime->get_ordered_ops()) {
    ExecutedLayer layer;
    layer.name = node->get_friendly_name();
    layer.layer_type = rt_info_text(*node, "layerType");
    layer.primitive_type = rt_info_text(*node, "primitiveType");
    layer.runtime_precision = rt_info_text(*node, "runtimePrecision");
    layer.output_precisions = rt_info_text(*node, "outputPrecisions");
    layer.original_layers = split_names(rt_info_text(*node, "originalLayersNames"));
    for (const auto& output : node->outputs()) layer.output_shapes.push_back(output.get_partial_shape().to_string());
    std::string order = rt_info_text(*node, "execOrder");
    int64_t position = static_cast<int64_t>(layers.size());
    if (!order.empty()) {
      try {
        position = std::stoll(order);
      } catch (const std::exception&) {
      }
    }
    layers.emplace_back(position, std::move(layer));
  }
  std::stable_sort(layers.begin(), layers.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ExecutedLayer> ordered;
  for (auto& entry : layers) ordered.push_back(std::move(entry.second));
  return ordered;
}

std::vector<LayerTiming> OpenvinoCompiledModel::layer_timings() const {
  std::vector<LayerTiming> timings;
  for (const auto& info : request_.get_profiling_info()) {
    if (info.status != ov::ProfilingInfo::Status::EXECUTED) continue;
    timings.push_back({info.node_name, info.node_type, info.exec_type, info.real_time.count()});
  }
  return timings;
}

std::vector<InputDescription> OpenvinoCompiledModel::inputs() const {
  std::vector<InputDescription> inputs;
  for (const auto& input : compiled_.inputs()) {
    InputDescription description;
    description.name = input.get_any_name();
    description.element_type = onnx_type_or_throw(input.get_element_type(), description.name);
    const ov::PartialShape& shape = input.get_partial_shape();
    if (shape.rank().is_dynamic())
      throw BackendFailure(BackendFailure::Kind::kUnsupported,
                           "input '" + description.name + "' has a dynamic rank in OpenVINO's model");
    for (const auto& dim : shape) {
      description.dims.push_back(dim.is_static() ? dim.get_length() : -1);
      description.bounds.push_back({dim.get_min_length(), dim.get_max_length()});
    }
    inputs.push_back(std::move(description));
  }
  return inputs;
}

std::string OpenvinoCompiledModel::inference_precision() const {
  return compiled_.get_property(ov::hint::inference_precision).get_type_name();
}

std::vector<std::string> OpenvinoCompiledModel::output_names() const {
  std::vector<std::string> names;
  for (const auto& output : outputs_) names.push_back(output.first);
  return names;
}

std::vector<std::pair<std::string, std::string>> OpenvinoCompiledModel::properties() const {
  std::vector<std::pair<std::string, std::string>> properties;
  for (const std::string name : {ov::hint::performance_mode.name(), ov::num_streams.name(),
                                 ov::hint::inference_precision.name(), ov::inference_num_threads.name(),
                                 ov::optimal_number_of_infer_requests.name()}) {
    try {
      properties.emplace_back(name, compiled_.get_property(name).as<std::string>());
    } catch (const ov::Exception&) {
      // A property this device's plugin does not report is left out.
    }
  }
  return properties;
}

void OpenvinoCompiledModel::set_inputs(ov::InferRequest& request, const std::vector<InputBuffer>& inputs) const {
  const auto& ports = compiled_.inputs();
  for (const auto& input : inputs) {
    auto port = std::find_if(ports.begin(), ports.end(),
                             [&](const ov::Output<const ov::Node>& p) { return p.get_names().count(input.name); });
    if (port == ports.end()) continue;  // not an input of the model: ignored, as ONNX Runtime does
    ov::element::Type type = openvino_element_type(input.element_type);
    if (type != port->get_element_type())
      throw BackendFailure(BackendFailure::Kind::kInvalidInput,
                           "input '" + input.name + "' is " + type.get_type_name() + ", the compiled model expects " +
                               port->get_element_type().get_type_name());
    ov::Shape shape(input.shape.begin(), input.shape.end());
    if (!port->get_partial_shape().compatible(ov::PartialShape(shape)))
      throw BackendFailure(BackendFailure::Kind::kInvalidInput,
                           "input '" + input.name + "' has shape " + ov::PartialShape(shape).to_string() +
                               ", the compiled model accepts " + shape_text(port->get_partial_shape()));
    // Zero copy: OpenVINO reads the caller's buffer (it does not write input tensors).
    request.set_tensor(*port, ov::Tensor(type, shape, const_cast<void*>(input.data)));
  }
}

void OpenvinoCompiledModel::cancel() { request_.cancel(); }

std::vector<OutputBuffer> OpenvinoCompiledModel::infer(const std::vector<InputBuffer>& inputs, bool cancellable) {
  set_inputs(request_, inputs);
  // Statically shaped outputs are written straight into tensors of their own, handed out without a
  // copy; dynamically shaped ones come back in the request's tensors and are copied out.
  const auto& output_ports = compiled_.outputs();
  std::vector<std::optional<ov::Tensor>> fresh(output_ports.size());
  for (std::size_t i = 0; i < output_ports.size(); ++i) {
    const auto& port = output_ports[i];
    if (port.get_partial_shape().is_static() && port.get_element_type() != ov::element::string) {
      fresh[i] = ov::Tensor(port.get_element_type(), port.get_shape());
      request_.set_output_tensor(i, *fresh[i]);
    }
  }
  if (cancellable) {
    request_.start_async();
    try {
      request_.wait();
    } catch (const ov::Cancelled&) {
      throw BackendFailure(BackendFailure::Kind::kCancelled, "the inference was cancelled");
    }
  } else {
    request_.infer();
  }
  std::vector<OutputBuffer> outputs;
  std::map<std::size_t, std::shared_ptr<ov::Tensor>> held;  // one buffer per compiled output
  for (const auto& [name, index] : outputs_) {
    auto& tensor = held[index];
    if (!tensor) {
      if (fresh[index]) {
        tensor = std::make_shared<ov::Tensor>(*fresh[index]);
      } else {
        ov::Tensor produced = request_.get_output_tensor(index);
        tensor = std::make_shared<ov::Tensor>(produced.get_element_type(), produced.get_shape());
        produced.copy_to(*tensor);
      }
    }
    OutputBuffer output;
    output.name = name;
    output.element_type = onnx_type_or_throw(tensor->get_element_type(), name);
    output.shape = dims_of(tensor->get_shape());
    output.data = tensor->data();
    output.bytes = tensor->get_byte_size();
    output.owner = tensor;
    outputs.push_back(std::move(output));
  }
  return outputs;
}

}  // namespace parity::runtime::openvino
