#include "args/runner_args.h"

#include <fmt/format.h>

#include "args/generated_script.h"
#include "parity/core/error.h"
#include "parity/runtime/hybrid_runner.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"
#include "parity/runtime/openvino/openvino_runner.h"
#include "parity/runtime/openvino/openvino_support_query.h"
#include "parity/runtime/ref/ref_runner.h"

namespace parity::cli {

void RunnerArgs::add_to(CLI::App& app) {
  app_ = &app;
  const char* runners = "Runners";
  ref_flag_ = app.add_flag("--ref", ref_count_, "Run Parity's reference interpreter (repeatable)")->group(runners);
  onnxrt_flag_ = app.add_flag("--onnxrt", onnxrt_count_, "Run ONNX Runtime (repeatable)")->group(runners);
  openvino_flag_ = app.add_flag("--openvino", openvino_count_,
                                "Run OpenVINO on the CPU (repeatable; loaded at activation, see --ov-* options)")
                       ->group(runners);
  app.add_option("--fallback", fallback_,
                 "Hybrid run: each --openvino runner runs the subgraphs OpenVINO supports and hands the others "
                 "(as `inspect capability --openvino` partitions the model) to this runner: ref or onnxrt")
      ->check(CLI::IsMember({"ref", "onnxrt"}))
      ->group(runners);
  const char* ref = "Reference Runner";
  app.add_option("--ref-precision", ref_precision_, "Reference interpreter precision: fp32 (default) or fp64")
      ->check(CLI::IsMember({"fp32", "fp64"}))
      ->group(ref);
  const char* ort = "ONNX-Runtime Session Creation";
  app.add_option("--providers,--execution-providers", providers_,
                 "ONNX Runtime execution providers in priority order (exact or case-insensitive partial "
                 "match; default: cpu)")
      ->group(ort);
  app.add_option("--ort-opt-level", ort_opt_level_, "ONNX Runtime graph optimization level: disable, basic, "
                 "extended, all (default)")->group(ort);
  app.add_option("--ort-intra-op-threads", ort_intra_threads_, "ONNX Runtime intra-op threads (0: its default)")
      ->group(ort);
  app.add_option("--ort-library", ort_library_, "ONNX Runtime shared library (file or folder)")->group(ort);
  app.add_option("--ort-layerwise-budget", ort_layerwise_budget_mib_,
                 "Layerwise runs: MiB of intermediate tensors one ONNX Runtime partial run may produce; the "
                 "graph is split into pieces that fit (default 64; 0: half the available memory)")
      ->group(ort);
  app.add_option("--ort-profile", ort_profile_,
                 "ONNX Runtime profiling: each ONNX Runtime runner writes a Chrome-trace JSON file "
                 "'<PREFIX>_<date>.json' when it finishes (its path is logged)")
      ->group(ort);
  openvino_.add_to(app);
  openvino_.add_profiling_to(app);
}

void RunnerArgs::parse() {
  if (!ort_opt_level_.empty()) (void)runtime::ort_optimization_level_from_name(ort_opt_level_);
  if (ort_intra_threads_ < 0) raise<InvalidInputError>("--ort-intra-op-threads must be >= 0");
  if (ort_layerwise_budget_mib_ < 0 || ort_layerwise_budget_mib_ > (int64_t{1} << 30))
    raise<InvalidInputError>("--ort-layerwise-budget must be between 0 and 2^30 MiB, got {}", ort_layerwise_budget_mib_);
  if (!ort_profile_.empty() && onnxrt_count_ == 0)
    raise<InvalidInputError>("--ort-profile needs an ONNX Runtime runner (--onnxrt)");
  openvino_.parse(openvino_count_);
  if (!fallback_.empty() && openvino_count_ == 0)
    raise<InvalidInputError>("--fallback runs what OpenVINO cannot on another runner: give --openvino");
  if (!fallback_.empty() && openvino_.outputs().mode != runtime::IntermediateOutputs::Mode::kNone)
    raise<InvalidInputError>("--ov-outputs marks tensors in one OpenVINO model; a hybrid run (--fallback) runs "
                             "several: give --onnx-outputs instead");
}

std::vector<std::unique_ptr<runtime::Runner>> RunnerArgs::make_runners(const runtime::ModelLoader& model,
                                                                      const std::string& compiled_file) const {
  if (!compiled_file.empty() && (ref_count_ > 0 || onnxrt_count_ > 0))
    raise<InvalidInputError>("{} is a compiled OpenVINO model, which only --openvino runs; give --ref and --onnxrt "
                             "the ONNX model (or compare with results saved from it: --load-outputs)",
                             compiled_file);
  if (!compiled_file.empty() && !fallback_.empty())
    raise<InvalidInputError>("{} is a compiled OpenVINO model; a hybrid run (--fallback) partitions an ONNX model: "
                             "give the ONNX model",
                             compiled_file);
  auto make_ref = [this](const runtime::ModelLoader& loader) -> std::unique_ptr<runtime::Runner> {
    runtime::RefOptions options;
    options.fp64 = ref_precision_ == "fp64";
    return std::make_unique<runtime::RefRunner>(loader, options);
  };
  auto make_onnxrt = [this](const runtime::ModelLoader& loader) -> std::unique_ptr<runtime::Runner> {
    runtime::OnnxrtOptions options;
    if (!providers_.empty()) options.providers = providers_;
    if (!ort_opt_level_.empty()) options.optimization_level = runtime::ort_optimization_level_from_name(ort_opt_level_);
    options.intra_op_threads = ort_intra_threads_;
    options.library_path = ort_library_;
    options.profile_prefix = ort_profile_;
    options.intermediate_memory_budget = static_cast<std::size_t>(ort_layerwise_budget_mib_) << 20;
    return std::make_unique<runtime::OnnxrtRunner>(loader, options);
  };
  std::vector<std::unique_ptr<runtime::Runner>> runners;
  for (const CLI::Option* option : app_->parse_order()) {
    if (option == ref_flag_) {
      runners.push_back(make_ref(model));
    } else if (option == onnxrt_flag_) {
      runners.push_back(make_onnxrt(model));
    } else if (option == openvino_flag_ && !fallback_.empty()) {
      runtime::OpenvinoOptions options = openvino_.options();
      runtime::HybridBackend primary{"openvino", [options](const runtime::ModelLoader& loader) {
                                       return std::make_unique<runtime::OpenvinoRunner>(loader, options);
                                     }};
      runtime::HybridBackend fallback{fallback_, nullptr};
      if (fallback_ == "ref") fallback.make_runner = make_ref;
      else fallback.make_runner = make_onnxrt;
      runners.push_back(std::make_unique<runtime::HybridRunner>(
          model, [] { return std::make_unique<runtime::OpenvinoSupportQuery>(); }, std::move(primary),
          std::move(fallback)));
    } else if (option == openvino_flag_) {
      runtime::OpenvinoOptions options = openvino_.options();
      options.compiled_file = compiled_file;
      runners.push_back(std::make_unique<runtime::OpenvinoRunner>(model, std::move(options)));
    }
  }
  return runners;
}

void RunnerArgs::add_to_script(GeneratedScript& script, const ScriptModel& model) const {
  std::vector<std::string> loaders, runners, names;
  const bool edits = model.outputs.mode != runtime::IntermediateOutputs::Mode::kNone || !model.exclude_outputs.empty();
  // ONNX Runtime alone, on the unchanged model with its external data beside it, takes the path
  // (as Polygraphy's scripts do).
  const bool onnx_loader = edits || ref_count_ > 0 || openvino_count_ > 0 || !model.external_data_dir.empty();
  std::string onnx_model = python_string(model.path);
  if (onnx_loader) {
    script.add_import("parity.backend.onnx", "OnnxFromPath");
    std::string external_data;
    if (!model.external_data_dir.empty())
      external_data = ", external_data_dir=" + python_string(model.external_data_dir);
    loaders.push_back(fmt::format("load_onnx = OnnxFromPath({}{})", onnx_model, external_data));
    onnx_model = "load_onnx";
    if (edits) {
      script.add_import("parity.backend.onnx", "ModifyOutputs as ModifyOnnxOutputs");
      std::vector<std::string> arguments{"load_onnx"};
      if (model.outputs.mode == runtime::IntermediateOutputs::Mode::kAll) {
        script.add_import("parity", "constants");
        arguments.push_back("outputs=constants.MARK_ALL");
      } else if (model.outputs.mode == runtime::IntermediateOutputs::Mode::kList) {
        arguments.push_back("outputs=" + python_string_list(model.outputs.names));
      }
      if (!model.exclude_outputs.empty()) arguments.push_back("exclude_outputs=" + python_string_list(model.exclude_outputs));
      loaders.push_back(fmt::format("modify_outputs = ModifyOnnxOutputs({})", fmt::join(arguments, ", ")));
      onnx_model = "modify_outputs";
    }
  }
  if (onnxrt_count_ > 0) {
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
    if (ort_intra_threads_ > 0) session.push_back(fmt::format("intra_op_threads={}", ort_intra_threads_));
    if (!ort_opt_level_.empty()) session.push_back("optimization_level=" + python_string(ort_opt_level_));
    if (!ort_profile_.empty()) session.push_back("profile_prefix=" + python_string(ort_profile_));
    if (!ort_library_.empty()) session.push_back("library_path=" + python_string(ort_library_));
    loaders.push_back(fmt::format("build_onnxrt_session = SessionFromOnnx({})", fmt::join(session, ", ")));
  }
  // Streamed layerwise runs only: the script holds its results, whatever the budget.
  if (app_->count("--ort-layerwise-budget")) script.cannot_express("--ort-layerwise-budget");
  std::string openvino_arguments;
  if (openvino_count_ > 0) openvino_arguments = openvino_.add_to_script(script);
  for (const CLI::Option* option : app_->parse_order()) {
    if (option == ref_flag_) {
      script.add_import("parity.backend.ref", "RefRunner");
      runners.push_back(fmt::format("    RefRunner({}{}),", onnx_model, ref_precision_ == "fp64" ? ", fp64=True" : ""));
      names.push_back("the reference interpreter");
    } else if (option == onnxrt_flag_) {
      runners.push_back("    OnnxrtRunner(build_onnxrt_session),");
      names.push_back("ONNX-Runtime");
    } else if (option == openvino_flag_) {
      script.add_import("parity.backend.openvino", "OpenVINORunner");
      runners.push_back(fmt::format("    OpenVINORunner({}{}),", onnx_model, openvino_arguments));
      names.push_back("OpenVINO");
    }
  }
  if (names.size() == 1) script.add_summary(fmt::format("This script runs {} using {}.", model.path, names[0]));
  if (names.size() > 1) {
    std::vector<std::string> first(names.begin(), names.end() - 1);
    script.add_summary(fmt::format("This script compares {} between {} and {}.", model.path, fmt::join(first, ", "),
                                   names.back()));
  }
  if (!loaders.empty()) script.add_section("Loaders", loaders);
  if (runners.empty()) {
    script.add_section("Runners", {"runners = []"});
  } else {
    runners.insert(runners.begin(), "runners = [");
    runners.push_back("]");
    script.add_section("Runners", runners);
  }
}

}  // namespace parity::cli
