#include "args/onnxrt_args.h"

#include <fmt/format.h>

#include "args/generated_script.h"
#include "parity/core/error.h"
#include "parity/core/thread_pool.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"

namespace parity::cli {

void OnnxrtArgs::add_runner_options(CLI::App& app) {
  const char* ort = "ONNX-Runtime Session Creation";
  app.add_option("--providers,--execution-providers", providers_,
                 "ONNX Runtime execution providers in priority order (exact or case-insensitive partial "
                 "match; default: cpu)")
      ->group(ort);
  app.add_option("--ort-opt-level", opt_level_, "ONNX Runtime graph optimization level: disable, basic, "
                 "extended, all (default)")->group(ort);
  app.add_option("--ort-intra-op-threads", intra_threads_, "ONNX Runtime intra-op threads (0: its default)")
      ->group(ort);
  app.add_option("--ort-library", library_, "ONNX Runtime shared library (file or folder)")->group(ort);
  layerwise_budget_ =
      app.add_option("--ort-layerwise-budget", layerwise_budget_mib_,
                     "Layerwise runs: MiB of intermediate tensors one ONNX Runtime partial run may produce; the "
                     "graph is split into pieces that fit (default 64; 0: half the available memory)")
          ->group(ort);
  app.add_option("--ort-profile", profile_,
                 "ONNX Runtime profiling: each ONNX Runtime runner writes a Chrome-trace JSON file "
                 "'<PREFIX>_<date>.json' when it finishes (its path is logged)")
      ->group(ort);
}

void OnnxrtArgs::parse_runner_options(int runners, bool) {
  if (!opt_level_.empty()) (void)runtime::ort_optimization_level_from_name(opt_level_);
  check_backend_threads("--ort-intra-op-threads", intra_threads_);
  if (layerwise_budget_mib_ < 0 || layerwise_budget_mib_ > (int64_t{1} << 30))
    raise<InvalidInputError>("--ort-layerwise-budget must be between 0 and 2^30 MiB, got {}", layerwise_budget_mib_);
  if (!profile_.empty() && runners == 0)
    raise<InvalidInputError>("--ort-profile needs an ONNX Runtime runner (--onnxrt)");
}

std::unique_ptr<runtime::Runner> OnnxrtArgs::make_runner(const runtime::ModelLoader& model,
                                                         const std::string&) const {
  runtime::OnnxrtOptions options;
  if (!providers_.empty()) options.providers = providers_;
  if (!opt_level_.empty()) options.optimization_level = runtime::ort_optimization_level_from_name(opt_level_);
  options.intra_op_threads = intra_threads_;
  options.library_path = library_;
  options.profile_prefix = profile_;
  options.intermediate_memory_budget = static_cast<std::size_t>(layerwise_budget_mib_) << 20;
  return std::make_unique<runtime::OnnxrtRunner>(model, options);
}

void OnnxrtArgs::add_script_loaders(GeneratedScript& script, const std::string& onnx_model, bool onnx_loader,
                                    int runners, std::vector<std::string>& loaders) const {
  if (runners > 0) {
    script.add_import("parity.backend.onnxrt", "OnnxrtRunner");
    script.add_import("parity.backend.onnxrt", "SessionFromOnnx");
    std::string source = onnx_model;
    if (onnx_loader) {
      script.add_import("parity.backend.onnx", "BytesFromOnnx");
      loaders.push_back(fmt::format("serialize_onnx = BytesFromOnnx({})", onnx_model));
      source = "serialize_onnx";
    }
    std::vector<std::string> session{source};
    if (!providers_.empty()) session.push_back("providers=" + python_string_list(providers_));
    if (intra_threads_ > 0) session.push_back(fmt::format("intra_op_threads={}", intra_threads_));
    if (!opt_level_.empty()) session.push_back("optimization_level=" + python_string(opt_level_));
    if (!profile_.empty()) session.push_back("profile_prefix=" + python_string(profile_));
    if (!library_.empty()) session.push_back("library_path=" + script.path(library_));
    loaders.push_back(fmt::format("build_onnxrt_session = SessionFromOnnx({})", fmt::join(session, ", ")));
  }
  // Streamed layerwise runs only: the script holds its results, whatever the budget.
  if (layerwise_budget_->count()) script.cannot_express("--ort-layerwise-budget");
}

std::string OnnxrtArgs::add_script_runner(GeneratedScript&, const std::string&) const {
  return "    OnnxrtRunner(build_onnxrt_session),";
}

}  // namespace parity::cli
