// `--onnxrt`'s options (the "ONNX-Runtime Session Creation" group): execution providers,
// optimization level, threads, the library, the layerwise budget and profiling.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "args/backend_args.h"

namespace parity::cli {

class OnnxrtArgs : public BackendArgs {
 public:
  const runtime::BackendDescriptor& descriptor() const override { return runtime::find_backend("onnxrt"); }
  std::string flag_help() const override { return "Run ONNX Runtime (repeatable)"; }
  void add_runner_options(CLI::App& app) override;
  void parse_runner_options(int runners, bool hybrid) override;
  std::unique_ptr<runtime::Runner> make_runner(const runtime::ModelLoader& model,
                                               const std::string& compiled_file) const override;
  // ONNX Runtime alone, on the unchanged model with its external data beside it, takes the path (as
  // Polygraphy's scripts do).
  bool script_reads_onnx_loader() const override { return false; }
  void add_script_loaders(GeneratedScript& script, const std::string& onnx_model, bool onnx_loader, int runners,
                          std::vector<std::string>& loaders) const override;
  std::string add_script_runner(GeneratedScript& script, const std::string& onnx_model) const override;
  std::string script_name() const override { return "ONNX-Runtime"; }

 private:
  std::vector<std::string> providers_;
  std::string opt_level_;
  int intra_threads_ = 0;
  std::string library_;
  std::string profile_;
  int64_t layerwise_budget_mib_ = 64;  // ppocrv4_det 640x640: 216 MiB peak at 64, 378 at 256
  CLI::Option* layerwise_budget_ = nullptr;
};

}  // namespace parity::cli
