#include "args/ref_args.h"

#include <fmt/format.h>

#include "args/generated_script.h"
#include "parity/runtime/ref/ref_runner.h"

namespace parity::cli {

void RefArgs::add_runner_options(CLI::App& app) {
  app.add_option("--ref-precision", precision_, "Reference interpreter precision: fp32 (default) or fp64")
      ->check(CLI::IsMember({"fp32", "fp64"}))
      ->group("Reference Runner");
  app.add_option("--ref-max-loop-iterations", max_loop_iterations_,
                 fmt::format("Iterations one Loop node may run before the run fails with an error naming it "
                             "(default {})", ops::ExecutionLimits{}.max_loop_iterations))
      ->check(CLI::Range(int64_t{1}, INT64_MAX))
      ->group("Reference Runner");
}

std::unique_ptr<runtime::Runner> RefArgs::make_runner(const runtime::ModelLoader& model, const std::string&) const {
  runtime::RefOptions options;
  options.fp64 = precision_ == "fp64";
  options.limits.max_loop_iterations = max_loop_iterations_;
  return std::make_unique<runtime::RefRunner>(model, options);
}

std::string RefArgs::add_script_runner(GeneratedScript& script, const std::string& onnx_model) const {
  script.add_import("parity.backend.ref", "RefRunner");
  std::string arguments = precision_ == "fp64" ? ", fp64=True" : "";
  if (max_loop_iterations_ != ops::ExecutionLimits{}.max_loop_iterations)
    arguments += fmt::format(", max_loop_iterations={}", max_loop_iterations_);
  return fmt::format("    RefRunner({}{}),", onnx_model, arguments);
}

}  // namespace parity::cli
