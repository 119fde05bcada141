// `parity check lint`: topologically lint an ONNX model (ONNX's checker, then each node run on ONNX
// Runtime, or on the reference runner with --lint-runner ref) and write Polygraphy's JSON report.
#include "args/data_loader_args.h"
#include "args/model_args.h"
#include "command.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/onnx/passes.h"
#include "parity/runtime/passes/lint.h"

namespace parity::cli {
namespace {

class CheckLintCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"check", "lint"}; }
  std::string description() const override {
    return "[EXPERIMENTAL] Topologically lint an ONNX model to find faulty nodes; write a JSON report";
  }
  void add_options(CLI::App& app) override {
    model_.add_to(app);
    data_.add_to(app, DataLoaderFlags{.warm_up = false});
    providers_option_ = app.add_option("--providers,--execution-providers", providers_,
                                       "ONNX Runtime execution providers in priority order (exact or case-insensitive "
                                       "partial names; default: cpu)")
                            ->group("ONNX-Runtime Session Creation");
    ort_library_option_ = app.add_option("--ort-library", ort_library_, "ONNX Runtime shared library (file or folder)")
                              ->group("ONNX-Runtime Session Creation");
    app.add_option("--lint-runner", runner_,
                   "What runs the node checks: onnxrt (ONNX Runtime, as Polygraphy; source 'onnxruntime') or ref "
                   "(Parity's reference runner; source 'ref_runner'). Default: onnxrt")
        ->check(CLI::IsMember({"onnxrt", "ref"}))
        ->group("Lint");
    app.add_option("-o,--output", output_, "Path to save the JSON report")->group("Lint");
  }

  int run() override {
    data_.parse();
    runtime::LintOptions options;
    if (runner_ == "ref") {
      if (providers_option_->count() > 0 || ort_library_option_->count() > 0)
        raise<InvalidInputError>("--providers and --ort-library apply to ONNX Runtime's node checks, not to "
                                 "--lint-runner ref");
      options.runner = runtime::LintNodeRunner::kReference;
    }
    if (!providers_.empty()) options.onnxrt.providers = providers_;
    options.onnxrt.library_path = ort_library_;
    onnx::Model model = model_.load();
    options.feeds = data_.data_loader()(onnx::graph_inputs(model->graph()));
    if (options.feeds.empty())
      raise<InvalidInputError>("check lint needs at least one iteration of inputs and the data loader gave none "
                               "(--iterations 0, or a --data-loader-script that yields nothing)");
    auto report = runtime::lint_model(std::move(model), options);
    log::info("Lint summary: {} node(s) passing, {} failing, {} entr{}", report.passing.size(), report.failing.size(),
              report.entries.size(), report.entries.size() == 1 ? "y" : "ies");
    if (!output_.empty()) {
      write_file_atomic(output_, report.to_json().dump(4) + "\n");
      log::info("Saved linting report to: {}", output_);
    }
    return report.valid ? 0 : 1;
  }

 private:
  ModelArgs model_;
  DataLoaderArgs data_;
  std::vector<std::string> providers_;
  CLI::Option* providers_option_ = nullptr;
  std::string ort_library_;
  CLI::Option* ort_library_option_ = nullptr;
  std::string runner_ = "onnxrt";
  std::string output_;
};

PARITY_REGISTER_COMMAND(CheckLintCommand);

}  // namespace
}  // namespace parity::cli
