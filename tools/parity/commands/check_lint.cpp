// `parity check lint`: topologically lint an ONNX model (ONNX's checker, then each node run on the
// reference runner) and write Polygraphy's JSON report.
#include "args/model_args.h"
#include "args/tensor_meta_parse.h"
#include "command.h"
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
    app.add_option("--input-shapes,--inputs", input_shapes_, "Input shapes for the generated data: name:[dims]")
        ->group("ONNX Model Loading");
    app.add_option("--seed", seed_, "Seed of the data loader")->group("Data Loader");
    app.add_option("--val-range", val_ranges_,
                   "Range of generated values, [min,max] for all inputs or name:[min,max] for one")
        ->group("Data Loader");
    app.add_option("-o,--output", output_, "Path to save the JSON report")->group("Lint");
  }

  int run() override {
    TensorMetadata shapes = parse_input_shapes(input_shapes_, "--input-shapes");
    onnx::Model model = model_.load();
    runtime::LintOptions options;
    options.data.seed = seed_;
    options.data.val_ranges = parse_val_ranges(val_ranges_, "--val-range");
    for (const auto& [name, info] : shapes) {
      std::vector<int64_t> dims;
      for (const auto& d : *info.shape) dims.push_back(d.value ? *d.value : -1);
      options.data.input_shapes.emplace_back(name, dims);
    }
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
  std::vector<std::string> input_shapes_, val_ranges_;
  uint32_t seed_ = 1;
  std::string output_;
};

PARITY_REGISTER_COMMAND(CheckLintCommand);

}  // namespace
}  // namespace parity::cli
