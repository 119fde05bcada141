// `--torch`'s options (the "PyTorch Runner" group): the model (--torch-model-script, --torch-model),
// --torch-device, --torch-dtype, --torch-dtype-mode, --torch-tf32, --torch-compile, --torch-python.
// Each option given once applies to every --torch runner; given once per --torch, its i-th value
// goes to the i-th PyTorch runner (`--torch --torch --torch-dtype fp32 --torch-dtype bf16`).
#pragma once

#include <string>
#include <vector>

#include "args/backend_args.h"
#include "parity/runtime/torch/torch_runner.h"

namespace parity::cli {

class TorchArgs : public BackendArgs {
 public:
  const runtime::BackendDescriptor& descriptor() const override { return runtime::find_backend("torch"); }
  std::string flag_help() const override;
  void add_runner_options(CLI::App& app) override;
  void parse_runner_options(int runners, bool hybrid) override;
  void start_runners() const override {
    made_ = 0;
    scripted_ = 0;
  }
  // A runner for the next --torch in command-line order (runners are made in that order).
  std::unique_ptr<runtime::Runner> make_runner(const runtime::ModelLoader& model,
                                               const std::string& compiled_file) const override;
  bool script_reads_onnx_loader() const override { return false; }
  void add_script_loaders(GeneratedScript& script, const std::string& onnx_model, bool onnx_loader, int runners,
                          std::vector<std::string>& loaders) const override;
  std::string add_script_runner(GeneratedScript& script, const std::string& onnx_model) const override;
  std::string script_name() const override { return "PyTorch"; }

 private:
  // The i-th runner's value of an option given once or once per runner; `fallback` when not given.
  std::string value_for(const std::vector<std::string>& values, std::size_t runner, const std::string& fallback) const;

  CLI::App* app_ = nullptr;
  std::vector<std::string> scripts_, models_, devices_, dtypes_, dtype_modes_, tf32_, compile_, pythons_;
  // The --gen-script variable of the i-th distinct model's loader ("load_torch", "load_torch2").
  static std::string loader_variable(std::size_t source);

  std::vector<runtime::TorchOptions> runners_;  // parsed, one per --torch
  std::vector<runtime::TorchModelSource> sources_;  // the distinct models, in order
  std::vector<std::size_t> source_of_;              // each runner's index in sources_
  mutable std::size_t made_ = 0;                // runners made since start_runners() (make_runner)
  mutable std::size_t scripted_ = 0;            // runners written since start_runners() (add_script_runner)
};

}  // namespace parity::cli
