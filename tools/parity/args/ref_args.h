// `--ref`'s options (the "Reference Runner" group): --ref-precision, --ref-max-loop-iterations.
#pragma once

#include <cstdint>
#include <string>

#include "args/backend_args.h"
#include "parity/ops/kernel.h"

namespace parity::cli {

class RefArgs : public BackendArgs {
 public:
  const runtime::BackendDescriptor& descriptor() const override { return runtime::find_backend("ref"); }
  std::string flag_help() const override { return "Run Parity's reference interpreter (repeatable)"; }
  void add_runner_options(CLI::App& app) override;
  void parse_runner_options(int, bool) override {}
  std::unique_ptr<runtime::Runner> make_runner(const runtime::ModelLoader& model,
                                               const std::string& compiled_file) const override;
  std::string add_script_runner(GeneratedScript& script, const std::string& onnx_model) const override;
  std::string script_name() const override { return "the reference interpreter"; }

 private:
  std::string precision_ = "fp32";
  int64_t max_loop_iterations_ = ops::ExecutionLimits{}.max_loop_iterations;
};

}  // namespace parity::cli
