// OnnxrtRunner: the runner lifecycle over an OnnxrtSession, plus intermediate tensors.
//
// Intermediates come three ways, as with the reference runner:
//  - a list of names: one derived session whose graph outputs are the model's plus those names;
//  - "mark all", or a tensor callback (streaming): layerwise pieces. The graph, in execution
//    order, is cut into consecutive ranges of nodes whose tensors fit the memory budget (sizes from
//    ONNX shape inference on the actual input shapes). Each range is a model of its own whose graph
//    outputs are every tensor it produces and whose inputs are the tensors it reads from earlier
//    ranges; the ranges run one after another, each tensor is handed out once, and boundary tensors
//    are dropped after their last reader. Every tensor is a graph output in exactly one piece
//    whatever the budget, so ONNX Runtime's fusions see the same boundaries and one piece or many
//    give the same tensors, bit for bit. Pieces are cached per range; their sessions run without
//    ONNX Runtime's memory arena so the memory a piece used is returned when it ends.
#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ort_graph.h"
#include "ort_session.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/model.h"
#include "parity/onnx/tensor_proto.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"

namespace parity::runtime {
namespace {

using onnxrt::ValuePtr;
using Range = std::pair<std::size_t, std::size_t>;  // positions [begin, end) in execution order

std::size_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::size_t value = 0;
  std::string unit;
  while (meminfo >> key >> value >> unit)
    if (key == "MemAvailable:") return value * 1024;
  return std::size_t{2} << 30;
}

std::string shape_signature(const NamedTensors& feed) {
  std::string signature;
  for (const auto& [name, tensor] : feed)
    signature += fmt::format("{}:{}:{};", name, static_cast<int>(tensor.dtype()),
                             shape_to_string(tensor.shape()));
  return signature;
}

// A model without the bytes of its large initializers: enough for shape inference (which reads
// initializer types and the values of small integer tensors such as shapes), cheap to copy.
::onnx::ModelProto shape_skeleton(const ::onnx::ModelProto& model) {
  ::onnx::ModelProto skeleton;
  skeleton.set_ir_version(model.ir_version());
  *skeleton.mutable_opset_import() = model.opset_import();
  *skeleton.mutable_functions() = model.functions();
  const auto& graph = model.graph();
  auto& g = *skeleton.mutable_graph();
  g.set_name(graph.name());
  *g.mutable_node() = graph.node();
  *g.mutable_input() = graph.input();
  *g.mutable_output() = graph.output();
  *g.mutable_value_info() = graph.value_info();
  *g.mutable_sparse_initializer() = graph.sparse_initializer();
  for (const auto& t : graph.initializer()) {
    auto* copy = g.add_initializer();
    bool small = onnx::declared_element_count(t) <= 4096;
    if (small && !onnx::uses_external_data(t)) {
      *copy = t;
    } else {
      copy->set_name(t.name());
      copy->set_data_type(t.data_type());
      *copy->mutable_dims() = t.dims();
    }
  }
  return skeleton;
}

}  // namespace

struct OnnxrtRunner::Layerwise {
  // What the session's model says, kept (names and types only) across infer() calls.
  std::optional<onnxrt::GraphAnalysis> analysis;
  std::unordered_map<std::string, ::onnx::TypeProto> types;
  // The model itself (with shape inference), loaded again when sessions must be built and dropped
  // afterwards: weights are not held twice between runs.
  std::optional<onnx::Model> model;

  // A list of names: one session with extra outputs.
  std::string marked_key;
  std::unique_ptr<onnxrt::Session> marked;

  // Layerwise: a plan (ranges and, per tensor, the last range reading it) per input signature,
  // sessions per range.
  struct Plan {
    std::vector<Range> ranges;
    std::unordered_map<std::string, std::size_t> last_reader;
  };
  std::map<std::string, Plan> plans;
  std::map<Range, std::unique_ptr<onnxrt::Session>> pieces;

  void load_model(OnnxrtSession& session) {
    if (model) return;
    auto& impl = session.impl();
    onnx::Model loaded = impl.model_loader();
    // The loader's model may be shared with other runners: shape inference works on a copy.
    loaded.proto = std::make_shared<::onnx::ModelProto>(*loaded.proto);
    auto inference = onnx::infer_shapes(*loaded.proto);
    if (!inference.ok)
      log::verbose(
          "ONNX shape inference stopped early ({}); unknown types are left to ONNX Runtime",
          inference.error);
    if (!analysis) analysis = onnxrt::analyse_graph(loaded->graph(), loaded->ir_version());
    types.clear();
    for (const auto& [name, type] : onnxrt::declared_types(loaded->graph()))
      types.emplace(name, *type);
    model = std::move(loaded);
  }

  std::unordered_map<std::string, const ::onnx::TypeProto*> type_pointers() const {
    std::unordered_map<std::string, const ::onnx::TypeProto*> pointers;
    for (const auto& [name, type] : types) pointers.emplace(name, &type);
    return pointers;
  }

  // Every tensor a graph output, a requested name, or an input must be known to the graph.
  void check_requested(const std::vector<std::string>& names) const {
    for (const auto& name : names)
      if (!analysis->produced_index.count(name) && !analysis->input_index.count(name) &&
          !analysis->initializer_index.count(name))
        raise<InvalidInputError>("requested tensor '{}' is not produced by any node of the graph",
                                 name);
  }

  // Bytes of each produced tensor for these inputs, from shape inference on the concrete shapes;
  // tensors it cannot size count as large as the largest it could.
  std::vector<std::size_t> estimate_sizes(const NamedTensors& feed) const {
    ::onnx::ModelProto skeleton = shape_skeleton(*model->proto);
    for (auto& input : *skeleton.mutable_graph()->mutable_input())
      for (const auto& [name, tensor] : feed)
        if (name == input.name()) {
          auto* tensor_type = input.mutable_type()->mutable_tensor_type();
          tensor_type->set_elem_type(static_cast<int32_t>(tensor.dtype()));
          auto* shape = tensor_type->mutable_shape();
          shape->Clear();
          for (int64_t d : tensor.shape()) shape->add_dim()->set_dim_value(d);
        }
    skeleton.mutable_graph()->clear_value_info();
    onnx::infer_shapes(skeleton);
    std::unordered_map<std::string, const ::onnx::TypeProto*> inferred =
        onnxrt::declared_types(skeleton.graph());
    std::vector<std::optional<std::size_t>> sizes(analysis->produced.size());
    std::size_t largest = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      auto it = inferred.find(analysis->produced[i].name);
      if (it == inferred.end() || !it->second->has_tensor_type()) continue;
      const auto& tensor_type = it->second->tensor_type();
      if (tensor_type.elem_type() == 0 || !tensor_type.has_shape()) continue;
      std::vector<int64_t> dims;
      for (const auto& d : tensor_type.shape().dim())
        if (d.has_dim_value() && d.dim_value() >= 0) dims.push_back(d.dim_value());
      if (static_cast<int>(dims.size()) != tensor_type.shape().dim_size()) continue;
      try {
        DType dtype = dtype_from_onnx(tensor_type.elem_type());
        sizes[i] = storage_bytes(dtype, checked_element_count(dims));
        largest = std::max(largest, *sizes[i]);
      } catch (const Error&) {
      }
    }
    if (largest == 0)
      for (const auto& [name, tensor] : feed) largest = std::max(largest, tensor.byte_size());
    std::vector<std::size_t> result;
    std::size_t unknown = 0;
    for (const auto& size : sizes) {
      result.push_back(size.value_or(largest));
      unknown += !size;
    }
    if (unknown)
      log::verbose("Layerwise plan: {} of {} tensors could not be sized; counted as {} bytes each",
                   unknown, sizes.size(), largest);
    return result;
  }

  const Plan& plan_for(OnnxrtSession& session, const NamedTensors& feed) {
    std::string signature = shape_signature(feed);
    if (auto it = plans.find(signature); it != plans.end()) return it->second;
    load_model(session);
    std::size_t budget = session.options().intermediate_memory_budget;
    if (budget == 0) budget = available_memory_bytes() / 2;
    std::vector<std::size_t> sizes = estimate_sizes(feed);
    Plan plan;
    const std::size_t n = analysis->order.size();
    std::size_t begin = 0, used = 0;
    for (std::size_t p = 0; p < n; ++p) {
      std::size_t bytes = 0;
      for (std::size_t index : analysis->produced_by_position[p]) bytes += sizes[index];
      if (p > begin && used + bytes > budget) {
        plan.ranges.emplace_back(begin, p);
        begin = p;
        used = 0;
      }
      used += bytes;
    }
    if (n > begin) plan.ranges.emplace_back(begin, n);
    for (std::size_t k = 0; k < plan.ranges.size(); ++k)
      for (const auto& name :
           onnxrt::piece_inputs(*analysis, plan.ranges[k].first, plan.ranges[k].second))
        plan.last_reader[name] = k;
    log::verbose("Layerwise plan for {}: {} nodes in {} piece(s) within a budget of {:.1f} MiB",
                 signature, n, plan.ranges.size(), static_cast<double>(budget) / (1 << 20));
    return plans.emplace(signature, std::move(plan)).first->second;
  }

  // A piece's session, built on first use; input types come from the model, else from the value.
  const onnxrt::Session& piece(OnnxrtSession& session, Range range,
                               const std::unordered_map<std::string, ValuePtr>& live) {
    auto& slot = pieces[range];
    if (slot) return *slot;
    load_model(session);
    std::vector<std::string> outputs;
    for (std::size_t p = range.first; p < range.second; ++p)
      for (std::size_t index : analysis->produced_by_position[p])
        outputs.push_back(analysis->produced[index].name);
    std::unordered_map<std::string, ::onnx::TypeProto> from_values;  // node-based: stable addresses
    auto input_type = [&](const std::string& name) -> const ::onnx::TypeProto* {
      if (auto it = types.find(name);
          it != types.end() && it->second.value_case() != ::onnx::TypeProto::VALUE_NOT_SET)
        return &it->second;
      auto value = live.find(name);
      if (value == live.end()) return nullptr;
      auto tensor = onnxrt::tensor_from_value(value->second);
      if (!tensor) return nullptr;
      auto& type = from_values[name];
      auto* tensor_type = type.mutable_tensor_type();
      tensor_type->set_elem_type(static_cast<int32_t>(tensor->dtype()));
      auto* shape = tensor_type->mutable_shape();
      for (std::size_t d = 0; d < tensor->shape().size(); ++d) shape->add_dim();
      return &type;
    };
    ::onnx::ModelProto sub = onnxrt::build_submodel(
        *model->proto, *analysis, range.first, range.second, outputs, type_pointers(), input_type);
    log::verbose("Creating an ONNX Runtime session for nodes {}..{} ({} tensors)", range.first,
                 range.second - 1, outputs.size());
    auto& impl = session.impl();
    slot = std::make_unique<onnxrt::Session>(impl.library, sub, impl.base_dir, impl.options,
                                             impl.providers, onnxrt::SessionRole{false});
    return *slot;
  }
};

OnnxrtRunner::OnnxrtRunner(SessionLoader loader)
    : Runner("onnxrt-runner"), loader_(std::move(loader)) {}

OnnxrtRunner::OnnxrtRunner(ModelLoader model, OnnxrtOptions options)
    : OnnxrtRunner(SessionFromModel(model, options)) {
  model_ = std::move(model);
  options_ = std::move(options);
}

std::unique_ptr<Runner> OnnxrtRunner::with_model(ModelLoader model) const {
  if (!model_) return nullptr;
  OnnxrtOptions options = options_;
  options.profile_prefix.clear();
  return std::make_unique<OnnxrtRunner>(std::move(model), std::move(options));
}

OnnxrtRunner::~OnnxrtRunner() {
  if (is_active()) deactivate();
}

void OnnxrtRunner::activate_impl() {
  session_ = loader_();
  layerwise_ = std::make_unique<Layerwise>();
  last_run_count_ = 0;
}

void OnnxrtRunner::deactivate_impl() {
  layerwise_.reset();
  if (session_) {
    try {
      std::string profile = session_->impl().session ? session_->impl().session->end_profiling() : std::string();
      if (!profile.empty()) {
        profile_path_ = profile;
        log::info("ONNX Runtime profile written to {}", profile);
      }
    } catch (const Error& error) {
      log::warning("{}: {}", name(), error.what());
    }
  }
  session_.reset();
}

TensorMetadata OnnxrtRunner::input_metadata_impl() {
  return session_->input_metadata();
}

NamedTensors OnnxrtRunner::infer_impl(const NamedTensors& feed) {
  if (!callback_ &&
      (intermediates_.mode == IntermediateOutputs::Mode::kNone ||
       (intermediates_.mode == IntermediateOutputs::Mode::kList && intermediates_.names.empty()))) {
    last_run_count_ = 1;
    return session_->run(feed);  // adds the model to errors itself
  }
  return with_context(session_->model_label(), [&] {
    if (callback_ || intermediates_.mode == IntermediateOutputs::Mode::kAll)
      return infer_layerwise(feed);
    return infer_marked(feed);
  });
}

NamedTensors OnnxrtRunner::infer_marked(const NamedTensors& feed) {
  Layerwise& lw = *layerwise_;
  std::string key = fmt::format("{}", fmt::join(intermediates_.names, "\n"));
  if (!lw.marked || lw.marked_key != key) {
    lw.marked.reset();
    lw.load_model(*session_);
    lw.check_requested(intermediates_.names);
    std::vector<std::string> outputs = lw.analysis->outputs;
    outputs.insert(outputs.end(), intermediates_.names.begin(), intermediates_.names.end());
    auto types = lw.type_pointers();
    ::onnx::ModelProto sub = onnxrt::build_submodel(
        *lw.model->proto, *lw.analysis, 0, lw.analysis->order.size(), outputs, types,
        [&](const std::string& name) -> const ::onnx::TypeProto* {
          auto it = types.find(name);
          return it == types.end() ? nullptr : it->second;
        });
    auto& impl = session_->impl();
    lw.marked = std::make_unique<onnxrt::Session>(impl.library, sub, impl.base_dir, impl.options,
                                                  impl.providers, onnxrt::SessionRole{false});
    lw.marked_key = key;
    lw.model.reset();
  }
  last_run_count_ = 1;
  return lw.marked->run(feed);
}

NamedTensors OnnxrtRunner::infer_layerwise(const NamedTensors& feed) {
  Layerwise& lw = *layerwise_;
  if (!lw.analysis) lw.load_model(*session_);
  const onnxrt::GraphAnalysis& analysis = *lw.analysis;
  const bool keep_all = intermediates_.mode == IntermediateOutputs::Mode::kAll;
  std::vector<std::string> listed;
  if (intermediates_.mode == IntermediateOutputs::Mode::kList) {
    lw.check_requested(intermediates_.names);
    listed = intermediates_.names;
  }
  std::unordered_set<std::string> wanted(analysis.outputs.begin(), analysis.outputs.end());
  wanted.insert(listed.begin(), listed.end());

  // The pieces hold the weights between them: the whole-model session would be a second copy.
  if (session_->release_full_session()) log::verbose("{}: whole-model session released for the layerwise run", name());
  const Layerwise::Plan& plan = lw.plan_for(*session_, feed);
  const auto& library = session_->impl().library;

  std::unordered_map<std::string, ValuePtr> live;
  for (const auto& [name, tensor] : feed) live[name] = onnxrt::value_from_tensor(library, tensor);
  std::unordered_map<std::string, Tensor> kept;
  const TensorCallback* callback = callback_ ? &callback_ : nullptr;

  for (std::size_t k = 0; k < plan.ranges.size(); ++k) {
    const onnxrt::Session& piece = lw.piece(*session_, plan.ranges[k], live);
    std::vector<const OrtValue*> inputs;
    for (const auto& name : piece.input_names()) {
      auto it = live.find(name);
      if (it == live.end())
        raise<InvalidInputError>(
            "tensor '{}' is read by the graph but is neither a fed input nor produced earlier",
            name);
      inputs.push_back(it->second->get());
    }
    std::vector<ValuePtr> values = piece.run(inputs);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::string& name = piece.output_names()[i];
      std::optional<Tensor> tensor = onnxrt::tensor_from_value(values[i]);
      if (tensor) {
        if (callback) {
          const auto& producer = analysis.produced[analysis.produced_index.at(name)];
          auto node = static_cast<std::size_t>(producer.node);
          // Each output value is ONNX Runtime's fresh allocation, owned by this tensor alone.
          (*callback)(
              ProducedTensor{name, *tensor, analysis.node_names[node], analysis.op_types[node], true});
        }
        if (keep_all || wanted.count(name)) kept.emplace(name, std::move(*tensor));
      }
      if (auto last = plan.last_reader.find(name);
          last != plan.last_reader.end() && last->second > k)
        live[name] = std::move(values[i]);
    }
    for (const auto& name : piece.input_names())
      if (auto last = plan.last_reader.find(name);
          last == plan.last_reader.end() || last->second <= k)
        live.erase(name);
  }
  live.clear();
  lw.model.reset();
  last_run_count_ = plan.ranges.size();

  // Graph outputs first, then the requested intermediates, as the reference runner returns them.
  NamedTensors outputs;
  std::unordered_set<std::string> emitted;
  auto emit = [&](const std::string& name) {
    if (emitted.count(name)) return;
    if (auto it = kept.find(name); it != kept.end()) {
      outputs.emplace_back(name, it->second);
    } else if (auto fed = std::find_if(feed.begin(), feed.end(),
                                       [&](const auto& e) { return e.first == name; });
               fed != feed.end()) {
      outputs.emplace_back(name, fed->second);
    } else if (auto init = analysis.initializer_index.find(name);
               init != analysis.initializer_index.end()) {
      lw.load_model(*session_);
      outputs.emplace_back(
          name, Tensor::copy_of(onnx::tensor_from_proto(
                    lw.model->proto->graph().initializer(init->second), lw.model->base_dir)));
      lw.model.reset();
    } else {
      return;  // a sequence or an absent optional: runners hand out tensors only
    }
    emitted.insert(name);
  };
  for (const auto& name : analysis.outputs) emit(name);
  if (keep_all)
    for (const auto& produced : analysis.produced) emit(produced.name);
  for (const auto& name : listed) emit(name);
  return outputs;
}

}  // namespace parity::runtime
