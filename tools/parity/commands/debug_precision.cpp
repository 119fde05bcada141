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
#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "args/check_args.h"
#include "args/comparison_args.h"
#include "args/thread_args.h"
#include "args/data_loader_args.h"
#include "args/model_args.h"
#include "args/model_save_args.h"
#include "args/runner_args.h"
#include "args/value_parsing.h"
#include "command.h"
#include "parity/compare/accuracy.h"
#include "parity/compare/run_results.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/debug/candidate_latency.h"
#include "parity/debug/check_command.h"
#include "parity/debug/golden_check.h"
#include "parity/debug/precision_candidate.h"
#include "parity/debug/precision_search.h"
#include "parity/debug/precision_split.h"
#include "parity/onnx/precision_keep_list.h"
#include "parity/runtime/openvino/openvino_runner.h"
#include "parity/runtime/ref/ref_runner.h"

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
    app.add_option("--latency-runs", latency_runs_,
                   "Inferences (after one warm-up) whose median latency is reported for the model with no node kept, "
                   "with the nodes found kept, and with every searched node kept (0: do not measure; not with --check)")
        ->group(group);
    app.add_option("--save-keep-list", save_keep_list_,
                   "Save the nodes found as a keep list file for `convert --keep-fp32 @FILE`")
        ->group("Output");
    app.add_option("-o,--output", output_, "Save the model converted with the nodes found kept in float32")
        ->group("Output");
    save_.add_to(app);  // for -o; --iter-artifact candidates stay self-contained
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
      split_ = !runners[0]->precision_follows_model();
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
  // CPU without it infers in f32.
  void check_openvino_changes_precision(const onnx::Model& model) const {
    runtime::OpenvinoRunner probe([model] { return model; }, openvino_options(/*high_precision=*/false));
    runtime::ActiveRunner active(probe);
    if (probe.inference_precision() != low_openvino_precision())
      raise<InvalidInputError>("OpenVINO cannot run {} in {} on this CPU: asked for {}, it infers in {}, so a cut "
                               "between {} and f32 cannot be made; nothing to search",
                               model_.path(), low_openvino_precision(), low_openvino_precision(),
                               probe.inference_precision(), low_openvino_precision());
  }

  // The candidate keeping `kept` (positions in `nodes_`) in higher precision, on the runner under test.
  std::unique_ptr<runtime::Runner> candidate_runner(const onnx::Model& model, const std::vector<std::size_t>& kept) {
    if (split_) {
      std::vector<std::size_t> positions;
      for (std::size_t index : kept) positions.push_back(split_positions_[index]);
      return std::make_unique<debug::SplitPrecisionRunner>(
          model, debug::split_segments(model, split_space_, positions),
          [this](runtime::ModelLoader part, bool high_precision) -> std::unique_ptr<runtime::Runner> {
            return std::make_unique<runtime::OpenvinoRunner>(std::move(part), openvino_options(high_precision));
          });
    }
    onnx::Model candidate = debug::convert_keeping(model, options_, names_of(kept));
    auto runners = runners_.make_runners([candidate] { return candidate; });
    return std::move(runners.at(0));
  }

  std::vector<std::string> names_of(const std::vector<std::size_t>& kept) const {
    std::vector<std::string> names;
    for (std::size_t index : kept) names.push_back(nodes_[index].name);
    return names;
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

  debug::CandidateCheck make_check(const onnx::Model& model) {
    if (checks_.given()) {
      return [this, &model](const std::vector<std::size_t>& kept) {
        onnx::save_model(debug::convert_keeping(model, options_, names_of(kept)), iter_artifact_);
        const debug::CheckOutcome outcome = checks_.run_check(check_count_);
        checks_.artifact_sorter().sort(!outcome.failed, fmt::format("iter{}", ++check_count_));
        return debug::CandidateVerdict{!outcome.failed, check_detail(outcome), false};
      };
    }
    golden_.emplace(make_golden(model));
    return [this, &model](const std::vector<std::size_t>& kept) {
      std::unique_ptr<runtime::Runner> candidate;
      try {
        candidate = candidate_runner(model, kept);
      } catch (const Error& error) {
        return debug::CandidateVerdict{false, fmt::format("the candidate could not be made: {}", error.what()), true};
      }
      return golden_->check(*candidate);
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
    const auto precision = onnx::reduced_precision_name(options_.precision);
    if (split_) {
      split_space_ = debug::split_search_space(model, keep_fp32_);
      for (std::size_t position = 0; position < split_space_.nodes.size(); ++position) {
        if (std::find(split_space_.always_kept.begin(), split_space_.always_kept.end(), position) !=
            split_space_.always_kept.end())
          continue;
        split_positions_.push_back(position);
        nodes_.push_back(split_space_.nodes[position]);
      }
      if (nodes_.empty())
        raise<InvalidInputError>("{}: no node left to search: every node depending on a graph input is kept by "
                                 "--keep-fp32",
                                 model_.path());
      check_openvino_changes_precision(model);
      log::info("Searching {} node(s) of {} for those OpenVINO must run at f32 while the rest runs at {} (split: the "
                "model is cut into subgraphs, {} mode, {})",
                nodes_.size(), model_.path(), low_openvino_precision(), mode_, direction_);
    } else {
      auto space = debug::precision_search_space(model, options_);
      if (!space.unnamed_op_types.empty())
        log::warning("{} node(s) without a name ({}) cannot be named in a keep list: the search leaves them in {}; "
                     "name them in the model to include them",
                     space.unnamed_op_types.size(), fmt::join(space.unnamed_op_types, ", "), precision);
      if (space.nodes.empty())
        raise<InvalidInputError>("{}: no node left to search: every node producing float32 is already kept (by "
                                 "--keep-fp32{}) or unnamed",
                                 model_.path(), options_.default_keep ? " or the default keep list" : "");
      nodes_ = std::move(space.nodes);
      log::info("Searching {} node(s) of {} for those to keep in float32 in a {} model ({} mode, {})", nodes_.size(),
                model_.path(), precision, mode_, direction_);
    }

    debug::PrecisionSearchOptions search;
    search.mode = mode_ == "linear" ? debug::SearchMode::kLinear : debug::SearchMode::kBisect;
    search.direction = direction_ == "reverse" ? debug::SearchDirection::kReverse : debug::SearchDirection::kForward;
    search.narrow = !no_narrow_;
    search.max_iterations = max_iterations_;
    auto check = make_check(model);
    std::vector<debug::PrecisionSearchStep> steps;
    const std::size_t total = nodes_.size();
    auto result = debug::search_precision(total, check, search, [&](const debug::PrecisionSearchStep& step) {
      log::info("Iteration {} (of about {}) | {} | keeping {}/{} node(s) in float32 | {} | {}", step.iteration,
                step.estimated_iterations, step.phase, step.kept_count, total,
                step.verdict.passed ? "PASSED" : "FAILED", step.verdict.detail);
      steps.push_back(step);
    });

    std::vector<debug::PrecisionNode> kept;
    for (std::size_t index : result.kept) kept.push_back(nodes_[index]);
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
    if (result.outcome == Outcome::kCannotRunReduced) {
      // A runner that cannot run the reduced model at all (ONNX Runtime's CPU build and bfloat16
      // arithmetic): which nodes make it load is not a precision question.
      log::error("The runner cannot run the {} model ({}), while with all {} searched node(s) kept in float32 it "
                 "passes: it cannot change this model's precision, so there is nothing to search. Search on --ref "
                 "(every op in {}), or on a runner that runs {}",
                 precision, result.none_kept.detail, total, precision, precision);
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
      if (split_) log_cuts(model, result.kept);
    }
    measure_latencies(model, result.kept);
    if (!save_keep_list_.empty()) save_keep_list(kept, precision);
    if (!output_.empty()) {
      std::vector<std::string> names;
      for (const auto& node : kept) names.push_back(node.name);
      onnx::Model fixed = debug::convert_keeping(model, options_, names);
      // As convert does: the converted model's value types are inferred again.
      auto inference = onnx::infer_shapes(*fixed);
      if (!inference.ok)
        log::warning("ONNX shape inference fails on the {} model.\nNote: error was: {}", precision, inference.error);
      onnx::save_model(fixed, output_, save_.options());
      log::info("Saved the {} model with {} node(s) kept in float32 to {}", precision, kept.size(), output_);
    }
    write_report(result, kept, steps, precision, &model);
    return true;
  }

  // Split: the answer as the subgraphs OpenVINO runs, and the tensors handed across each cut.
  void log_cuts(const onnx::Model& model, const std::vector<std::size_t>& kept) const {
    const auto segments = answer_segments(model, kept);
    log::info("OpenVINO runs {} subgraph(s): {}", segments.size(),
              debug::describe_segments(segments, split_space_, "f32", low_openvino_precision()));
    for (std::size_t index = 1; index < segments.size(); ++index)
      log::info("    cut {} hands across: {}", index, fmt::join(segments[index].inputs, ", "));
  }

  std::vector<debug::SplitSegment> answer_segments(const onnx::Model& model,
                                                   const std::vector<std::size_t>& kept) const {
    std::vector<std::size_t> positions;
    for (std::size_t index : kept) positions.push_back(split_positions_[index]);
    return debug::split_segments(model, split_space_, positions);
  }

  void save_keep_list(const std::vector<debug::PrecisionNode>& kept, std::string_view precision) const {
    std::vector<std::string> header{
        fmt::format("Nodes to keep in float32 in a {} model of {}, found by `parity debug precision`", precision,
                    model_.path()),
        fmt::format("Use: parity convert MODEL --fp-to-{} --keep-fp32 @{}{} -o OUT.onnx",
                    options_.precision == onnx::ReducedPrecision::kBFloat16 ? "bf16" : "fp16", save_keep_list_,
                    options_.default_keep ? "" : " --no-default-keep")};
    std::vector<debug::PrecisionNode> named;
    for (const auto& node : kept)
      if (node.name.rfind("(unnamed ", 0) != 0) named.push_back(node);
    if (split_) {
      header.insert(header.begin() + 1, fmt::format("On OpenVINO: the nodes run at f32 while the rest runs at {} "
                                                    "(split: the report's segments give the cuts)",
                                                    low_openvino_precision()));
      if (named.size() != kept.size())
        log::warning("{} unnamed node(s) of the answer cannot be named in the keep list; name them in the model",
                     kept.size() - named.size());
    }
    write_file_atomic(save_keep_list_, debug::keep_list_file_text(named, header));
    log::info("Saved the keep list ({} node(s)) to {}", named.size(), save_keep_list_);
  }

  // The speed cost: median latency of the candidate with nothing kept, with the answer kept and
  // with every searched node kept, on the runner under test (not for --check: there is no runner).
  void measure_latencies(const onnx::Model& model, const std::vector<std::size_t>& kept) {
    if (checks_.given() || latency_runs_ == 0) return;
    const auto& feed = golden_->feeds().at(0);
    std::vector<std::size_t> all(nodes_.size());
    for (std::size_t index = 0; index < all.size(); ++index) all[index] = index;
    try {
      latency_.none_kept = debug::median_latency(*candidate_runner(model, {}), feed, latency_runs_);
      latency_.kept = kept.empty() ? latency_.none_kept
                                   : debug::median_latency(*candidate_runner(model, kept), feed, latency_runs_);
      latency_.all_kept = debug::median_latency(*candidate_runner(model, all), feed, latency_runs_);
    } catch (const Error& error) {
      log::warning("The latency could not be measured: {}", error.what());
      return;
    }
    latency_.measured = true;
    log::info("Latency (median of {} run(s) after a warm-up, first feed): {:.3f} ms with no node kept, {:.3f} ms with "
              "the {} node(s) found kept ({:+.1f}%), {:.3f} ms with all {} searched node(s) kept",
              latency_runs_, latency_.none_kept * 1e3, latency_.kept * 1e3, kept.size(),
              (latency_.kept / latency_.none_kept - 1) * 100, latency_.all_kept * 1e3, nodes_.size());
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
                    const std::vector<debug::PrecisionSearchStep>& steps, std::string_view precision,
                    const onnx::Model* model = nullptr) const {
    if (comparison_.report().empty()) return;
    static const char* kOutcomes[] = {"nothing_to_keep", "found", "fails_with_all_kept", "iteration_limit",
                                      "cannot_run_reduced"};
    nlohmann::ordered_json report;
    report["model"] = model_.path();
    report["precision"] = precision;
    report["mechanism"] = split_ ? "split" : "graph";
    report["outcome"] = kOutcomes[static_cast<int>(result.outcome)];
    report["iterations"] = result.iterations;
    report["kept"] = nlohmann::ordered_json::array();
    for (const auto& node : kept) report["kept"].push_back({{"name", node.name}, {"op_type", node.op_type}});
    report["error_before"] = result.none_kept.detail;
    report["error_after"] = result.final_verdict.detail;
    if (latency_.measured)
      report["latency_ms"] = {{"runs", latency_runs_},
                              {"none_kept", latency_.none_kept * 1e3},
                              {"kept", latency_.kept * 1e3},
                              {"all_kept", latency_.all_kept * 1e3}};
    if (split_ && model && result.outcome != debug::PrecisionSearchResult::Outcome::kFailsWithAllKept) {
      report["segments"] = nlohmann::ordered_json::array();
      for (const auto& segment : answer_segments(*model, result.kept))
        report["segments"].push_back({{"precision", segment.high_precision ? "f32" : low_openvino_precision()},
                                      {"first_node", split_space_.nodes[segment.first].name},
                                      {"last_node", split_space_.nodes[segment.last].name},
                                      {"node_count", segment.last - segment.first + 1},
                                      {"inputs", segment.inputs},
                                      {"outputs", segment.outputs}});
    }
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
  ModelSaveArgs save_;
  RunnerArgs runners_;
  DataLoaderArgs data_loader_;
  ComparisonArgs comparison_;
  ThreadArgs compute_;
  bool fp16_ = false, bf16_ = false, no_narrow_ = false, no_default_keep_ = false;
  std::string mode_ = "bisect", direction_ = "forward";
  int max_iterations_ = 0, latency_runs_ = 5;
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
  bool split_ = false;
  std::vector<debug::PrecisionNode> nodes_;  // the nodes searched, in the search's order
  debug::SplitSearchSpace split_space_;
  std::vector<std::size_t> split_positions_;  // split: each searched node's position in split_space_
  struct {
    bool measured = false;
    double none_kept = 0, kept = 0, all_kept = 0;  // seconds
  } latency_;
};

PARITY_REGISTER_COMMAND(DebugPrecisionCommand);

}  // namespace
}  // namespace parity::cli
