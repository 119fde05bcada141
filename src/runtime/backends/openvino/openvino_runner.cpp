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

// The marks of `layer`'s output tensors and of the layers up to `hops` steps downstream of it
// (`outputs`: fused_layer_outputs()).
std::set<std::string> marks_downstream(const std::string& layer, const std::vector<FusedLayerOutput>& outputs,
                                       int hops) {
  std::set<std::string> layers{layer};
  for (int hop = 0; hop < hops; ++hop) {
    std::set<std::string> tensors;
    for (const auto& output : outputs)
      if (layers.count(output.layer)) tensors.insert(output.tensor);
    std::set<std::string> wider = layers;
    for (const auto& output : outputs)
      for (const auto& input : output.inputs)
        if (tensors.count(input)) wider.insert(output.layer);
    layers = std::move(wider);
  }
  std::set<std::string> marks;
  for (const auto& output : outputs)
    if (layers.count(output.layer)) marks.insert(output.tensor);
  return marks;
}

// True when all a layer's change says is that the marked model executes other layers before it
// or besides (the trace of a change elsewhere: a layer that lost a fused op leaves that op standing
// on its own).
bool only_extra_layers(const ChangedLayer& layer) {
  if (layer.change.rfind("executed in the marked model only", 0) == 0) return true;
  static constexpr std::string_view kExtra = "the marked model executes '";
  std::size_t start = 0;
  while (start < layer.change.size()) {
    if (layer.change.compare(start, kExtra.size(), kExtra) != 0) return false;
    std::size_t end = layer.change.find("; ", start);
    start = end == std::string::npos ? layer.change.size() : end + 2;
  }
  return true;
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

void OpenvinoRunner::compile_fusion_preserving() {
  fused_marks_.clear();
  marked_precisions_.clear();
  onnx::Model model = loader_();
  fused_model_bytes_ = onnx::serialize_model(*model.proto);
  struct Release {  // the serialized model and the kept conversion, however the compiles end
    OpenvinoRunner& runner;
    ~Release() {
      runner.fused_model_bytes_.clear();
      runner.fused_model_bytes_.shrink_to_fit();
      runner.backend_->drop_kept_conversion();
    }
  } release{*this};
  compile(IntermediateOutputs::none(), /*announce=*/false);
  const std::vector<openvino::ExecutedLayer> plain = executed_layers();
  const EngineReport report = describe_openvino_engine(*this, &model);
  fused_outputs_ = fused_layer_outputs(report, model);
  std::set<std::string> graph_outputs;
  for (const auto& output : model->graph().output()) graph_outputs.insert(output.name());
  std::set<std::string> excluded(options_.exclude_outputs.begin(), options_.exclude_outputs.end());
  std::set<std::string> candidates;
  for (const auto& output : fused_outputs_) {
    if (graph_outputs.count(output.tensor) || excluded.count(output.tensor)) continue;
    candidates.insert(output.tensor);
    if (output.output_precision == "bf16" || output.output_precision == "f16")
      marked_precisions_.emplace(output.tensor, output.output_precision);
  }
  // Marks whose Result changed a layer of the plain model, with the layers that changed. Each
  // round drops the marks around every changed layer at once, widening along the dataflow for a
  // layer that a round before left changed (a mark downstream can keep OpenVINO from moving an op
  // into it), so the rounds stay few however many blocks the model repeats.
  std::set<std::string> dropped;
  constexpr int kMaxRounds = 16, kFusionHops = 2, kMaxHops = 3;
  // Marks known to change their layer are left out before the first marked compile: those of
  // layers computing integers (shape arithmetic, int64 in ONNX and i32 in OpenVINO: a Result makes
  // OpenVINO run a copy of the layer and convert its output), and those of a layer OpenVINO moved
  // a Multiply of its own into (an attention scale moved into the K projection), with the two
  // layers after it, whose marks keep the Multiply from moving.
  std::map<std::string, std::string> left_out;  // tensor -> why
  for (const auto& output : fused_outputs_)
    if (candidates.count(output.tensor) && output.output_precision != "f32" && output.output_precision != "bf16" &&
        output.output_precision != "f16")
      left_out.emplace(output.tensor, fmt::format("OpenVINO computes it in {}", output.output_precision));
  for (std::size_t l = 0; l < report.layers.size(); ++l) {
    const EngineLayer& layer = report.layers[l];
    if (layer.kind != EngineLayer::Kind::kCompute) continue;
    auto is_multiply = [&](const std::string& op) { return op.rfind("Multiply_", 0) == 0 && op != layer.name; };
    if (!layer.onnx_nodes.empty() && std::any_of(layer.openvino_ops.begin(), layer.openvino_ops.end(), is_multiply)) {
      for (const auto& tensor : marks_downstream(layer.name, fused_outputs_, kFusionHops))
        if (candidates.count(tensor))
          left_out.emplace(tensor, fmt::format("OpenVINO moved a Multiply of its own into layer '{}'", layer.name));
      continue;
    }
    // Where OpenVINO's Multiply stands alone (it moved it next to a Split, say), the marks of the
    // layers executed after it up to where it came from keep it from moving: those of the next two
    // marked layers.
    if (layer.onnx_nodes.empty() && layer.dataflow_nodes.empty() && layer.name.rfind("Multiply_", 0) == 0) {
      int found = 0;
      for (std::size_t next = l + 1; next < report.layers.size() && found < kFusionHops; ++next) {
        bool marked = false;
        for (const auto& output : fused_outputs_)
          if (output.layer == report.layers[next].name && candidates.count(output.tensor)) {
            left_out.emplace(output.tensor,
                             fmt::format("OpenVINO moves its '{}' past this layer when it is not marked", layer.name));
            marked = true;
          }
        found += marked;
      }
    }
  }
  for (const auto& [tensor, why] : left_out) dropped.insert(tensor);
  std::vector<ChangedLayer> changed;
  std::map<std::string, int> hops_of;  // changed layer -> the dataflow steps its next drop starts from
  std::set<std::string> narrowed;      // changed layers that lost fused ops, once dropped the marks of those ops
  std::unordered_map<std::string, const ::onnx::NodeProto*> node_named;  // by node name and by output name
  for (const auto& node : model->graph().node()) {
    node_named.emplace(node.name(), &node);
    for (const auto& output : node.output()) node_named.emplace(output, &node);
  }
  int compiles = 1;
  for (int round = 0;; ++round) {
    fused_marks_.clear();
    for (const auto& output : fused_outputs_)
      if (candidates.count(output.tensor) && !dropped.count(output.tensor) &&
          std::find(fused_marks_.begin(), fused_marks_.end(), output.tensor) == fused_marks_.end())
        fused_marks_.push_back(output.tensor);
    compile(IntermediateOutputs::list(fused_marks_), /*announce=*/false);
    ++compiles;
    changed = changed_layers(plain, executed_layers());
    if (changed.empty()) break;
    // A layer that itself changed loses the marks of the tensors it writes and reads; left changed,
    // those ever wider around it; a layer of OpenVINO's own ops, writing no ONNX tensor, the marks of
    // the nearest marked layer after it (else before it) in execution order. Every such layer at
    // once, but for one next to marks this round drops (it may have changed through them), and
    // layers that only execute others before them wait for those to be settled.
    const std::size_t before = dropped.size();
    std::vector<ChangedLayer> causes;
    for (const auto& layer : changed)
      if (!only_extra_layers(layer)) causes.push_back(layer);
    if (causes.empty()) causes = changed;
    std::set<std::string> dropped_now;  // by this round: a layer next to them may have changed through them
    for (const auto& layer : causes) {
      const std::set<std::string> around = marks_around({layer}, fused_outputs_, 0);
      if (std::any_of(around.begin(), around.end(), [&](const std::string& tensor) { return dropped_now.count(tensor); }))
        continue;
      const std::size_t before_layer = dropped.size();
      const std::set<std::string> dropped_before = dropped;
      // A layer that lost fused ops first loses only the marks those ops read and write (a marked
      // residual keeps a convolution from fusing the Add that reads it, while the convolution's own
      // input and output stay markable), and none more where this round already drops one of them;
      // left changed, the marks around it, ever wider.
      if (!layer.lost_ops.empty() && narrowed.insert(layer.layer).second) {
        bool dropped_by_round = false;
        for (const auto& op : layer.lost_ops) {
          auto node = node_named.find(op);
          if (node == node_named.end()) continue;
          std::vector<std::string> tensors(node->second->input().begin(), node->second->input().end());
          tensors.insert(tensors.end(), node->second->output().begin(), node->second->output().end());
          for (const auto& tensor : tensors) {
            if (candidates.count(tensor)) dropped.insert(tensor);
            dropped_by_round = dropped_by_round || dropped_now.count(tensor);
          }
        }
        if (dropped_by_round && dropped.size() == before_layer) continue;
      }
      int& hops = hops_of[layer.layer];
      for (; hops <= kMaxHops && dropped.size() == before_layer; ++hops)
        for (const auto& tensor : marks_around({layer}, fused_outputs_, hops))
          if (candidates.count(tensor)) dropped.insert(tensor);
      for (const auto& tensor : dropped)
        if (!dropped_before.count(tensor)) dropped_now.insert(tensor);
      if (dropped.size() != before_layer) continue;
      auto is_changed = [&](const openvino::ExecutedLayer& executed) { return executed.name == layer.layer; };
      auto position = static_cast<std::size_t>(std::find_if(plain.begin(), plain.end(), is_changed) - plain.begin());
      auto drop_layer = [&](const std::string& name) {
        for (const auto& output : fused_outputs_)
          if (output.layer == name && candidates.count(output.tensor)) dropped.insert(output.tensor);
        return dropped.size() != before_layer;
      };
      bool found = false;
      for (std::size_t p = position + 1; !found && p < plain.size(); ++p) found = drop_layer(plain[p].name);
      for (std::size_t p = position; !found && p-- > 0;) found = drop_layer(plain[p].name);
    }
    std::vector<std::string> lines;
    for (const auto& layer : changed) lines.push_back(fmt::format("\n    layer '{}': {}", layer.layer, layer.change));
    if (dropped.size() == before || round + 1 == kMaxRounds) {
      log::warning("{}: --ov-outputs mark fused: marking still changes {} layer(s) of the plain model, so the "
                   "marked run may compute differently there:{}",
                   name(), changed.size(), fmt::join(lines, ""));
      break;
    }
    log::verbose("{}: --ov-outputs mark fused: marking changed {} layer(s); compiling again without the marks "
                 "around them:{}",
                 name(), changed.size(), fmt::join(lines, ""));
  }
  std::set<std::string> unmarkable(unmarkable_.begin(), unmarkable_.end());
  fused_unmarked_ = dropped;
  fused_unmarked_.insert(unmarkable.begin(), unmarkable.end());
  fused_unmarked_.insert(excluded.begin(), excluded.end());
  std::string lines;
  std::size_t marked = 0;
  for (const auto& output : fused_outputs_) {
    std::string status;
    if (excluded.count(output.tensor)) status = " (excluded)";
    else if (left_out.count(output.tensor))
      status = fmt::format(" (not marked: {}, so marking it changes a layer)", left_out.at(output.tensor));
    else if (dropped.count(output.tensor)) status = " (not marked: marking it changed a layer)";
    else if (unmarkable.count(output.tensor)) status = " (not marked: OpenVINO's model has no such tensor)";
    else ++marked;
    lines += fmt::format("\n    '{}' <- {}{}", output.tensor, output.description(), status);
  }
  log::info("{}: {} | --ov-outputs mark fused: {} of the {} tensor(s) the compiled model's layers write out are "
            "compared{} ({} compiles):{}",
            name(), compiled_line(), marked, fused_outputs_.size(),
            dropped.empty() ? ""
                            : fmt::format("; {} left unmarked because marking them changes a layer", dropped.size()),
            compiles, lines);
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
