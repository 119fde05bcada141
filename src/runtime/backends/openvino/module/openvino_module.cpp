// libparity_openvino.so: the module the OpenvinoRunner dlopens. Its entry point returns the
// process-wide Backend, which owns one ov::Core; every OpenVINO exception is turned into a
// BackendFailure here so nothing of OpenVINO's crosses the boundary.
#include <mutex>

#include <openvino/core/version.hpp>
#include <openvino/openvino.hpp>

#include "openvino_backend.h"
#include "openvino_compiled_model.h"
#include "openvino_query_model.h"

namespace parity::runtime::openvino {
namespace {

// Runs `body`, turning OpenVINO's and the standard library's exceptions into BackendFailure.
template <typename Body>
auto guarded(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const BackendFailure&) {
    throw;
  } catch (const ov::NotImplemented& error) {
    throw BackendFailure(BackendFailure::Kind::kUnsupported, error.what());
  } catch (const std::exception& error) {
    throw BackendFailure(BackendFailure::Kind::kOther, error.what());
  }
}

// The model, guarded on every call.
class GuardedCompiledModel : public CompiledModel {
 public:
  explicit GuardedCompiledModel(std::unique_ptr<OpenvinoCompiledModel> model) : model_(std::move(model)) {}
  std::vector<InputDescription> inputs() const override { return guarded([&] { return model_->inputs(); }); }
  std::string inference_precision() const override {
    return guarded([&] { return model_->inference_precision(); });
  }
  std::vector<std::string> output_names() const override { return model_->output_names(); }
  std::vector<std::string> unmarkable_tensors() const override { return model_->unmarkable_tensors(); }
  std::vector<OutputBuffer> infer(const std::vector<InputBuffer>& inputs, bool cancellable) override {
    return guarded([&] { return model_->infer(inputs, cancellable); });
  }
  void cancel() override { guarded([&] { model_->cancel(); }); }
  std::vector<TensorDescription> outputs() const override { return guarded([&] { return model_->outputs(); }); }
  std::string export_model() const override { return guarded([&] { return model_->export_model(); }); }
  std::vector<ExecutedLayer> executed_layers() const override {
    return guarded([&] { return model_->executed_layers(); });
  }
  std::vector<LayerTiming> layer_timings() const override { return guarded([&] { return model_->layer_timings(); }); }
  AsyncRunResult run_async(const std::vector<std::vector<InputBuffer>>& inputs,
                           const AsyncRunRequest& request) override {
    return guarded([&] { return model_->run_async(inputs, request); });
  }
  std::vector<std::pair<std::string, std::string>> properties() const override {
    return guarded([&] { return model_->properties(); });
  }

 private:
  std::unique_ptr<OpenvinoCompiledModel> model_;
};

class OpenvinoBackend : public Backend {
 public:
  int interface_version() const override { return kBackendInterfaceVersion; }
  std::string openvino_version() const override { return ov::get_openvino_version().buildNumber; }
  std::vector<std::string> available_devices() override {
    return guarded([&] { return core_.get_available_devices(); });
  }
  void set_log_function(LogFunction log) override {
    std::lock_guard lock(mutex_);
    log_ = std::move(log);
  }
  std::unique_ptr<CompiledModel> compile(const CompileRequest& request) override {
    std::lock_guard lock(mutex_);
    return guarded([&]() -> std::unique_ptr<CompiledModel> {
      std::shared_ptr<ov::Model> model = converted(request);
      return std::make_unique<GuardedCompiledModel>(
          std::make_unique<OpenvinoCompiledModel>(core_, request, std::move(model), log_));
    });
  }
  void drop_kept_conversion() override {
    std::lock_guard lock(mutex_);
    kept_.reset();
    kept_bytes_.clear();
    kept_bytes_.shrink_to_fit();
  }
  QueryResult query_model(const QueryRequest& request) override {
    std::lock_guard lock(mutex_);
    return guarded([&] { return query_onnx_model(core_, request); });
  }
  std::unique_ptr<CompiledModel> import_model(const ImportRequest& request) override {
    std::lock_guard lock(mutex_);
    return guarded([&]() -> std::unique_ptr<CompiledModel> {
      return std::make_unique<GuardedCompiledModel>(std::make_unique<OpenvinoCompiledModel>(core_, request));
    });
  }

 private:
  // The request's model converted by OpenVINO's ONNX frontend: a copy of the kept conversion where
  // it is of the same model, else converted anew; kept for the next request or dropped
  // (CompileRequest::keep_conversion).
  std::shared_ptr<ov::Model> converted(const CompileRequest& request) {
    auto same_bounds = [&] {
      if (kept_bounds_.size() != request.input_bounds.size()) return false;
      for (std::size_t i = 0; i < kept_bounds_.size(); ++i) {
        const auto &a = kept_bounds_[i], &b = request.input_bounds[i];
        if (a.name != b.name || a.dims.size() != b.dims.size()) return false;
        for (std::size_t d = 0; d < a.dims.size(); ++d)
          if (a.dims[d].min != b.dims[d].min || a.dims[d].max != b.dims[d].max) return false;
      }
      return true;
    };
    const bool reuse = kept_ && kept_path_ == request.model_path && same_bounds() && kept_bytes_ == request.model_bytes;
    std::shared_ptr<ov::Model> model = reuse ? kept_->clone() : read_onnx_model(request);
    if (!request.keep_conversion) {
      kept_.reset();
      kept_bytes_.clear();
      kept_bytes_.shrink_to_fit();
    } else if (!reuse) {
      kept_ = model->clone();
      kept_bytes_ = request.model_bytes;
      kept_path_ = request.model_path;
      kept_bounds_ = request.input_bounds;
    }
    return model;
  }

  std::mutex mutex_;
  ov::Core core_;
  LogFunction log_;
  std::shared_ptr<ov::Model> kept_;  // CompileRequest::keep_conversion: the model as converted, unmarked
  std::string kept_bytes_, kept_path_;
  std::vector<InputShapeBounds> kept_bounds_;
};

}  // namespace
}  // namespace parity::runtime::openvino

extern "C" __attribute__((visibility("default"))) parity::runtime::openvino::Backend* parity_openvino_backend(
    std::string* error) {
  static parity::runtime::openvino::Backend* backend = nullptr;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      backend = new parity::runtime::openvino::OpenvinoBackend();
    } catch (const std::exception& exception) {
      failure = exception.what();
    }
  });
  if (!backend && error) *error = failure;
  return backend;
}
