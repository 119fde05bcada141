// ONNX Runtime sessions: creation from a model (Polygraphy's SessionFromOnnx), cached names, runs.
#include "ort_session.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "parity/core/error.h"
#include "parity/core/interrupt.h"
#include "parity/core/logger.h"
#include "parity/onnx/model.h"

namespace parity::runtime {
namespace onnxrt {

Session::Session(LibraryPtr library, const ::onnx::ModelProto& model,
                 const std::filesystem::path& base_dir, const OnnxrtOptions& options,
                 const std::vector<std::string>& providers, SessionRole role)
    : Session(std::move(library), onnx::serialize_model(model), base_dir, options, providers, role) {}

Session::Session(LibraryPtr library, std::string serialized_model, const std::filesystem::path& base_dir,
                 const OnnxrtOptions& options, const std::vector<std::string>& providers, SessionRole role)
    : library_(std::move(library)), profiling_(role.primary && !options.profile_prefix.empty()) {
  const OrtApi& api = library_->api();
  std::string bytes = std::move(serialized_model);
  OrtSessionOptions* session_options =
      make_session_options(*library_, options, providers, role, base_dir);
  OrtStatus* status = api.CreateSessionFromArray(library_->env(), bytes.data(), bytes.size(),
                                                 session_options, &session_);
  api.ReleaseSessionOptions(session_options);
  std::string().swap(bytes);  // ONNX Runtime keeps its own copy
  library_->check(status, "creating the session");
  try {
    auto read_names = [&](bool inputs, std::vector<std::string>& names) {
      std::size_t count = 0;
      library_->check(inputs ? api.SessionGetInputCount(session_, &count)
                             : api.SessionGetOutputCount(session_, &count),
                      "listing the session's inputs and outputs");
      for (std::size_t i = 0; i < count; ++i) {
        char* name = nullptr;
        library_->check(
            inputs ? api.SessionGetInputName(session_, i, library_->default_allocator(), &name)
                   : api.SessionGetOutputName(session_, i, library_->default_allocator(), &name),
            "reading an input or output name");
        names.emplace_back(name);
        library_->check(api.AllocatorFree(library_->default_allocator(), name), "freeing a name");
      }
    };
    read_names(true, input_names_);
    read_names(false, output_names_);
  } catch (...) {
    api.ReleaseSession(session_);
    throw;
  }
  for (const auto& name : input_names_) input_name_pointers_.push_back(name.c_str());
  for (const auto& name : output_names_) output_name_pointers_.push_back(name.c_str());
}

Session::~Session() {
  if (session_) library_->api().ReleaseSession(session_);
}

std::vector<ValuePtr> Session::run(const std::vector<const OrtValue*>& inputs) const {
  const OrtApi& api = library_->api();
  std::vector<OrtValue*> outputs(output_names_.size(), nullptr);
  // Where Ctrl-C can interrupt (the Python module), the run gets options that an InterruptWatch can
  // terminate: ONNX Runtime then stops between its kernels and returns an error.
  OrtRunOptions* run_options = nullptr;
  if (interrupt_watches_enabled()) library_->check(api.CreateRunOptions(&run_options), "creating run options");
  OrtStatus* status = nullptr;
  {
    std::optional<InterruptWatch> watch;
    if (run_options) watch.emplace([&api, run_options] {
      if (OrtStatus* refused = api.RunOptionsSetTerminate(run_options)) api.ReleaseStatus(refused);
    });
    status = api.Run(session_, run_options, input_name_pointers_.data(), inputs.data(), inputs.size(),
                     output_name_pointers_.data(), output_name_pointers_.size(), outputs.data());
  }
  if (run_options) api.ReleaseRunOptions(run_options);
  std::vector<ValuePtr> values;
  values.reserve(outputs.size());
  for (OrtValue* value : outputs)
    values.push_back(value ? std::make_shared<Value>(library_, value) : nullptr);
  if (status && run_options && interrupt_requested()) {
    api.ReleaseStatus(status);
    raise<InterruptedError>("ONNX Runtime's run was interrupted");
  }
  library_->check(status, "running the model");
  return values;
}

NamedTensors Session::run(const NamedTensors& feed) const {
  // Inputs wrap the caller's bytes for the duration of the call (no copy, no holder).
  struct Inputs {
    const OrtApi& api;
    std::vector<const OrtValue*> values;
    ~Inputs() {
      for (const OrtValue* v : values) api.ReleaseValue(const_cast<OrtValue*>(v));
    }
  } inputs{library_->api(), {}};
  std::vector<const Tensor*> fed;
  inputs.values.reserve(input_names_.size());
  fed.reserve(input_names_.size());
  for (const auto& name : input_names_) {
    const Tensor* tensor = nullptr;
    for (const auto& [given, value] : feed)
      if (given == name) tensor = &value;
    if (!tensor) raise<InvalidInputError>("input '{}' is missing from the feed", name);
    inputs.values.push_back(make_input_value(*library_, *tensor));
    fed.push_back(tensor);
  }
  std::vector<ValuePtr> values = run(inputs.values);
  NamedTensors outputs;
  outputs.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    if (auto tensor = tensor_from_value(values[i]))
      outputs.emplace_back(output_names_[i], detach_from_inputs(std::move(*tensor), fed));
  return outputs;
}

double Session::measure_run_floor(const NamedTensors& feed, int calls) const {
  const OrtApi& api = library_->api();
  std::vector<OrtValue*> inputs;
  for (const auto& name : input_names_) {
    auto it = std::find_if(feed.begin(), feed.end(),
                           [&](const auto& entry) { return entry.first == name; });
    if (it == feed.end()) raise<InvalidInputError>("input '{}' is missing from the feed", name);
    inputs.push_back(make_input_value(*library_, it->second));
  }
  std::vector<OrtValue*> outputs(output_names_.size(), nullptr);
  OrtStatus* status = nullptr;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls && !status; ++i) {
    status = api.Run(session_, nullptr, input_name_pointers_.data(), inputs.data(), inputs.size(),
                     output_name_pointers_.data(), outputs.size(), outputs.data());
    for (auto*& value : outputs) {
      if (value) api.ReleaseValue(value);
      value = nullptr;
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (OrtValue* value : inputs) api.ReleaseValue(value);
  library_->check(status, "running the model");
  return seconds / std::max(calls, 1);
}

std::string Session::end_profiling() {
  if (!profiling_) return {};
  profiling_ = false;
  char* path = nullptr;
  library_->check(
      library_->api().SessionEndProfiling(session_, library_->default_allocator(), &path),
      "ending profiling");
  std::string result = path ? path : "";
  if (path)
    library_->check(library_->api().AllocatorFree(library_->default_allocator(), path),
                    "freeing a path");
  return result;
}

}  // namespace onnxrt

OnnxrtLibraryInfo load_onnxrt_library(const std::string& library_path) {
  auto library = onnxrt::Library::load(library_path);
  return {library->path(), library->version(), library->found_by(), ORT_API_VERSION,
          library->available_providers()};
}

std::vector<std::string> resolve_onnxrt_providers(const OnnxrtOptions& options) {
  auto library = onnxrt::Library::load(options.library_path);
  return onnxrt::resolve_providers(*library, options.providers);
}

OnnxrtSession::OnnxrtSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OnnxrtSession::~OnnxrtSession() = default;

const TensorMetadata& OnnxrtSession::input_metadata() const {
  return impl_->inputs;
}
const TensorMetadata& OnnxrtSession::output_metadata() const {
  return impl_->outputs;
}
const OnnxrtOptions& OnnxrtSession::options() const {
  return impl_->options;
}
const OnnxrtLibraryInfo& OnnxrtSession::library() const {
  return impl_->library_info;
}
const std::vector<std::string>& OnnxrtSession::providers() const {
  return impl_->providers;
}
const std::string& OnnxrtSession::model_label() const {
  return impl_->model_label;
}

NamedTensors OnnxrtSession::run(const NamedTensors& feed) {
  return with_context(impl_->model_label, [&] {
    if (!impl_->session) {
      // Released for a layerwise run (release_full_session); made again from the model.
      onnx::Model model = impl_->model_loader();
      std::string bytes = onnx::serialize_model(*model.proto);
      model.proto.reset();
      impl_->session = std::make_unique<onnxrt::Session>(impl_->library, std::move(bytes), impl_->base_dir,
                                                         impl_->options, impl_->providers, onnxrt::SessionRole{});
    }
    const onnxrt::Session& session = *impl_->session;
    return session.run(feed);
  });
}

bool OnnxrtSession::release_full_session() {
  if (!impl_->session || !impl_->options.profile_prefix.empty()) return false;  // the profile lives in it
  impl_->session.reset();
  return true;
}

double measure_onnxrt_run_floor(OnnxrtSession& session, const NamedTensors& feed, int calls) {
  return session.impl().session->measure_run_floor(feed, calls);
}

std::shared_ptr<OnnxrtSession> session_from_model(ModelLoader model_loader,
                                                  const OnnxrtOptions& options) {
  onnx::Model model = model_loader();
  auto impl = std::make_unique<OnnxrtSession::Impl>();
  impl->model_label = model.path.empty() ? std::string("<model>") : model.path.string();
  return with_context(impl->model_label, [&] {
    impl->library = onnxrt::Library::load(options.library_path);
    impl->library_info = {impl->library->path(), impl->library->version(),
                          impl->library->found_by(), ORT_API_VERSION,
                          impl->library->available_providers()};
    impl->options = options;
    impl->providers = onnxrt::resolve_providers(*impl->library, options.providers);
    impl->model_loader = std::move(model_loader);
    impl->base_dir = model.base_dir;
    impl->inputs = onnx::graph_inputs(model->graph());
    impl->outputs = onnx::graph_outputs(model->graph());
    log::info("Creating ONNX-Runtime Inference Session with providers: ['{}']",
              fmt::join(impl->providers, "', '"));
    // ONNX Runtime runs ONNX's shape inference in-process when it loads a model: where that crashes
    // (tried in a child process), the model is refused rather than taking the process down.
    if (const auto crash = onnx::shape_inference_crash(*model.proto))
      raise<InvalidInputError>("{}; ONNX Runtime runs the same inference when it loads a model, so the model is "
                               "not given to it",
                               *crash);
    // Serialize, then drop Parity's parsed copy before ONNX Runtime parses its own.
    std::string bytes = onnx::serialize_model(*model.proto);
    model.proto.reset();
    impl->session =
        std::make_unique<onnxrt::Session>(impl->library, std::move(bytes), impl->base_dir, options,
                                          impl->providers, onnxrt::SessionRole{});
    return std::make_shared<OnnxrtSession>(std::move(impl));
  });
}

std::shared_ptr<OnnxrtSession> session_from_model(const onnx::Model& model,
                                                  const OnnxrtOptions& options) {
  return session_from_model(ModelLoader([model] { return model; }), options);
}

SessionLoader SessionFromModel(ModelLoader model, OnnxrtOptions options) {
  return [model = std::move(model), options = std::move(options)] {
    return session_from_model(model, options);
  };
}

}  // namespace parity::runtime
