// `parity run`: runs a model on one or more backends (in command-line order, each activated
// once), then compares their outputs the way Polygraphy's `run` does: adjacent pairs by default
// (or every result against one with --compare-to), simple/indices/distance/quality comparison
// functions, per-output tolerances, --validate, saved and loaded inputs and outputs in
// Polygraphy's formats, and a JSON report.
//
// Layerwise (--onnx-outputs): with exactly two results and no --save-outputs, tensors are compared
// one by one as the second run produces them, so memory stays bounded; the first divergence in
// topological order is named with its node.
//
// The command only parses flags, builds runners and the data loader, and hands them to the
// library's judge (parity/compare/judge.h), which runs, compares and gives the verdict; what it
// writes besides is the report.
#include <set>

#include <fmt/format.h>

#include "args/attribution_args.h"
#include "args/comparison_args.h"
#include "args/thread_args.h"
#include "args/data_loader_args.h"
#include "args/dataset_args.h"
#include "args/int8_args.h"
#include "args/reduced_precision_run_args.h"
#include "args/generated_script.h"
#include "args/model_args.h"
#include "args/model_explorer_args.h"
#include "args/model_save_args.h"
#include "args/output_marks.h"
#include "args/picture_args.h"
#include "args/report_html_args.h"
#include "args/perf_args.h"
#include "args/runner_args.h"
#include "args/tensor_meta_parse.h"
#include "args/value_parsing.h"
#include "command.h"
#include "parity/compare/judge.h"
#include "parity/compare/perf.h"
#include "parity/compare/run_results.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/runtime/openvino/openvino_compiled_file.h"

namespace parity::cli {
namespace {

// What runners and the layerwise bookkeeping load: large weights stay in the model file.
const onnx::LoadOptions kRunnerLoad{.lazy_weights = true};

class RunCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"run"}; }
  std::string description() const override {
    return "Run a model on one or more backends and compare their outputs (Polygraphy's `run`)";
  }

  void add_options(CLI::App& app) override {
    model_.add_to(app, /*shape_inference_by_default=*/false, /*checker_flag=*/true, /*model_required=*/false);
    runners_.add_to(app);
    const char* onnx_load = "ONNX Model Loading";
    app.add_option("--model-type", model_type_,
                   "The model's type, as Polygraphy takes it: only 'onnx' (TensorFlow and TensorRT types are not "
                   "supported; a compiled OpenVINO file is recognised by its content)")
        ->group(onnx_load);
    app.add_option("--onnx-outputs,--outputs", onnx_outputs_,
                   "Tensors to compare besides the graph outputs: 'mark all' (every tensor but Constants' values, as "
                   "Polygraphy), or entries: tensor names, op:TYPE, node:NAME, re:PATTERN, @file (entries one a line)")
        ->group(onnx_load);
    app.add_option("--onnx-exclude-outputs", onnx_exclude_outputs_,
                   "Tensors to leave out of the comparison (and of --save-outputs), graph outputs included: tensor "
                   "names, op:TYPE, node:NAME, re:PATTERN, @file (entries one a line)")
        ->group(onnx_load);
    app.add_option("--layerwise-worst", layerwise_worst_,
                   "Layerwise: how many of the worst tensors to list (default 10)")->group(onnx_load);
    app.add_option("--layerwise-memory", layerwise_memory_,
                   "Layerwise, streamed: how many bytes of the first runner's tensors wait in memory for their twins; "
                   "the rest wait in a temporary file (K, M, G suffixes allowed; default 1G; 0: all in the file)")
        ->group(onnx_load);
    app.add_option("--save-onnx", save_onnx_,
                   "Save the ONNX model the runners get, with the graph outputs the run compares (--onnx-outputs, "
                   "--onnx-exclude-outputs) and, with --shape-inference, the inferred shapes")
        ->group("ONNX Model Saving");
    save_.add_to(app);
    data_loader_.add_to(app);
    const char* inference = "Comparator Inference";
    data_loader_.add_save_inputs_to(app, inference);
    dataset_.add_to(app);
    app.add_option("--save-outputs,--save-results", save_outputs_, "Save the results (Polygraphy RunResults JSON)")
        ->group(inference);
    app.add_flag("--use-subprocess", use_subprocess_,
                 "Run each runner in a subprocess of its own, whose results come back to this one: a backend that "
                 "crashes is reported as that runner's failure instead of ending parity")
        ->group(inference);
    comparison_.add_to(app);
    pictures_.add_to(app);
    report_html_.add_to(app);
    model_explorer_.add_to(app);
    int8_.add_to(app,
                 "Quantize to int8 (docs/int8.md): the first runner runs the float model, the reference; the "
                 "others an int8 Q/DQ model calibrated once on the data loader's inputs",
                 /*keep_fp32_flag=*/true);
    reduced_precision_.add_to(app);
    compute_.add_to(app);
    attribution_.add_to(app);
    perf_.add_to(app);
    app.add_option("--gen-script,--gen", gen_script_,
                   "Write a Python script (Parity's Python API) that does what this command would do, to this path "
                   "('-' for standard output), instead of running it")
        ->group("Script Generation");
    app_ = &app;
  }

  int run() override {
    if (DatasetArgs::is_worker()) DatasetArgs::claim_standard_output();
    if (!gen_script_.empty()) return write_script();
    return run_with_verdict([this] { return report_html_.guard(command_line(), [this] { return execute(); }); });
  }

 private:
  // All flags are checked before any inference, so bad flags fail fast.
  void parse_arguments() {
    report_html_.parse();
    model_explorer_.parse();
    if (!model_type_.empty() && model_type_ != "onnx")
      raise<InvalidInputError>("--model-type {}: Parity runs ONNX models only (Polygraphy's other model types need "
                               "TensorFlow or TensorRT)",
                               model_type_);
    compute_.apply();
    data_loader_.parse();
    dataset_.parse();
    perf_.parse(*app_, data_loader_);
    exclude_names_ = expand_tensor_entries(onnx_exclude_outputs_, "--onnx-exclude-outputs");
    if (layerwise_worst_ < 1) raise<InvalidInputError>("--layerwise-worst must be at least 1");
    if (!layerwise_memory_.empty())
      layerwise_memory_budget_ = static_cast<uint64_t>(parse_num_bytes(layerwise_memory_, "--layerwise-memory"));
    comparison_.parse();
    pictures_.parse(comparison_);
    report_html_.attach(comparison_);
    int8_.parse();
    reduced_precision_.check(int8_.enabled(), dataset_.given());
    intermediates_ = parse_output_marks(onnx_outputs_, "--onnx-outputs");
    resolve_tensor_entries_in_model();
    excluded_.insert(exclude_names_.begin(), exclude_names_.end());
    runners_.parse();
    if (save_onnx_.empty() && (save_.external_data_requested() || app_->count("--external-data-size-threshold") ||
                               app_->count("--no-save-all-tensors-to-one-file")))
      raise<InvalidInputError>("--save-external-data, --external-data-size-threshold and "
                               "--no-save-all-tensors-to-one-file say how --save-onnx writes the model: give "
                               "--save-onnx PATH");
    // A bad --external-data-size-threshold fails before anything runs.
    if (!save_onnx_.empty() && save_.external_data_requested()) save_.options();
    if (perf_.enabled() && dataset_.given())
      raise<InvalidInputError>("--perf measures the runners over one input feed: leave out --dataset");
    if (perf_.enabled() && (!onnx_outputs_.empty() || use_subprocess_ ||
                            runners_.openvino().outputs().mode != runtime::IntermediateOutputs::Mode::kNone ||
                            runners_.openvino().fused_outputs()))
      raise<InvalidInputError>("--perf measures the runners as they run the model: leave out --onnx-outputs, "
                               "--ov-outputs and --use-subprocess (marked tensors and a subprocess change what is "
                               "timed)");
    if (use_subprocess_ && runners_.openvino().fused_outputs())
      raise<InvalidInputError>("--use-subprocess with --ov-outputs mark fused: the fused layers are known only inside "
                               "the OpenVINO runner's process; leave out one of them");
    // The tensors compared layerwise: --onnx-outputs, else those OpenVINO marks (--ov-outputs).
    // With --ov-outputs mark fused every tensor is compared that OpenVINO's layers write out.
    compared_ = intermediates_.mode != runtime::IntermediateOutputs::Mode::kNone ? intermediates_
                : runners_.openvino().fused_outputs()                          ? runtime::IntermediateOutputs::all()
                                                                                : runners_.openvino().outputs();
    attribution_.check(compared_.mode == runtime::IntermediateOutputs::Mode::kAll, runners_.runner_count(),
                       !comparison_.load_outputs().empty(), comparison_.is_plain_simple());
  }

  // op:, node: and re: entries of --onnx-outputs and --onnx-exclude-outputs, replaced by the tensors
  // they select in the model.
  void resolve_tensor_entries_in_model() {
    const bool list = intermediates_.mode == runtime::IntermediateOutputs::Mode::kList;
    if (!selects_by_graph(exclude_names_) && !(list && selects_by_graph(intermediates_.names))) return;
    if (model_.path().empty())
      raise<InvalidInputError>("--onnx-outputs/--onnx-exclude-outputs: op:, node: and re: entries need a model");
    if (runtime::is_openvino_compiled_file(model_.path()) ||
        std::filesystem::path(model_.path()).extension() == ".ovc")
      raise<InvalidInputError>("{} is a compiled OpenVINO model: --onnx-outputs and --onnx-exclude-outputs need the "
                               "ONNX model",
                               model_.path());
    const auto& graph = model_.load_once(kRunnerLoad)->graph();
    exclude_names_ = resolve_tensor_entries(exclude_names_, graph, "--onnx-exclude-outputs");
    if (list) intermediates_.names = resolve_tensor_entries(intermediates_.names, graph, "--onnx-outputs");
  }

  // --onnx-exclude-outputs, --onnx-outputs and --ov-outputs names must be tensors of the model.
  void check_tensor_names(const onnx::Model& model) const {
    std::vector<std::string> produced;
    for (const auto& node : model->graph().node())
      for (const auto& output : node.output())
        if (!output.empty()) produced.push_back(output);
    std::set<std::string> known(produced.begin(), produced.end());
    for (const auto& output : model->graph().output()) known.insert(output.name());
    for (const auto& name : exclude_names_) {
      if (known.count(name)) continue;
      // The hint looks at produced tensors first, in node order, then the graph outputs.
      std::vector<std::string> candidates = produced;
      for (const auto& output : model->graph().output()) candidates.push_back(output.name());
      auto hint = runtime::closest_name(name, candidates);
      raise<InvalidInputError>("--onnx-exclude-outputs: no node of {} produces a tensor called '{}'{}", model_.path(),
                               name, hint ? fmt::format("; did you mean '{}'?", *hint) : "");
    }
    std::set<std::string> produced_set(produced.begin(), produced.end());
    auto check_list = [&](const runtime::IntermediateOutputs& marks, const char* flag) {
      if (marks.mode != runtime::IntermediateOutputs::Mode::kList) return;
      for (const auto& name : marks.names)
        if (!produced_set.count(name))
          raise<InvalidInputError>("{}: no node of {} produces a tensor called '{}'", flag, model_.path(), name);
    };
    check_list(intermediates_, "--onnx-outputs");
    check_list(runners_.openvino().outputs(), "--ov-outputs");
    check_list(runtime::IntermediateOutputs::list(runners_.openvino().exclude_outputs()), "--ov-exclude-outputs");
  }

  // --gen-script: the same job as a Python script over Parity's Python API (Polygraphy's layout).
  int write_script() {
    parse_arguments();
    GeneratedScript script;
    if (gen_script_ != "-") {
      auto folder = std::filesystem::path(gen_script_).parent_path();
      script.set_folder(folder.empty() ? "." : folder);
    }
    // Two runners compared layerwise over every tensor with plain `simple`, nothing saved: the script
    // streams the comparison (Comparator.run_layerwise) as the command does.
    const bool streamed = intermediates_.mode == runtime::IntermediateOutputs::Mode::kAll && save_outputs_.empty() &&
                          comparison_.is_plain_simple() && runners_.runner_count() == 2 &&
                          comparison_.load_outputs().empty() && !use_subprocess_;
    for (const char* flag :
         {"--report", "--threads", "--shape-inference", "--check", "--save-onnx", "--use-subprocess", "--attribute",
          "--save-heatmaps", "--show-heatmaps", "--save-error-metrics-plot", "--show-error-metrics-plot",
          "--report-html", "--save-model-explorer-overlay",
          "--perf"})
      if (app_->count(flag)) script.cannot_express(flag);
    if (!streamed)
      for (const char* flag : {"--layerwise-worst", "--layerwise-memory"})
        if (app_->count(flag)) script.cannot_express(flag);
    check_model_given();
    if (!model_.path().empty() && (runtime::is_openvino_compiled_file(model_.path()) ||
                                   std::filesystem::path(model_.path()).extension() == ".ovc"))
      script.cannot_express("a compiled OpenVINO model (" + model_.path() + ")");
    if (int8_.enabled()) script.cannot_express("--int8");
    if (reduced_precision_.enabled()) script.cannot_express("--fp-to-fp16/--fp-to-bf16");
    if (!comparison_.load_outputs().empty())
      script.add_summary(
          fmt::format("It will check against outputs stored in {}", fmt::join(comparison_.load_outputs(), ", ")));
    auto run_arguments = data_loader_.add_to_script(script);
    // Streamed, the runners get the model as it is: the comparison reads every tensor they produce.
    RunnerArgs::ScriptModel model{model_.path(), model_.external_data_dir(),
                                  streamed ? runtime::IntermediateOutputs{} : intermediates_,
                                  streamed ? std::vector<std::string>{} : exclude_names_};
    runners_.add_to_script(script, model);
    run_arguments.insert(run_arguments.begin(), "runners");
    script.add_import("parity.comparator", "Comparator");
    if (streamed) {
      script.add_import("parity", "constants");
      run_arguments.push_back("outputs=constants.MARK_ALL");
      if (!exclude_names_.empty())
        run_arguments.push_back("exclude_outputs=" + python_string_list(exclude_names_));
      if (app_->count("--layerwise-memory"))
        run_arguments.push_back(fmt::format("memory_budget={}", layerwise_memory_budget_));
      if (app_->count("--layerwise-worst")) run_arguments.push_back(fmt::format("worst_count={}", layerwise_worst_));
      comparison_.add_layerwise_to_script(script, run_arguments);
      return write_script_text(script);
    }
    script.add_section("Runner Execution",
                       {fmt::format("results = Comparator.run({})", fmt::join(run_arguments, ", "))});
    if (!save_outputs_.empty())
      script.add_section("Save results", {fmt::format("results.save({})", script.path(save_outputs_))});
    const std::size_t results = runners_.runner_count() + comparison_.load_outputs().size();
    comparison_.add_to_script(script, results > 1 || !comparison_.load_outputs().empty());
    return write_script_text(script);
  }

  // The script to --gen-script's path (or standard output), unless a flag cannot be expressed.
  int write_script_text(const GeneratedScript& script) {
    if (!script.inexpressible().empty())
      raise<InvalidInputError>("--gen-script: Parity's Python API cannot express {} yet; run the command itself, or "
                               "generate the script without {} and add {} by hand",
                               fmt::join(script.inexpressible(), ", "),
                               script.inexpressible().size() == 1 ? "that flag" : "those flags",
                               script.inexpressible().size() == 1 ? "it" : "them");
    std::string text = script.text(command_line());
    if (gen_script_ == "-") {
      fmt::print("{}", text);
      std::fflush(stdout);
    } else {
      write_file_atomic(gen_script_, text);
      log::info("Writing script to: {}", gen_script_);
    }
    return 0;
  }

  // Without a model, as in Polygraphy: no runner is a no-op that passes (`run --silent`), a runner is an error,
  // unless every runner loads a model of its own (--torch).
  void check_model_given() const {
    if (model_.path().empty() && runners_.needs_onnx_model())
      raise<InvalidInputError>("One or more runners was specified, but no model file was provided. Make sure you've "
                               "specified the model path, and also that it's not being consumed as an argument for "
                               "another parameter");
  }

  bool execute() {
    parse_arguments();
    check_model_given();
    pictures_.start();
    compare::RunResults loaded;
    for (const auto& path : comparison_.load_outputs()) {
      auto more = compare::load_run_results(path);
      log::info("Loaded {} result(s) from {}", more.size(), path);
      loaded.insert(loaded.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
    // Runners read large weights from the model file when they need them (LoadOptions::lazy_weights);
    // the model is parsed once, by whichever needs it first.
    // A compiled OpenVINO model file (`parity convert --openvino`) instead of an ONNX model.
    const std::string compiled_file = !model_.path().empty() &&
                                              (runtime::is_openvino_compiled_file(model_.path()) ||
                                               std::filesystem::path(model_.path()).extension() == ".ovc")
                                          ? model_.path()
                                          : "";
    if (!compiled_file.empty() && (!onnx_outputs_.empty() || !onnx_exclude_outputs_.empty()))
      raise<InvalidInputError>("{} is a compiled OpenVINO model: --onnx-outputs and --onnx-exclude-outputs need the "
                               "ONNX model",
                               compiled_file);
    if (!save_onnx_.empty()) save_onnx(compiled_file);
    // Runners that load a model of their own get no loader when no model was given.
    runtime::ModelLoader model;
    if (!model_.path().empty()) model = [this] { return model_.load_once(kRunnerLoad); };
    if (dataset_.given())
      return dataset_.run([&] { return runners_.make_runners(model, compiled_file); }, comparison_.compare_func(),
                          comparison_.fail_fast(), comparison_.report());
    auto live = runners_.make_runners(model, compiled_file);
    if (int8_.enabled()) {
      if (!compiled_file.empty())
        raise<InvalidInputError>("{} is a compiled OpenVINO model: --int8 quantizes an ONNX model", compiled_file);
      int8_.quantize_runners_under_test(live, runners_, model_, data_loader_.data_loader());
      attribution_.prepare_batches_with(int8_.qdq_versions(), DType::kUndefined);
    }
    if (reduced_precision_.enabled()) {
      if (!compiled_file.empty())
        raise<InvalidInputError>("{} is a compiled OpenVINO model: --fp-to-fp16/--fp-to-bf16 converts an ONNX model",
                                 compiled_file);
      reduced_precision_.convert_runners_under_test(live, runners_, model_);
      attribution_.prepare_batches_with(reduced_precision_.converter(), reduced_precision_.dtype());
    }
    if (live.empty() && loaded.empty())
      log::warning("No runners were given ({}) and no results loaded; nothing to run or compare",
                   RunnerArgs::runner_flags());
    if (!live.empty() && (!excluded_.empty() || compared_.mode == runtime::IntermediateOutputs::Mode::kList ||
                          !runners_.openvino().exclude_outputs().empty()))
      check_tensor_names(model_.load_once(kRunnerLoad));

    // The order of results: live runners, then loaded ones (Polygraphy: results.extend(load)).
    std::vector<runtime::Runner*> runners;
    for (auto& runner : live) runners.push_back(runner.get());
    std::vector<compare::PerfResult> perf;
    auto options = judge_options(live);
    if (perf_.enabled()) {
      // Performance mode: the runners' untimed outputs are judged as held results.
      compare::PerfOptions perf_options = perf_.options();
      perf_options.on_feeds = options.on_feeds;
      auto measured = compare::measure_performance(runners, data_loader_.data_loader(), perf_options);
      perf = std::move(measured.perf);
      if (options.on_results) options.on_results(measured.results);
      options.on_results = nullptr;
      measured.results.insert(measured.results.end(), std::make_move_iterator(loaded.begin()),
                              std::make_move_iterator(loaded.end()));
      loaded = std::move(measured.results);
      runners.clear();
    }
    compare::Judge judge(runners, std::move(loaded), std::move(options));
    if (app_->count("--layerwise-memory") && !(judge.streamed() && live.size() == 2))
      log::warning("--layerwise-memory has no effect here: only two live runners compared layerwise tensor by tensor "
                   "(--onnx-outputs, `simple`, nothing saved) keep the first one's tensors waiting for their twins");
    auto verdict = judge.run(data_loader_.data_loader());
    if (attribution_.requested())
      attribution_.attribute(model, *live.front(), *live.back(), verdict,
                             comparison_.simple_options(), layerwise_memory_budget_,
                             static_cast<std::size_t>(layerwise_worst_));
    if (!comparison_.report().empty()) {
      auto report = verdict.report(static_cast<std::size_t>(layerwise_worst_));
      attribution_.add_to_report(report);
      if (perf_.enabled()) report["perf"] = compare::perf_report(perf);
      compare::save_report(comparison_.report(), report);
      log::info("Saved report to {}", comparison_.report());
    }
    report_html_.add_attribution(attribution_.result(), static_cast<std::size_t>(layerwise_worst_));
    report_html_.write(command_line(), verdict, static_cast<std::size_t>(layerwise_worst_));
    model_explorer_.write(verdict);
    return verdict.passed;
  }

  // What `run` compares and how, for the judge.
  compare::JudgeOptions judge_options(const std::vector<std::unique_ptr<runtime::Runner>>& live) {
    compare::JudgeOptions options;
    options.tensors = compared_;
    options.exclude = excluded_;
    if (!model_.path().empty()) options.model = [this] { return model_.load_once(kRunnerLoad); };
    options.compare_func = comparison_.compare_func();
    if (comparison_.is_plain_simple()) {
      options.streamable_simple = comparison_.simple_options();
      // Each tensor's statistics are logged as it is compared; only the JSON report reads them later.
      options.streamable_simple->keep_summaries = !comparison_.report().empty();
    }
    options.postprocess = comparison_.postprocess_rules();
    options.comparisons = [this](const compare::RunResults& results) { return comparison_.comparisons(results); };
    options.fail_fast = comparison_.fail_fast();
    if (comparison_.validate()) options.validate = comparison_.validate_options();
    options.warm_up = data_loader_.warm_up();
    options.memory_budget = layerwise_memory_budget_;
    options.worst_count = static_cast<std::size_t>(layerwise_worst_);
    options.use_subprocess = use_subprocess_;
    options.on_feeds = [this](const std::vector<NamedTensors>& feeds) {
      data_loader_.save_inputs(feeds);
      attribution_.keep_feeds(feeds);
    };
    if (!save_outputs_.empty())
      options.on_results = [this](const compare::RunResults& results) {
        compare::save_run_results(save_outputs_, results);
        log::info("Saving inference results to {}", save_outputs_);
      };
    options.describe_layers = [&live](std::vector<compare::LayerwiseResult>& results) {
      annotate_fused_layers(live, results);
    };
    return options;
  }

  // --save-onnx: the model as the runners get it (shape-inferred with --shape-inference), its graph
  // outputs those the run compares, saved before anything runs (atomically: no partial file).
  void save_onnx(const std::string& compiled_file) {
    if (model_.path().empty()) raise<InvalidInputError>("--save-onnx {}: no model was given", save_onnx_);
    if (!compiled_file.empty())
      raise<InvalidInputError>("--save-onnx: {} is a compiled OpenVINO model, not an ONNX model", compiled_file);
    const onnx::Model& loaded = model_.load_once(kRunnerLoad);
    check_tensor_names(loaded);
    onnx::Model model = loaded;
    model.proto = std::make_shared<::onnx::ModelProto>(*loaded.proto);  // the runners' copy stays as it is
    mark_graph_outputs(*model.proto, intermediates_, excluded_);
    save_.save(model, save_onnx_);
  }

  // --ov-outputs mark fused: each compared tensor names the OpenVINO layer that wrote it and the
  // ONNX nodes that layer covers (in the first divergence and the JSON report).
  static void annotate_fused_layers(const std::vector<std::unique_ptr<runtime::Runner>>& live,
                                    std::vector<compare::LayerwiseResult>& results) {
    for (const auto& runner : live)
      for (auto& result : results) {
        if (result.runner0 != runner->name() && result.runner1 != runner->name()) continue;
        for (auto& entry : result.entries)
          if (auto layer = runner->engine_layer(entry.tensor)) entry.engine_layer = std::move(*layer);
      }
  }

  ModelArgs model_;
  RunnerArgs runners_;
  Int8Args int8_;
  ReducedPrecisionRunArgs reduced_precision_;
  DataLoaderArgs data_loader_;
  DatasetArgs dataset_;
  ComparisonArgs comparison_;
  PictureArgs pictures_;
  ReportHtmlArgs report_html_;
  ModelExplorerArgs model_explorer_;
  ThreadArgs compute_;
  AttributionArgs attribution_;
  PerfArgs perf_;
  std::vector<std::string> onnx_outputs_, onnx_exclude_outputs_;
  int layerwise_worst_ = 10;
  std::string layerwise_memory_;                                          // --layerwise-memory as given
  uint64_t layerwise_memory_budget_ = compare::LayerwiseRunOptions{}.memory_budget;  // parsed
  std::string save_outputs_;
  std::string save_onnx_;
  bool use_subprocess_ = false;
  ModelSaveArgs save_;
  std::string gen_script_;
  CLI::App* app_ = nullptr;
  std::string model_type_;

  // Parsed.
  std::vector<std::string> exclude_names_;  // --onnx-exclude-outputs, as tensor names
  std::set<std::string> excluded_;
  runtime::IntermediateOutputs intermediates_;
  runtime::IntermediateOutputs compared_;
};

PARITY_REGISTER_COMMAND(RunCommand);

}  // namespace
}  // namespace parity::cli
