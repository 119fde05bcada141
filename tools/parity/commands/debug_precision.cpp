// `parity debug precision`: names the ONNX nodes that must stay in float32 when the model is
// converted to float16 or bfloat16. Each candidate is the model converted with a keep list
// (parity/debug/precision_candidate.h), run on the chosen runner and compared with golden outputs
// (a float32 run on the reference runner, made once, or --load-outputs) with run's comparison flags,
// or checked by the user's --check command. The search (parity/debug/precision_search.h) bisects
// or walks the nodes in topological order, then narrows the kept set; the answer is node names,
// saved as a `convert --keep-fp32 @FILE` list and, with -o, the converted model.
//
// OpenVINO is refused: its CPU plugin's precision hint is global (per-node pinning is not honoured)
// and under f32 it computes a float16/bfloat16 ONNX graph in f32, so no keep list changes what it
// computes (docs/debug-precision.md).
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "args/check_args.h"
#include "args/comparison_args.h"
#include "args/compute_args.h"
#include "args/data_loader_args.h"
#include "args/model_args.h"
#include "args/runner_args.h"
#include "args/value_parsing.h"
#include "command.h"
#include "parity/compare/accuracy.h"
#include "parity/compare/run_results.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/debug/check_command.h"
#include "parity/debug/golden_check.h"
#include "parity/debug/precision_candidate.h"
#include "parity/debug/precision_search.h"
#include "parity/onnx/precision_keep_list.h"
#include "parity/runtime/openvino_runner.h"
#include "parity/runtime/ref_runner.h"

namespace parity::cli {
namespace {

class DebugPrecisionCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"debug", "precision"}; }
  std::string description() const override {
    return "Find the ONNX nodes that must stay in float32 for a float16/bfloat16 model to pass a check";
  }

  void add_options(CLI::App& app) override {
    model_.add_to(app);
    // ModelArgs' --check (ONNX's checker) gives way to Polygraphy's debug --check (a command).
    app.remove_option(app.get_option("--check"));
    runners_.add_to(app);
    const char* group = "Precision Search";
    auto* fp16 = app.add_flag("--fp16", fp16_, "Search for a float16 model (default)")->group(group);
    app.add_flag("--bf16", bf16_, "Search for a bfloat16 model")->group(group)->excludes(fp16);
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
    app.add_option("--save-keep-list", save_keep_list_,
                   "Save the nodes found as a keep list file for `convert --keep-fp32 @FILE`")
        ->group("Output");
    app.add_option("-o,--output", output_, "Save the model converted with the nodes found kept in float32")
        ->group("Output");
    data_loader_.add_to(app);
    comparison_.add_to(app);
    // Each candidate is compared with the golden outputs: there is no other pair to choose.
    app.remove_option(app.get_option("--compare-to"));
    compute_.add_to(app);
  }

  int run() override {
    return run_with_verdict([this] { return execute(); });
  }

 private:
  void parse_arguments() {
    compute_.apply();
    data_loader_.parse();
    comparison_.parse();
    runners_.parse();
    if (max_iterations_ < 0) raise<InvalidInputError>("--max-iterations must be >= 0");
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
      if (dynamic_cast<const runtime::OpenvinoRunner*>(runners[0].get()))
        raise<InvalidInputError>(
            "debug precision cannot search per node on OpenVINO: its CPU precision hint (--ov-precision) is global "
            "(per-node pinning is not honoured), and under f32 it computes a float16/bfloat16 ONNX graph in f32 (it "
            "folds the graph's Converts), so no keep list changes what it computes. Check OpenVINO globally (parity "
            "run MODEL --ref --openvino --ov-precision bf16), or search the ONNX graph on --ref");
    }
    if (iter_artifact_.empty()) iter_artifact_ = "polygraphy_debug.onnx";
    options_.precision = bf16_ ? onnx::ReducedPrecision::kBFloat16 : onnx::ReducedPrecision::kFloat16;
    options_.keep_fp32 = keep_fp32_;
    options_.default_keep = !no_default_keep_;
  }

  // Refuses a model that is already (partly) float16/bfloat16 (the search converts a float32 model
  // itself) or has nothing in float32 to convert, naming a tensor.
  void check_model_is_float32(const onnx::Model& model) const {
    std::string reduced;
    bool has_float32 = false;
    auto look = [&](const std::string& name, int element_type) {
      if (element_type == ::onnx::TensorProto::FLOAT) has_float32 = true;
      if (reduced.empty() &&
          (element_type == ::onnx::TensorProto::FLOAT16 || element_type == ::onnx::TensorProto::BFLOAT16))
        reduced = fmt::format("'{}' is {}", name,
                              element_type == ::onnx::TensorProto::FLOAT16 ? "float16" : "bfloat16");
    };
    const auto& graph = model->graph();
    for (const auto& tensor : graph.initializer()) look(tensor.name(), tensor.data_type());
    for (const auto* values : {&graph.input(), &graph.output(), &graph.value_info()})
      for (const auto& value : *values)
        if (value.type().has_tensor_type()) look(value.name(), value.type().tensor_type().elem_type());
    if (!reduced.empty())
      raise<InvalidInputError>("{} is already a reduced-precision model ({}): debug precision converts the float32 "
                               "model itself; give it the float32 model",
                               model_.path(), reduced);
    if (!has_float32)
      raise<InvalidInputError>("{} has no float32 tensor: there is nothing to convert to {}", model_.path(),
                               onnx::reduced_precision_name(options_.precision));
  }

  debug::CandidateCheck make_check(const onnx::Model& model, const std::vector<debug::PrecisionNode>& nodes) {
    auto names_of = [&nodes](const std::vector<std::size_t>& kept) {
      std::vector<std::string> names;
      for (std::size_t index : kept) names.push_back(nodes[index].name);
      return names;
    };
    if (checks_.given()) {
      return [this, &model, names_of](const std::vector<std::size_t>& kept) {
        onnx::save_model(debug::convert_keeping(model, options_, names_of(kept)), iter_artifact_);
        const debug::CheckOutcome outcome = checks_.command().run();
        log::verbose("Check command `{}` exited with {}; its output:\n{}", checks_.command().to_string(),
                     outcome.exit_code, outcome.output);
        checks_.artifact_sorter().sort(!outcome.failed, fmt::format("iter{}", ++check_count_));
        return debug::CandidateVerdict{!outcome.failed, check_detail(outcome), false};
      };
    }
    golden_.emplace(make_golden(model));
    return [this, &model, names_of](const std::vector<std::size_t>& kept) {
      onnx::Model candidate = debug::convert_keeping(model, options_, names_of(kept));
      auto runners = runners_.make_runners([candidate] { return candidate; });
      return golden_->check(*runners.at(0));
    };
  }

  // The golden outputs: loaded, or the float32 model on the reference runner; computed once.
  debug::GoldenCheck make_golden(const onnx::Model& model) {
    std::vector<NamedTensors> feeds = data_loader_.data_loader()(onnx::graph_inputs(model->graph()));
    compare::RunnerResults golden;
    if (!comparison_.load_outputs().empty()) {
      compare::RunResults loaded;
      for (const auto& path : comparison_.load_outputs()) {
        auto more = compare::load_run_results(path);
        loaded.insert(loaded.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
      }
      if (loaded.size() != 1)
        raise<InvalidInputError>("--load-outputs: debug precision compares with one runner's results, found {} in {}",
                                 loaded.size(), fmt::join(comparison_.load_outputs(), ", "));
      golden = std::move(loaded[0]);
      if (golden.iterations.size() != feeds.size())
        raise<InvalidInputError>("--load-outputs: {} holds {} iteration(s) but the data loader gives {} (--iterations)",
                                 fmt::join(comparison_.load_outputs(), ", "), golden.iterations.size(), feeds.size());
      log::info("Golden outputs: {} ({} iteration(s)) loaded from {}", golden.runner_name, golden.iterations.size(),
                fmt::join(comparison_.load_outputs(), ", "));
    } else {
      runtime::RefRunner reference([model] { return model; });
      log::info("Golden outputs: the float32 model on the reference runner");
      compare::RunOptions run_options;
      golden = compare::Comparator::run({&reference}, compare::data_loader_from(feeds), run_options).at(0);
    }
    debug::GoldenCheckOptions options;
    options.compare_func = comparison_.compare_func();
    options.postprocess = comparison_.postprocess_rules();
    options.validate = comparison_.validate();
    options.fail_fast = comparison_.fail_fast();
    options.warm_up = data_loader_.warm_up();
    return debug::GoldenCheck(std::move(golden), std::move(feeds), options);
  }

  bool execute() {
    parse_arguments();
    onnx::Model model = model_.load();
    if (!model_.shape_inference())
      log::warning("--no-shape-inference: the types of intermediate tensors are unknown, so Casts may be missing");
    check_model_is_float32(model);
    const auto space = debug::precision_search_space(model, options_);
    const auto precision = onnx::reduced_precision_name(options_.precision);
    if (!space.unnamed_op_types.empty())
      log::warning("{} node(s) without a name ({}) cannot be named in a keep list: the search leaves them in {}; "
                   "name them in the model to include them",
                   space.unnamed_op_types.size(), fmt::join(space.unnamed_op_types, ", "), precision);
    if (space.nodes.empty())
      raise<InvalidInputError>("{}: no node left to search: every node producing float32 is already kept (by "
                               "--keep-fp32{}) or unnamed",
                               model_.path(), options_.default_keep ? " or the default keep list" : "");
    log::info("Searching {} node(s) of {} for those to keep in float32 in a {} model ({} mode, {})", space.nodes.size(),
              model_.path(), precision, mode_, direction_);

    debug::PrecisionSearchOptions search;
    search.mode = mode_ == "linear" ? debug::SearchMode::kLinear : debug::SearchMode::kBisect;
    search.direction = direction_ == "reverse" ? debug::SearchDirection::kReverse : debug::SearchDirection::kForward;
    search.narrow = !no_narrow_;
    search.max_iterations = max_iterations_;
    auto check = make_check(model, space.nodes);
    std::vector<debug::PrecisionSearchStep> steps;
    const std::size_t total = space.nodes.size();
    auto result = debug::search_precision(total, check, search, [&](const debug::PrecisionSearchStep& step) {
      log::info("Iteration {} (of about {}) | {} | keeping {}/{} node(s) in float32 | {} | {}", step.iteration,
                step.estimated_iterations, step.phase, step.kept_count, total,
                step.verdict.passed ? "PASSED" : "FAILED", step.verdict.detail);
      steps.push_back(step);
    });

    std::vector<debug::PrecisionNode> kept;
    for (std::size_t index : result.kept) kept.push_back(space.nodes[index]);
    using Outcome = debug::PrecisionSearchResult::Outcome;
    if (result.outcome == Outcome::kFailsWithAllKept && steps.back().verdict.error) {
      // Not even the candidate closest to float32 runs: a broken runner or model, not a precision problem.
      raise<Error>("debug precision: with all {} searched node(s) kept in float32, {}", total,
                   steps.back().verdict.detail);
    }
    if (result.outcome == Outcome::kIterationLimit && !result.final_verdict.passed)
      raise<InvalidInputError>("debug precision stopped at --max-iterations {} before any candidate passed; allow at "
                               "least 2 iterations (keep none, keep all)",
                               max_iterations_);
    if (result.outcome == Outcome::kFailsWithAllKept) {
      log::error("The check fails even with all {} searched node(s) kept in float32 ({}): no keep list can make it "
                 "pass; check the tolerances, the check itself, or whether the difference comes from precision at all",
                 total, steps.back().verdict.detail);
      write_report(result, kept, steps, precision);
      return false;
    }
    if (result.outcome == Outcome::kNothingToKeep) {
      log::info("The {} model passes with no node kept in float32 ({}): nothing to keep", precision,
                result.none_kept.detail);
    } else {
      if (result.outcome == Outcome::kIterationLimit)
        log::warning("Stopped at --max-iterations {}: the nodes below pass but may be more than needed",
                     max_iterations_);
      log_summary(result, kept, precision);
    }
    if (!save_keep_list_.empty()) {
      std::vector<std::string> header{
          fmt::format("Nodes to keep in float32 in a {} model of {}, found by `parity debug precision`", precision,
                      model_.path()),
          fmt::format("Use: parity convert MODEL --fp-to-{} --keep-fp32 @{}{} -o OUT.onnx",
                      options_.precision == onnx::ReducedPrecision::kBFloat16 ? "bf16" : "fp16", save_keep_list_,
                      options_.default_keep ? "" : " --no-default-keep")};
      write_file_atomic(save_keep_list_, debug::keep_list_file_text(kept, header));
      log::info("Saved the keep list ({} node(s)) to {}", kept.size(), save_keep_list_);
    }
    if (!output_.empty()) {
      std::vector<std::string> names;
      for (const auto& node : kept) names.push_back(node.name);
      onnx::Model fixed = debug::convert_keeping(model, options_, names);
      // As convert does: the converted model's value types are inferred again.
      auto inference = onnx::infer_shapes(*fixed);
      if (!inference.ok)
        log::warning("ONNX shape inference fails on the {} model.\nNote: error was: {}", precision, inference.error);
      onnx::save_model(fixed, output_);
      log::info("Saved the {} model with {} node(s) kept in float32 to {}", precision, kept.size(), output_);
    }
    write_report(result, kept, steps, precision);
    return true;
  }

  void log_summary(const debug::PrecisionSearchResult& result, const std::vector<debug::PrecisionNode>& kept,
                   std::string_view precision) const {
    std::map<std::string, int> by_op_type;
    std::string lines;
    for (const auto& node : kept) {
      ++by_op_type[node.op_type];
      lines += fmt::format("\n    {} ({})", node.name, node.op_type);
    }
    std::vector<std::string> counts;
    for (const auto& [op_type, count] : by_op_type) counts.push_back(fmt::format("{}: {}", op_type, count));
    log::info("Nodes to keep in float32 ({}, found in {} iteration(s)):{}", kept.size(), result.iterations, lines);
    log::info("By op type: {}", fmt::join(counts, ", "));
    log::info("Error with no node kept ({}): {}", precision, result.none_kept.detail);
    log::info("Error with these kept: {}", result.final_verdict.detail);
  }

  void write_report(const debug::PrecisionSearchResult& result, const std::vector<debug::PrecisionNode>& kept,
                    const std::vector<debug::PrecisionSearchStep>& steps, std::string_view precision) const {
    if (comparison_.report().empty()) return;
    static const char* kOutcomes[] = {"nothing_to_keep", "found", "fails_with_all_kept", "iteration_limit"};
    nlohmann::ordered_json report;
    report["model"] = model_.path();
    report["precision"] = precision;
    report["outcome"] = kOutcomes[static_cast<int>(result.outcome)];
    report["iterations"] = result.iterations;
    report["kept"] = nlohmann::ordered_json::array();
    for (const auto& node : kept) report["kept"].push_back({{"name", node.name}, {"op_type", node.op_type}});
    report["error_before"] = result.none_kept.detail;
    report["error_after"] = result.final_verdict.detail;
    report["steps"] = nlohmann::ordered_json::array();
    for (const auto& step : steps)
      report["steps"].push_back({{"iteration", step.iteration},
                                 {"phase", step.phase},
                                 {"kept_count", step.kept_count},
                                 {"passed", step.verdict.passed},
                                 {"detail", step.verdict.detail}});
    compare::save_report(comparison_.report(), report);
    log::info("Saved report to {}", comparison_.report());
  }

  ModelArgs model_;
  RunnerArgs runners_;
  DataLoaderArgs data_loader_;
  ComparisonArgs comparison_;
  ComputeArgs compute_;
  bool fp16_ = false, bf16_ = false, no_narrow_ = false, no_default_keep_ = false;
  std::string mode_ = "bisect", direction_ = "forward";
  int max_iterations_ = 0;
  std::vector<std::string> keep_fp32_;
  std::string check_detail(const debug::CheckOutcome& outcome) const {
    return fmt::format("the check exited with status {}{}", outcome.exit_code,
                       checks_.fail_options_given() ? " (judged with --fail-code/--ignore-fail-code/--fail-regex)" : "");
  }

  std::string iter_artifact_;
  CheckArgs checks_;
  int check_count_ = 0;
  std::string save_keep_list_, output_;

  // Parsed.
  onnx::ReducedPrecisionOptions options_;
  std::optional<debug::GoldenCheck> golden_;
};

PARITY_REGISTER_COMMAND(DebugPrecisionCommand);

}  // namespace
}  // namespace parity::cli
