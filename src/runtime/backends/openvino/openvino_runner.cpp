// OpenvinoRunner: the runner lifecycle over the OpenVINO backend module (openvino_backend.h).
//
// Intermediate tensors are extra model outputs (ov::Model::add_output on their ONNX names), so the
// compiled model is the one that runs them: marking changes what OpenVINO may fuse. Tensors
// OpenVINO's converted model no longer has (unused nodes, folded constants) cannot be marked; they
// are skipped with one info line. A tensor callback (the streamed layerwise comparison) gets the
// marked tensors in the ONNX graph's node order after each inference.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "openvino_backend.h"
#include "openvino_containment.h"
#include "parity/core/error.h"
#include "parity/core/interrupt.h"
#include "parity/core/file_io.h"
#include "parity/core/half.h"
#include "parity/core/logger.h"
#include "parity/core/thread_pool.h"
#include "parity/onnx/model.h"
#include "parity/onnx/slice_steps_check.h"
#include "parity/runtime/openvino/openvino_engine_report.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::runtime {
namespace {

// Subgraph nesting beyond which OpenVINO's compile time explodes: from about 12 levels each level
// of nested If costs it about 1.9x (bench/openvino_nested_if.py, its CPU plugin: 14 levels 0.4 s,
// 16 levels 1.3 s, 18 levels 4.7 s; issue 39: 30 levels over 120 s), so a model nested deeper is
// warned about before the compile starts.
constexpr int kSlowCompileNesting = 16;

// Warns when `model`'s subgraphs (If branches, Loop and Scan bodies) nest deeper than kSlowCompileNesting.
void warn_about_deep_nesting(const onnx::Model& model, const std::string& label) {
  int deepest = 0;
  std::string depth;
  try {
    onnx::for_each_graph(*model.proto, [&](const ::onnx::GraphProto&, int level) { deepest = std::max(deepest, level); });
    depth = std::to_string(deepest);
  } catch (const ResourceLimitError&) {
    deepest = 65;
    depth = "more than 64";
  }
  if (deepest > kSlowCompileNesting)
    log::warning("{}: subgraphs (If branches, Loop and Scan bodies) are nested {} levels deep; OpenVINO's compile "
                 "time grows about 1.9x per level of nesting (16 levels: about a second, 18: about 5 s, 30: hours), so "
                 "this compile may take very long",
                 label, depth);
}

// An OpenVINO tensor's bytes, kept alive while a Parity tensor points into them.
class OpenvinoStorage : public Storage {
 public:
  OpenvinoStorage(std::shared_ptr<const void> owner, const void* data, std::size_t size)
      : owner_(std::move(owner)), data_(const_cast<std::byte*>(static_cast<const std::byte*>(data))), size_(size) {}
  std::byte* data() override { return data_; }
  std::size_t size() const override { return size_; }

 private:
  std::shared_ptr<const void> owner_;
  std::byte* data_;
  std::size_t size_;
};

// Runs `body`, turning the module's BackendFailure into Parity's errors naming the model.
template <typename Body>
auto translated(const std::string& model_label, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const openvino::BackendFailure& failure) {
    std::string message = fmt::format("{}: OpenVINO: {}", model_label, failure.what());
    switch (failure.kind) {
      case openvino::BackendFailure::Kind::kInvalidInput:
        throw InvalidInputError(message);
      case openvino::BackendFailure::Kind::kUnsupported:
        throw UnsupportedError(message);
      case openvino::BackendFailure::Kind::kOther:
        throw Error(message);
      case openvino::BackendFailure::Kind::kCancelled:
        throw InterruptedError(message);
    }
    throw Error(message);
  }
}

std::string shape_text(const Shape& shape) { return shape_to_string(shape); }

// A bfloat16/float16 tensor OpenVINO returned for a marked float32 tensor, as float32 (exactly).
Tensor widened_to_float32(DType dtype, Shape shape, const void* data, std::size_t bytes) {
  Tensor result = Tensor::zeros(DType::kFloat32, std::move(shape));
  auto values = result.mutable_span<float>();
  if (bytes != values.size() * sizeof(uint16_t))
    raise<InternalError>("OpenVINO returned {} bytes for {} {} values", bytes, values.size(), dtype_name(dtype));
  const auto* bits = static_cast<const uint16_t*>(data);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = dtype == DType::kBFloat16 ? bfloat16_bits_to_float(bits[i]) : float16_bits_to_float(bits[i]);
  return result;
}

std::string bounds_text(const std::vector<Dim>& dims, bool maximum) {
  std::vector<std::string> parts;
  for (const Dim& dim : dims) {
    if (dim.is_fixed()) parts.push_back(std::to_string(*dim.value));
    else if (maximum) parts.push_back(dim.max ? std::to_string(*dim.max) : "inf");
    else parts.push_back(std::to_string(dim.min.value_or(0)));
  }
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

// The bounds of the inputs given by --ov-min/opt/max-shapes, checked for consistency.
std::vector<openvino::InputShapeBounds> input_bounds(const OpenvinoOptions& options) {
  std::vector<openvino::InputShapeBounds> result;
  auto fixed_dims = [](const std::string& flag, const std::string& name, const TensorInfo& info) {
    std::vector<int64_t> dims;
    if (!info.shape) raise<InvalidInputError>("{}: no shape given for input '{}'", flag, name);
    for (const Dim& dim : *info.shape) {
      if (!dim.is_fixed() || *dim.value < 0)
        raise<InvalidInputError>("{}: the shape of input '{}' must be fixed non-negative numbers", flag, name);
      dims.push_back(*dim.value);
    }
    return dims;
  };
  for (const auto& [name, info] : options.max_shapes)
    if (!options.min_shapes.contains(name))
      raise<InvalidInputError>("--ov-max-shapes gives input '{}', which --ov-min-shapes does not", name);
  for (const auto& [name, info] : options.opt_shapes)
    if (!options.min_shapes.contains(name))
      raise<InvalidInputError>("--ov-opt-shapes gives input '{}', which --ov-min-shapes does not", name);
  for (const auto& [name, info] : options.min_shapes) {
    const TensorInfo* max_info = options.max_shapes.find(name);
    if (!max_info) raise<InvalidInputError>("--ov-min-shapes gives input '{}', which --ov-max-shapes does not", name);
    std::vector<int64_t> min = fixed_dims("--ov-min-shapes", name, info);
    std::vector<int64_t> max = fixed_dims("--ov-max-shapes", name, *max_info);
    if (min.size() != max.size())
      raise<InvalidInputError>("input '{}': --ov-min-shapes has rank {}, --ov-max-shapes rank {}", name, min.size(),
                               max.size());
    openvino::InputShapeBounds bounds{name, {}};
    for (std::size_t d = 0; d < min.size(); ++d) {
      if (min[d] > max[d])
        raise<InvalidInputError>("input '{}': dimension {} has min {} above max {} (--ov-min-shapes/--ov-max-shapes)",
                                 name, d, min[d], max[d]);
      bounds.dims.push_back({min[d], max[d]});
    }
    if (const TensorInfo* opt_info = options.opt_shapes.find(name)) {
      std::vector<int64_t> opt = fixed_dims("--ov-opt-shapes", name, *opt_info);
      bool within = opt.size() == min.size();
      for (std::size_t d = 0; within && d < opt.size(); ++d) within = opt[d] >= min[d] && opt[d] <= max[d];
      if (!within)
        raise<InvalidInputError>("input '{}': --ov-opt-shapes {} is not within the bounds {} .. {}", name,
                                 shape_text(opt), shape_text(min), shape_text(max));
    }
    result.push_back(std::move(bounds));
  }
  return result;
}

}  // namespace

void check_openvino_precision(const std::string& precision) {
  if (precision != "f32" && precision != "bf16" && precision != "f16")
    raise<InvalidInputError>("--ov-precision must be f32, bf16 or f16, got '{}'", precision);
}

std::string openvino_performance_hint(const std::string& hint) {
  std::string upper;
  for (char c : hint) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper != "LATENCY" && upper != "THROUGHPUT")
    raise<InvalidInputError>("--ov-perf-hint must be latency or throughput, got '{}'", hint);
  return upper;
}

OpenvinoRunner::OpenvinoRunner(ModelLoader model, OpenvinoOptions options)
    : Runner("openvino-runner"), loader_(std::move(model)), options_(std::move(options)) {
  if (options_.precision) check_openvino_precision(*options_.precision);
  if (options_.performance_hint) options_.performance_hint = openvino_performance_hint(*options_.performance_hint);
  if (options_.threads) check_backend_threads("OpenVINO's inference threads (--ov-threads)", *options_.threads);
  if (options_.profile_layers < 0) raise<InvalidInputError>("--ov-profile-layers must be >= 0");
  (void)input_bounds(options_);
  if (options_.fused_outputs && options_.outputs.mode != IntermediateOutputs::Mode::kNone)
    raise<InvalidInputError>("--ov-outputs: 'mark fused' marks the tensors of the compiled model's layers; it "
                             "cannot be combined with 'mark all' or names");
  if (!options_.compiled_file.empty()) {
    std::vector<std::string> fixed;
    if (options_.precision) fixed.push_back("--ov-precision");
    if (!options_.min_shapes.empty()) fixed.push_back("--ov-min/opt/max-shapes");
    if (options_.cache_dir) fixed.push_back("--ov-cache-dir");
    if (options_.outputs.mode != IntermediateOutputs::Mode::kNone || options_.fused_outputs ||
        !options_.exclude_outputs.empty())
      fixed.push_back("--ov-outputs/--ov-exclude-outputs");
    if (!fixed.empty())
      raise<InvalidInputError>("{}: a compiled model file was compiled with its precision and shapes fixed and "
                               "marks no tensors; {} cannot apply to it (give them to `parity convert`)",
                               options_.compiled_file, fmt::join(fixed, ", "));
  }
}

OpenvinoRunner::~OpenvinoRunner() {
  if (is_active()) deactivate();
}

IntermediateOutputs OpenvinoRunner::marked_outputs() const {
  if (options_.fused_outputs) return IntermediateOutputs::list(fused_marks_);
  if (options_.outputs.mode != IntermediateOutputs::Mode::kNone) return options_.outputs;
  if (intermediates_.mode != IntermediateOutputs::Mode::kNone) return intermediates_;
  if (callback_) return IntermediateOutputs::all();
  return IntermediateOutputs::none();
}

void OpenvinoRunner::activate_impl() {
  // A compiled model file is checked before OpenVINO is loaded: a bad file is named whatever else is missing.
  std::optional<OpenvinoCompiledFile> file;
  if (!options_.compiled_file.empty()) file = read_openvino_compiled_file(options_.compiled_file);
  OpenvinoBackendHandle handle = load_openvino_backend();
  backend_ = handle.backend;
  library_ = handle.info;
  if (file) {
    import_compiled_file(std::move(*file));
    return;
  }
  compile_contained_ = false;
  contain_again_ = false;
  {
    onnx::Model model = loader_();
    warn_about_deep_nesting(model, model.path.empty() ? "<model>" : model.path.string());
  }
  if (options_.fused_outputs) compile_fusion_preserving();
  else compile(marked_outputs());
}

void OpenvinoRunner::import_compiled_file(OpenvinoCompiledFile file) {
  model_label_ = options_.compiled_file;
  if (file.openvino_version != library_.version)
    raise<FileError>("{}: compiled by OpenVINO {}, but the OpenVINO loaded is {}; compiled models only load in the "
                     "version that wrote them: convert the ONNX model again",
                     model_label_, file.openvino_version, library_.version);
  openvino::ImportRequest request;
  request.exported = std::move(file.compiled);
  request.device = file.device;
  request.inference_precision = file.inference_precision;
  request.threads = options_.threads;
  request.performance_hint = options_.performance_hint;
  request.streams = options_.streams;
  request.profiling = options_.profile_layers > 0 || profiling_;
  for (const auto& [name, info] : file.outputs) request.output_names.push_back(name);
  graph_output_count_ = request.output_names.size();
  tensor_order_.clear();
  compiled_for_.clear();
  compiled_.reset();
  try {
    compiled_ = backend_->import_model(request);
  } catch (const openvino::BackendFailure& failure) {
    raise<FileError>("{}: OpenVINO cannot import the compiled model: {}", model_label_, failure.what());
  }
  inference_precision_ = translated(model_label_, [&] { return compiled_->inference_precision(); });
  if (inference_precision_ != file.inference_precision)
    raise<FileError>("{}: compiled for inference precision {}, but OpenVINO imported it for {}", model_label_,
                     file.inference_precision, inference_precision_);
  source_model_hash_ = file.source_model_hash;
  compiled_onnx_map_ = file.onnx_map;
  unmarkable_.clear();
  // The data loader's metadata: the header's, which must be the compiled model's (a header edited
  // in a format version 1 or 2 file, which had no header hash, is refused here).
  inputs_ = compiled_inputs();
  if (!std::equal(inputs_.begin(), inputs_.end(), file.inputs.begin(), file.inputs.end())) {
    auto describe = [](const TensorMetadata& metadata) {
      std::vector<std::string> parts;
      for (const auto& [name, info] : metadata) parts.push_back(fmt::format("'{}' {}", name, info.to_string()));
      if (parts.size() > 8) parts.resize(8), parts.push_back(fmt::format("... ({} in all)", metadata.size()));
      return fmt::format("{}", fmt::join(parts, ", "));
    };
    raise<FileError>("{}: the header's inputs ({}) are not the compiled model's ({}): the header was edited or "
                     "damaged; convert the ONNX model again",
                     model_label_, describe(file.inputs), describe(inputs_));
  }
  log::info("{}: OpenVINO {} imported {} for {} | inference precision: {}", name(), library_.version, model_label_,
            file.device, inference_precision_);
}

TensorMetadata OpenvinoRunner::compiled_inputs() const {
  TensorMetadata inputs;
  for (const auto& input : translated(model_label_, [&] { return compiled_->inputs(); })) {
    std::vector<Dim> dims;
    for (std::size_t d = 0; d < input.dims.size(); ++d) {
      if (input.dims[d] >= 0) {
        dims.push_back(Dim::fixed(input.dims[d]));
        continue;
      }
      Dim dim = Dim::unknown();
      const auto& bounds = input.bounds[d];
      if (bounds.min > 0 || bounds.max >= 0) dim.min = bounds.min;
      if (bounds.max >= 0) dim.max = bounds.max;
      dims.push_back(dim);
    }
    inputs.add(input.name, dtype_from_onnx(input.element_type), dims);
  }
  return inputs;
}

OpenvinoCompiledFile OpenvinoRunner::compiled_file() const {
  if (!compiled_) raise<InternalError>("{}: compiled_file() before activation", name());
  if (!compiled_for_.empty())
    raise<InvalidInputError>("{}: a compiled model with marked tensors is not written to a file", name());
  OpenvinoCompiledFile file;
  file.openvino_version = library_.version;
  file.device = "CPU";
  file.inference_precision = inference_precision_;
  if (options_.compiled_file.empty()) {
    // The ONNX file's bytes (mapped, not copied), or the model as serialized when it has no file.
    onnx::Model model = loader_();
    if (model.path.empty()) {
      file.source_model_hash = fnv1a64_hash(onnx::serialize_model(*model.proto));
    } else {
      std::shared_ptr<Storage> bytes = map_file(model.path);
      file.source_model_hash =
          fnv1a64_hash(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
    }
  } else {
    file.source_model_hash = source_model_hash_;
  }
  file.inputs = inputs_;
  for (const auto& output : translated(model_label_, [&] { return compiled_->outputs(); })) {
    std::vector<Dim> dims;
    for (std::size_t d = 0; d < output.dims.size(); ++d) {
      if (output.dims[d] >= 0) {
        dims.push_back(Dim::fixed(output.dims[d]));
        continue;
      }
      Dim dim = Dim::unknown();
      if (output.bounds[d].min > 0 || output.bounds[d].max >= 0) dim.min = output.bounds[d].min;
      if (output.bounds[d].max >= 0) dim.max = output.bounds[d].max;
      dims.push_back(dim);
    }
    file.outputs.add(output.name, dtype_from_onnx(output.element_type), dims);
  }
  file.compiled = translated(model_label_, [&] { return compiled_->export_model(); });
  return file;
}

std::vector<openvino::ExecutedLayer> OpenvinoRunner::executed_layers() const {
  if (!compiled_) raise<InternalError>("{}: executed_layers() before activation", name());
  return translated(model_label_, [&] { return compiled_->executed_layers(); });
}

void OpenvinoRunner::compile(const IntermediateOutputs& marked, bool announce) {
  onnx::Model model = loader_();
  model_label_ = model.path.empty() ? "<model>" : model.path.string();
  onnx::check_slice_steps_for_openvino(*model.proto, model_label_);
  openvino::CompileRequest request;
  request.model_bytes = fused_model_bytes_.empty() ? onnx::serialize_model(*model.proto) : fused_model_bytes_;
  request.keep_conversion = !fused_model_bytes_.empty();
  // The frontend resolves external data relative to this file's folder.
  std::filesystem::path file_name = model.path.empty() ? std::filesystem::path("model.onnx") : model.path.filename();
  request.model_path = (model.base_dir / file_name).string();
  request.inference_precision = options_.precision;
  request.threads = options_.threads;
  request.performance_hint = options_.performance_hint;
  request.streams = options_.streams;
  request.cache_dir = options_.cache_dir;
  request.profiling = options_.profile_layers > 0 || profiling_;
  request.input_bounds = input_bounds(options_);
  for (const auto& output : model->graph().output()) request.graph_outputs.push_back(output.name());
  graph_output_count_ = request.graph_outputs.size();

  tensor_order_.clear();
  for (const auto& node : model->graph().node())
    for (const auto& output : node.output())
      if (!output.empty()) tensor_order_.push_back({output, {node.name(), node.op_type()}});
  std::set<std::string> excluded(options_.exclude_outputs.begin(), options_.exclude_outputs.end());
  if (marked.mode == IntermediateOutputs::Mode::kAll) {
    for (const auto& [name, producer] : tensor_order_)
      if (!excluded.count(name)) request.marked_outputs.push_back(name);
  } else if (marked.mode == IntermediateOutputs::Mode::kList) {
    for (const auto& name : marked.names)
      if (!excluded.count(name)) request.marked_outputs.push_back(name);
  }
  if (!marked_precisions_.empty())
    for (const auto& name : request.marked_outputs) {
      auto it = marked_precisions_.find(name);
      request.marked_output_precisions.push_back(it == marked_precisions_.end() ? "" : it->second);
    }
  compiled_for_ = fmt::format("{}", fmt::join(request.marked_outputs, "\n"));

  compiled_.reset();
  // The model's first compile runs in a child first, kept for the first inference (openvino_containment.h).
  if (!compile_contained_) {
    contained_model_ = compile_in_child(request, *model.proto, model_label_);
    compile_contained_ = true;
  }
  compiled_ = translated(model_label_, [&] { return backend_->compile(request); });
  inference_precision_ = translated(model_label_, [&] { return compiled_->inference_precision(); });
  // OpenVINO's CPU plugin takes a precision the CPU cannot infer in and quietly infers in another
  // (f16 becomes bf16 or f32, bf16 becomes f32): asked for, it must be the one compiled.
  if (options_.precision && inference_precision_ != *options_.precision)
    raise<InvalidInputError>("{}: OpenVINO cannot run it in {} on this CPU: asked for {} (--ov-precision), it "
                             "compiles it for {}; ask for {} or leave the precision to OpenVINO",
                             model_label_, *options_.precision, *options_.precision, inference_precision_,
                             inference_precision_);
  unmarkable_ = compiled_->unmarkable_tensors();
  if (!unmarkable_.empty())
    log::info("{}: {} of {} requested tensor(s) cannot be marked: OpenVINO's model no longer has them (folded "
              "constants, unused nodes)",
              name(), unmarkable_.size(), request.marked_outputs.size());
  inputs_ = compiled_inputs();
  marked_count_.reset();
  if (!request.marked_outputs.empty()) marked_count_ = request.marked_outputs.size() - unmarkable_.size();
  if (announce) log::info("{}: {}", name(), compiled_line());
}

std::string OpenvinoRunner::compiled_line() const {
  return fmt::format("OpenVINO {} compiled {} for CPU | inference precision: {}{}{}", library_.version, model_label_,
                     inference_precision_, options_.precision ? "" : " (OpenVINO's default on this machine)",
                     marked_count_ ? fmt::format(" | {} tensor(s) marked as outputs", *marked_count_) : "");
}

const FusedLayerOutput* OpenvinoRunner::fused_output(const std::string& tensor) const {
  if (fused_unmarked_.count(tensor)) return nullptr;
  auto it = std::find_if(fused_outputs_.begin(), fused_outputs_.end(),
                         [&](const FusedLayerOutput& output) { return output.tensor == tensor; });
  return it == fused_outputs_.end() ? nullptr : &*it;
}

std::unique_ptr<Runner> OpenvinoRunner::with_model(ModelLoader model) const {
  if (!options_.compiled_file.empty()) return nullptr;
  OpenvinoOptions options = options_;
  options.outputs = IntermediateOutputs::none();
  options.fused_outputs = false;
  options.exclude_outputs.clear();
  options.min_shapes = options.opt_shapes = options.max_shapes = TensorMetadata{};
  options.profile_layers = 0;
  return std::make_unique<OpenvinoRunner>(std::move(model), std::move(options));
}

std::vector<std::string> OpenvinoRunner::engine_layer_nodes(const std::string& tensor) const {
  const FusedLayerOutput* output = fused_output(tensor);
  return output ? output->onnx_nodes : std::vector<std::string>{};
}

std::optional<std::string> OpenvinoRunner::engine_layer(const std::string& tensor) const {
  if (const FusedLayerOutput* output = fused_output(tensor)) return "OpenVINO " + output->description();
  return std::nullopt;
}

void OpenvinoRunner::log_slowest_layers() {
  if (layer_times_.empty()) return;
  std::unordered_map<std::string, std::string> precision_of;
  for (const auto& layer : executed_layers()) precision_of.emplace(layer.name, layer.runtime_precision);
  int64_t total = 0;
  for (const auto& layer : layer_times_) total += layer.microseconds;
  std::vector<LayerTime> sorted = layer_times_;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const LayerTime& a, const LayerTime& b) { return a.microseconds > b.microseconds; });
  sorted.resize(std::min(sorted.size(), static_cast<std::size_t>(options_.profile_layers)));
  std::string lines;
  for (const auto& layer : sorted) {
    auto precision = precision_of.find(layer.name);
    lines += fmt::format("\n    {:5.1f}% | {:9.3f} ms | {} [{}] | kernel: {} | precision: {}",
                         total ? 100.0 * static_cast<double>(layer.microseconds) / static_cast<double>(total) : 0.0,
                         static_cast<double>(layer.microseconds) / 1000.0, layer.name, layer.layer_type,
                         layer.kernel, precision == precision_of.end() ? "?" : precision->second);
  }
  log::info("{}: the {} slowest of {} executed layers (OpenVINO's profiling, mean over {} inference(s); layers "
            "total {:.3f} ms per inference):{}",
            name(), sorted.size(), layer_times_.size(), profiled_inferences_,
            static_cast<double>(total) / 1000.0, lines);
}

void OpenvinoRunner::deactivate_impl() {
  if (options_.profile_layers > 0 && compiled_) log_slowest_layers();
  layer_times_.clear();
  profiled_inferences_ = 0;
  profiling_ = false;
  compiled_.reset();
  contained_model_.reset();
  inputs_ = TensorMetadata();
  if (feed_shapes_) options_.min_shapes = options_.max_shapes = TensorMetadata{}, feed_shapes_ = false;
}

TensorMetadata OpenvinoRunner::input_metadata_impl() { return inputs_; }

void OpenvinoRunner::check_bounds(const NamedTensors& feed) const {
  for (const auto& [name, tensor] : feed) {
    const TensorInfo* info = inputs_.find(name);
    if (!info || !info->shape || info->shape->size() != tensor.shape().size()) continue;
    const auto& dims = *info->shape;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      int64_t size = tensor.shape()[d];
      if ((dims[d].min && size < *dims[d].min) || (dims[d].max && size > *dims[d].max))
        raise<InvalidInputError>(
            "{}: input '{}' has shape {}, outside the bounds the model was compiled for: min {}, max {} "
            "(--ov-min-shapes/--ov-max-shapes)",
            model_label_, name, shape_text(tensor.shape()), bounds_text(dims, false), bounds_text(dims, true));
    }
  }
}

std::vector<openvino::InputBuffer> OpenvinoRunner::input_buffers(const NamedTensors& feed) const {
  check_bounds(feed);
  std::vector<openvino::InputBuffer> inputs;
  inputs.reserve(feed.size());
  for (const auto& [name, tensor] : feed) {
    if (tensor.dtype() == DType::kString)
      raise<UnsupportedError>("{}: input '{}' is a string tensor, which the OpenVINO runner does not feed",
                              model_label_, name);
    inputs.push_back({name, static_cast<int32_t>(tensor.dtype()), tensor.shape(), tensor.raw(),
                      tensor.byte_size()});
  }
  return inputs;
}

void OpenvinoRunner::contain_first_inference(const std::vector<openvino::InputBuffer>& inputs) {
  if (!contained_model_) return;
  const std::unique_ptr<ContainedModel> contained = std::move(contained_model_);
  try {
    contained->infer(inputs, [this] { return *loader_().proto; });
  } catch (const InvalidInputError&) {
    contain_again_ = true;
    throw;
  }
}

NamedTensors OpenvinoRunner::infer_impl(const NamedTensors& feed) {
  IntermediateOutputs marked = marked_outputs();
  // The marked tensors changed since activation (the Comparator sets them after activating).
  std::set<std::string> excluded(options_.exclude_outputs.begin(), options_.exclude_outputs.end());
  std::vector<std::string> wanted_marks;
  if (marked.mode == IntermediateOutputs::Mode::kAll) {
    for (const auto& [tensor, producer] : tensor_order_)
      if (!excluded.count(tensor)) wanted_marks.push_back(tensor);
  } else if (marked.mode == IntermediateOutputs::Mode::kList) {
    for (const auto& tensor : marked.names)
      if (!excluded.count(tensor)) wanted_marks.push_back(tensor);
  }
  if (contain_again_) {
    contain_again_ = false;
    compile_contained_ = false;
    compile(marked, /*announce=*/false);
  } else if (fmt::format("{}", fmt::join(wanted_marks, "\n")) != compiled_for_) {
    if (!options_.compiled_file.empty())
      raise<InvalidInputError>("{}: a compiled model file marks no tensors; compare tensors layerwise with the ONNX "
                               "model instead",
                               model_label_);
    compile(marked);
  }

  std::vector<openvino::InputBuffer> inputs = input_buffers(feed);
  contain_first_inference(inputs);
  // Where Ctrl-C can interrupt (the Python module), the request runs asynchronously and an
  // InterruptWatch cancels it (core/interrupt.h); otherwise it runs synchronously, the faster way.
  const bool cancellable = interrupt_watches_enabled();
  std::optional<InterruptWatch> watch;
  if (cancellable) watch.emplace([this] { compiled_->cancel(); });
  std::vector<openvino::OutputBuffer> produced =
      translated(model_label_, [&] { return compiled_->infer(inputs, cancellable); });
  watch.reset();
  if (options_.profile_layers > 0) {
    ++profiled_inferences_;
    for (auto& timing : translated(model_label_, [&] { return compiled_->layer_timings(); })) {
      auto it = std::find_if(layer_times_.begin(), layer_times_.end(),
                             [&](const LayerTime& known) { return known.name == timing.name; });
      if (it == layer_times_.end())
        it = layer_times_.insert(layer_times_.end(), {timing.name, timing.layer_type, timing.kernel, 0});
      // OpenVINO's counter is already the layer's mean over every inference since compilation.
      it->microseconds = timing.real_time_us;
    }
  }

  NamedTensors outputs;
  std::unordered_map<std::string, std::size_t> index_of;
  for (auto& output : produced) {
    DType dtype = dtype_from_onnx(output.element_type);
    Shape shape(output.shape.begin(), output.shape.end());
    if ((dtype == DType::kBFloat16 || dtype == DType::kFloat16) && marked_precisions_.count(output.name)) {
      index_of.emplace(output.name, outputs.size());
      outputs.emplace_back(output.name, widened_to_float32(dtype, std::move(shape), output.data, output.bytes));
      continue;
    }
    if (storage_bytes(dtype, checked_element_count(shape)) != output.bytes)
      raise<InternalError>("{}: OpenVINO's output '{}' holds {} bytes, {} of shape {} needs {}", model_label_,
                           output.name, output.bytes, dtype_name(dtype), shape_text(shape),
                           storage_bytes(dtype, checked_element_count(shape)));
    auto storage = std::make_shared<OpenvinoStorage>(std::move(output.owner), output.data, output.bytes);
    index_of.emplace(output.name, outputs.size());
    outputs.emplace_back(output.name, Tensor::borrow(dtype, std::move(shape), std::move(storage)));
  }
  if (callback_) {
    for (const auto& [tensor, producer] : tensor_order_)
      if (auto it = index_of.find(tensor); it != index_of.end())
        callback_(ProducedTensor{tensor, outputs[it->second].second, producer.first, producer.second, false});
    // Streamed with nothing asked for besides: the tensors went to the callback, the graph outputs are returned.
    if (options_.outputs.mode == IntermediateOutputs::Mode::kNone &&
        intermediates_.mode == IntermediateOutputs::Mode::kNone)
      outputs.resize(std::min(outputs.size(), graph_output_count_));
  }
  return outputs;
}

}  // namespace parity::runtime
