// `parity debug precision`: names the ONNX nodes that must stay in float32 when the model is
// converted to float16 or bfloat16. Each candidate is the model converted with a keep list
// (parity/debug/precision_candidate.h), run on the chosen runner and compared with golden outputs
// (a float32 run on the reference runner, made once, or --load-outputs) with run's comparison flags,
// or checked by the user's --check command. The search (parity/debug/precision_search.h) bisects
// or walks the nodes in topological order, then narrows the kept set; the answer is node names,
// saved as a `convert --keep-fp32 @FILE` list and, with -o, the converted model.
//
// OpenVINO's CPU precision hint is global (per-node pinning is not honoured) and under f32 it
// computes a float16/bfloat16 ONNX graph in f32, so no keep list changes what it computes: there
// each candidate is the float32 model cut into subgraphs run by OpenVINO at f32 (the kept nodes) and
// at bf16/f16 (the rest), tensors handed across (parity/debug/precision_split.h). The speed cost is
// each candidate's median latency on the runner under test (parity/debug/candidate_latency.h).
// With --int8 the candidates are the int8 (Q/DQ) model quantized with one calibration's scales and a
// keep list naming the quantized nodes left in float32 (parity/debug/int8_candidate.h).
// The search, its outcome, the report, the keep list file and the latencies are the library's
// (parity/debug/precision_debug.h): this command turns its flags into options.
#include <memory>

#include "args/check_args.h"
#include "args/comparison_args.h"
#include "args/thread_args.h"
#include "args/data_loader_args.h"
#include "args/int8_args.h"
#include "args/int8_exclude_args.h"
#include "args/model_args.h"
#include "args/model_save_args.h"
#include "args/runner_args.h"
#include "args/value_parsing.h"
#include "command.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/debug/precision_debug.h"
#include "parity/debug/search_html_report.h"
#include "parity/quantize/qdq_removal.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::cli {
namespace {

class DebugPrecisionCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"debug", "precision"}; }
  std::string description() const override {
    return "Find the ONNX nodes that must stay in float32 for a float16/bfloat16 (or int8) model to pass a check";
  }

  void add_options(CLI::App& app) override {
    model_.add_to(app);
    // ModelArgs' --check (ONNX's checker) gives way to Polygraphy's debug --check (a command).
    app.remove_option(app.get_option("--check"));
    runners_.add_to(app);
    const char* group = "Precision Search";
    auto* fp16 = app.add_flag("--fp16", fp16_, "Search for a float16 model (default)")->group(group);
    auto* bf16 = app.add_flag("--bf16", bf16_, "Search for a bfloat16 model")->group(group)->excludes(fp16);
    int8_.add_to(app,
                 "Search for an int8 (Q/DQ) model: which quantized nodes to leave unquantized (the quantizer's keep "
                 "list). Calibrates once (or reads --calibration-cache), then quantizes each candidate with its keep "
                 "list");
    app.get_option("--int8")->excludes(fp16)->excludes(bf16);
    app.add_option("--mode", mode_,
                   "bisect: find the boundary by bisection, then narrow by bisection again (about k*log2(N) checks "
                   "for k needed nodes); linear: one node more at a time, then drop nodes one at a time")
        ->check(CLI::IsMember({"bisect", "linear"}))
        ->group(group);
    app.add_option("--direction", direction_,
                   "forward: keep a prefix of the topological order in float32 (find the first nodes needed); "
                   "reverse: keep a suffix")
        ->check(CLI::IsMember({"forward", "reverse"}))
        ->group(group);
    app.add_flag("--no-narrow", no_narrow_,
                 "Stop at the boundary: keep the whole prefix (suffix) found, without narrowing it to the nodes "
                 "needed")
        ->group(group);
    app.add_option("--max-iterations", max_iterations_,
                   "Stop after this many checks with the smallest passing set found so far (0: no limit)")
        ->group(group);
    app.add_option("--keep-fp32", keep_fp32_,
                   "Entries always kept in float32, as convert's --keep-fp32 (op types, node names, re:PATTERN, "
                   "@FILE); the search chooses among the other nodes")
        ->group(group);
    app.add_flag("--no-default-keep", no_default_keep_,
                 "Do not keep convert's default op types in float32: the search may choose them too")
        ->group(group);
    checks_.add_to(app,
                   "Judge each candidate with a command instead of a runner (every argument after --check is the "
                   "command's, so --check goes last): the candidate model is written to --iter-artifact first; "
                   "exit status 0 passes, as --fail-code, --ignore-fail-code and --fail-regex refine");
    app.add_option("--iter-artifact", iter_artifact_,
                   "With --check: where each candidate model is written (default: polygraphy_debug.onnx)")
        ->group(group);
    app.add_option("--latency-runs", latency_runs_,
                   "Inferences (after one warm-up) whose median latency is reported for the model with no node kept, "
                   "with the nodes found kept, and with every searched node kept (0: do not measure; not with --check)")
        ->group(group);
    app.add_option("--save-keep-list", save_keep_list_,
                   "Save the nodes found as a keep list file for `convert --keep-fp32 @FILE`")
        ->group("Output");
    app.add_option("-o,--output", output_, "Save the model converted with the nodes found kept in float32")
        ->group("Output");
    exclude_.add_to(app);
    save_.add_to(app);  // for -o; --iter-artifact candidates stay self-contained
    data_loader_.add_to(app);
    comparison_.add_to(app);
    // Each candidate is compared with the golden outputs: there is no other pair to choose.
    app.remove_option(app.get_option("--compare-to"));
    compute_.add_to(app);
    app.add_option("--report-html", report_html_,
                   "Write the search as one self-contained HTML page (no network requests): each step's candidate, "
                   "verdict and error, and the answer (docs/pictures.md)")
        ->group("Output");
  }

  int run() override {
    return run_with_verdict([this] {
      if (report_html_.empty()) return execute();
      debug::check_html_report_path(report_html_, "--report-html");
      try {
        return execute();
      } catch (const std::exception& error) {
        debug::save_search_html_failure(report_html_, "debug precision", command_line(), error.what());
        log::info("Saved HTML report to {}", report_html_);
        throw;
      }
    });
  }

 private:
  void parse_arguments() {
    compute_.apply();
    data_loader_.parse();
    comparison_.parse();
    runners_.parse();
    runners_.refuse_runners_without_onnx_model("debug precision");
    int8_.parse();
    exclude_.parse(int8_.enabled());
    if (int8_.enabled() && no_default_keep_)
      raise<InvalidInputError>("--no-default-keep applies to float16/bfloat16: --int8 has no default keep list (the "
                               "quantizer quantizes its op types, docs/int8.md)");
    if (max_iterations_ < 0) raise<InvalidInputError>("--max-iterations must be >= 0");
    if (latency_runs_ < 0) raise<InvalidInputError>("--latency-runs must be >= 0");
    auto runners = runners_.make_runners([]() -> onnx::Model { raise<Error>("not activated"); });
    checks_.parse(/*required=*/false);
    if (checks_.given()) {
      if (!runners.empty())
        raise<InvalidInputError>("--check judges the candidates itself: give it or a runner ({}), not both",
                                 RunnerArgs::runner_flags());
      if (!comparison_.load_outputs().empty())
        raise<InvalidInputError>("--load-outputs gives golden outputs for a runner's candidates; --check has none");
    } else {
      if (runners.size() != 1)
        raise<InvalidInputError>("debug precision runs each candidate on one runner: give exactly one of {} (got {}), "
                                 "or --check COMMAND",
                                 RunnerArgs::runner_flags(), runners.size());
      if (checks_.fail_options_given() || !iter_artifact_.empty())
        raise<InvalidInputError>("--fail-code, --ignore-fail-code, --fail-regex and --iter-artifact apply to a --check "
                                 "command only");
      // Q/DQ nodes are in the graph, which every runner follows: no split for int8.
      split_ = !int8_.enabled() && !runners[0]->precision_follows_model();
    }
    if (split_) check_split_arguments();
    if (iter_artifact_.empty()) iter_artifact_ = "polygraphy_debug.onnx";
    options_.precision = bf16_ ? onnx::ReducedPrecision::kBFloat16 : onnx::ReducedPrecision::kFloat16;
    options_.keep_fp32 = keep_fp32_;
    options_.default_keep = !no_default_keep_;
  }

  // OpenVINO: the split mechanism sets the precision hint of each side itself, keeps no default op
  // types (OpenVINO decides what its bf16 mode computes in f32) and has no single fixed model.
  void check_split_arguments() const {
    const auto openvino = runners_.openvino().options();
    if (openvino.precision)
      raise<InvalidInputError>("--ov-precision {}: debug precision sets OpenVINO's precision itself (f32 for the nodes "
                               "kept, {} for the rest); leave it out",
                               *openvino.precision, bf16_ ? "bf16 (--bf16)" : "f16 (--fp16)");
    if (openvino.outputs.mode != runtime::IntermediateOutputs::Mode::kNone || !openvino.compiled_file.empty())
      raise<InvalidInputError>("--ov-outputs and a compiled OpenVINO model do not apply to debug precision, which cuts "
                               "the ONNX model into subgraphs");
    if (no_default_keep_)
      raise<InvalidInputError>("--no-default-keep applies to the graph mechanism (--ref, --onnxrt, --check): on "
                               "--openvino no op type is kept by default, OpenVINO's bf16 mode decides");
    if (!output_.empty())
      raise<InvalidInputError>("-o: on --openvino the answer is a cut of the model into subgraphs run at different "
                               "precisions, not one model; use --save-keep-list and --report (its segments)");
  }

  // OpenVINO's precision on the lower-precision side: a CPU that cannot infer in it gets f32 instead.
  std::string low_openvino_precision() const { return bf16_ ? "bf16" : "f16"; }

  runtime::OpenvinoOptions openvino_options(bool high_precision) const {
    runtime::OpenvinoOptions options = runners_.openvino().options();
    options.precision = high_precision ? "f32" : low_openvino_precision();
    return options;
  }

  // A runner that cannot change precision has nothing to search: OpenVINO asked for bf16/f16 on a
  // CPU without it would infer in another precision, which the runner refuses at activation.
  void check_openvino_changes_precision(const onnx::Model& model) const {
    runtime::OpenvinoRunner probe([model] { return model; }, openvino_options(/*high_precision=*/false));
    runtime::ActiveRunner active(probe);
  }

  bool execute() {
    parse_arguments();
    onnx::Model model = model_.load();
    if (!model_.shape_inference())
      log::warning("--no-shape-inference: the types of intermediate tensors are unknown, so Casts may be missing");
    debug::PrecisionDebugOptions options;
    options.model_name = model_.path();
    options.conversion = options_;
    options.search.mode = mode_ == "linear" ? debug::SearchMode::kLinear : debug::SearchMode::kBisect;
    options.search.direction =
        direction_ == "reverse" ? debug::SearchDirection::kReverse : debug::SearchDirection::kForward;
    options.search.narrow = !no_narrow_;
    options.search.max_iterations = max_iterations_;
    if (int8_.enabled()) {
      if (int8_.recalibrate()) quantize::remove_qdq(model);
      // The one calibration: the model quantized with --keep-fp32 alone gives every scale a candidate needs.
      onnx::Model calibrated{std::make_shared<::onnx::ModelProto>(*model.proto), model.path, model.base_dir};
      auto quantized = int8_.quantize(calibrated, keep_fp32_, data_loader_.feed_stream());
      options.int8 = debug::int8_candidates(model, keep_fp32_, std::move(quantized.scales));
      options.ort_exclude_path = exclude_.ort_path();
      options.modelopt_exclude_path = exclude_.modelopt_path();
    }
    if (checks_.given()) {
      options.command = debug::CandidateCommand{iter_artifact_,
                                                [this](int check) { return checks_.run_check(check); },
                                                checks_.artifact_sorter(), checks_.fail_options_given()};
    } else if (split_) {
      options.make_split_runner = [this](runtime::ModelLoader part,
                                         bool high_precision) -> std::unique_ptr<runtime::Runner> {
        return std::make_unique<runtime::OpenvinoRunner>(std::move(part), openvino_options(high_precision));
      };
      options.split_low_precision = low_openvino_precision();
      options.check_split_runner = [this](const onnx::Model& fp32) { check_openvino_changes_precision(fp32); };
    } else {
      options.make_runner = [this](onnx::Model candidate) {
        auto runners = runners_.make_runners([candidate] { return candidate; });
        return std::move(runners.at(0));
      };
    }
    options.load_outputs = comparison_.load_outputs();
    options.data_loader = data_loader_.data_loader();
    options.golden.compare_func = comparison_.compare_func();
    options.golden.postprocess = comparison_.postprocess_rules();
    options.golden.validate = comparison_.validate();
    options.golden.fail_fast = comparison_.fail_fast();
    options.golden.warm_up = data_loader_.warm_up();
    options.latency_runs = latency_runs_;
    options.keep_list_path = save_keep_list_;
    options.output_path = output_;
    options.save = save_.options();
    options.report_path = comparison_.report();
    options.report_html_path = report_html_;
    options.command_line = command_line();
    return debug::debug_precision(model, options);
  }

  ModelArgs model_;
  ModelSaveArgs save_;
  RunnerArgs runners_;
  DataLoaderArgs data_loader_;
  ComparisonArgs comparison_;
  ThreadArgs compute_;
  Int8Args int8_;
  Int8ExcludeArgs exclude_;
  bool fp16_ = false, bf16_ = false, no_narrow_ = false, no_default_keep_ = false;
  std::string mode_ = "bisect", direction_ = "forward";
  int max_iterations_ = 0, latency_runs_ = 5;
  std::vector<std::string> keep_fp32_;
  std::string iter_artifact_;
  CheckArgs checks_;
  std::string save_keep_list_, output_, report_html_;

  // Parsed.
  onnx::ReducedPrecisionOptions options_;
  bool split_ = false;
};

PARITY_REGISTER_COMMAND(DebugPrecisionCommand);

}  // namespace
}  // namespace parity::cli
