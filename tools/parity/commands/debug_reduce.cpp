// `parity debug reduce`: shrink a model whose check fails to a small subgraph that still fails
// (Polygraphy's debug reduce). The check is either a command run per candidate (--check, the
// candidate written to --iter-artifact) or, given runner flags instead, an in-process comparison
// of the candidate's outputs between the runners with `run`'s comparison flags. The algorithm is
// the library's (parity/debug/reduce.h); this file parses flags and turns them into the check.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <utility>

#include <fmt/format.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "args/check_args.h"
#include "args/comparison_args.h"
#include "args/data_loader_args.h"
#include "args/model_args.h"
#include "args/model_save_args.h"
#include "args/replay_args.h"
#include "args/runner_args.h"
#include "args/tensor_meta_parse.h"
#include "args/value_parsing.h"
#include "command.h"
#include "parity/compare/judge.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/debug/reduce.h"
#include "parity/debug/search_html_report.h"
#include "parity/onnx/model.h"
#include "parity/onnx/passes.h"
#include "parity/runtime/feed_coercion.h"
#include "parity/runtime/passes/fallback_shape_inference.h"

namespace parity::cli {
namespace {

namespace fs = std::filesystem;

// While alive, info lines of the in-process check (the Comparator's) are hidden unless the user
// asked for verbose output.
class QuietUnlessVerbose {
 public:
  QuietUnlessVerbose() : saved_(Logger::global().severity()) {
    if (saved_ >= Severity::kInfo) Logger::global().set_severity(Severity::kCritical);
  }
  ~QuietUnlessVerbose() { Logger::global().set_severity(saved_); }

 private:
  Severity saved_;
};

class DebugReduceCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"debug", "reduce"}; }
  std::string description() const override {
    return "Reduce a failing ONNX model to the smallest subgraph that still fails (Polygraphy's `debug reduce`)";
  }

  void add_options(CLI::App& app) override {
    model_.add_to(app, /*shape_inference_by_default=*/true, /*checker_flag=*/false);
    const char* group = "Reduction";
    app.add_option("-o,--output", output_, "Path to save the reduced model (still failing)")->group(group);
    app.add_option("--report-html", report_html_,
                   "Write the reduction as one self-contained HTML page (no network requests): each check's "
                   "candidate and verdict, and the reduced model's nodes (docs/pictures.md)")
        ->group(group);
    save_.add_to(app);  // for -o and --min-good; --iter-artifact candidates stay self-contained
    app.add_option("--min-good,--minimal-good", min_good_,
                   "Path to save a model close in size to the reduced model that does not fail (not always found)")
        ->group(group);
    app.add_option("--mode", mode_, "bisect (binary search, default) or linear (one node at a time)")
        ->check(CLI::IsMember({"bisect", "linear"}))
        ->group(group);
    auto* no_inputs = app.add_flag("--no-reduce-inputs", no_reduce_inputs_,
                                   "Do not change the graph inputs: only find the earliest failing outputs")
                          ->group(group);
    app.add_flag("--no-reduce-outputs", no_reduce_outputs_,
                 "Do not change the graph outputs: only find the latest failing inputs")
        ->excludes(no_inputs)
        ->group(group);
    app.add_flag("--reduce-neighbourhood", reduce_neighbourhood_,
                 "Parity's tighter reduction instead of Polygraphy's: the shortest failing prefix of the nodes, then "
                 "the failing node's ancestors alone (its neighbourhood: branches that do not feed it are dropped), "
                 "then the shortest failing suffix. Smaller results on graphs that are not chains, but not the "
                 "models Polygraphy's debug reduce saves")
        ->group(group);
    app.add_flag("--require-failing-model", require_failing_model_,
                 "Refuse (exit 1) when the check passes on the whole model, instead of going on as Polygraphy does "
                 "(a warning, then the smallest failing candidate or the whole model is saved)")
        ->group(group);
    app.add_option("--model-input-shapes,--model-inputs", model_input_shapes_,
                   "Shapes to set on the model's inputs before reducing: name:[dims]")
        ->group(group);
    app.add_flag("--force-fallback-shape-inference", force_fallback_,
                 "Take the dtype and shape of every tensor from one run of the model on the reference runner "
                 "(the data loader's first input, after --model-input-shapes), replacing the model's; ONNX shape "
                 "inference is then not run. Dynamic dims become those of the data")
        ->group("ONNX Model Loading")
        ->excludes("--no-shape-inference");

    checks_.add_to(app,
                   "A command to check each candidate, given last: every argument after it is the command's "
                   "(it reads the candidate from --iter-artifact). Without it, runner flags (--ref, --onnxrt, "
                   "--openvino) compare the candidate's outputs in-process");
    const char* artifacts = "Artifact Sorting";
    app.add_option("--iter-artifact,--intermediate-artifact", iter_artifact_,
                   "Where each candidate is written for the --check command (default polygraphy_debug.onnx, as in "
                   "Polygraphy)")
        ->group(artifacts);
    app.add_flag("--no-remove-intermediate", no_remove_intermediate_,
                 "Keep the last candidate written to --iter-artifact at the end")
        ->group(artifacts);
    replay_.add_to(app, "check");

    runners_.add_to(app);
    data_loader_.add_to(app);
    comparison_.add_to(app);
  }

  int run() override {
    if (report_html_.empty()) return execute();
    debug::check_html_report_path(report_html_, "--report-html");
    try {
      return execute();
    } catch (const std::exception& error) {
      debug::save_search_html_failure(report_html_, "debug reduce", command_line(), error.what());
      log::info("Saved HTML report to {}", report_html_);
      throw;
    }
  }

 private:
  int execute() {
    const auto start = std::chrono::steady_clock::now();
    parse_arguments();
    // As Polygraphy: no ONNX shape inference when the fallback gives the shapes.
    if (force_fallback_) model_.disable_shape_inference();
    // Large weights stay in the model file (LoadOptions::lazy_weights): every candidate refers to them there,
    // so building and checking candidates copies no weights.
    onnx::LoadOptions load_options;
    load_options.lazy_weights = true;
    onnx::Model model = model_.load(load_options);
    return_large_blocks_when_freed();
    refuse_unrelated_min_good(model);
    if (!model_input_shapes_.empty()) {
      onnx::override_input_shapes(*model->mutable_graph(),
                                  parse_input_shapes(model_input_shapes_, "--model-input-shapes"));
      if (!force_fallback_) onnx::infer_shapes(*model);
    }
    onnx::lower_constant_nodes(*model->mutable_graph());

    // The values every candidate's inputs are fed from: the whole model on every sample. The inputs are
    // the graph's (no interpreter is built for them: it would read every weight).
    std::vector<NamedTensors> feeds;
    {
      TensorMetadata metadata = onnx::graph_inputs(model->graph());
      feeds = data_loader_.data_loader()(metadata);
      // As the run loop does: Polygraphy's name matching and dtype casts of loaded inputs.
      for (auto& feed : feeds) {
        runtime::match_feed_names(metadata, feed);
        runtime::coerce_feed_dtypes(metadata, feed);
      }
    }
    if (force_fallback_) {
      if (feeds.empty()) raise<InvalidInputError>("the data loader gave no input for fallback shape inference");
      log::info("Freezing shapes in the model according to values determined by fallback shape inference");
      auto metadata =
          runtime::fallback_shape_inference(model, [&feeds](const TensorMetadata&) { return feeds.front(); });
      runtime::set_shapes_from_metadata(*model->mutable_graph(), metadata);
    }
    log::info("Running the whole model on the reference runner ({} sample(s)) for the values of tensors that "
              "become graph inputs",
              feeds.size());
    values_ = debug::run_full_model(model, feeds);

    debug::ReduceOptions options;
    options.mode = mode_ == "linear" ? debug::ReduceMode::kLinear : debug::ReduceMode::kBisect;
    options.reduce_inputs = !no_reduce_inputs_;
    options.reduce_outputs = !no_reduce_outputs_;
    options.load_replay = replay_.load_path();
    options.save_replay = replay_.save_path();
    options.require_failing_model = require_failing_model_;
    options.reduce_neighbourhood = reduce_neighbourhood_;
    // A --check command feeds only the candidate's graph inputs, as Polygraphy's checks do: the tensors of
    // cut-off branches are frozen with the data loader's values. In-process, every sample feeds them.
    options.freeze_cut_branches = checks_.given();
    options.probe_when_every_check_fails = checks_.given();
    bool warned = false;
    options.on_freeze = [this, &warned](const std::string&) {
      if (warned || !data_loader_.uses_random_data()) return;
      warned = true;
      log::warning("This model includes multiple branches/paths. In order to continue reducing, one branch needs to "
                   "be folded away.\nPlease ensure that you have provided a data loader argument directly to `debug "
                   "reduce` (i.e. prior to `--check`) if your `--check` command is using a non-default data "
                   "loader.\nNot doing so may result in false negatives!");
    };
    debug::FailureCheck check = checks_.given() ? debug::FailureCheck([this](const onnx::Model& candidate, int step) {
      return run_check_command(candidate, step);
    })
                                               : debug::FailureCheck([this](const onnx::Model& candidate, int) {
                                                   return compare_in_process(candidate);
                                                 });
    nlohmann::ordered_json checked = nlohmann::ordered_json::array();  // --report-html's steps
    debug::FailureCheck recorded = [&](const onnx::Model& candidate, int step) {
      const bool fails = check(candidate, step);
      std::vector<std::string> outputs;
      for (const auto& output : candidate->graph().output()) outputs.push_back(output.name());
      checked.push_back({{"candidate", fmt::format("check {}: {} node(s)", step, candidate->graph().node_size())},
                         {"size", candidate->graph().node_size()},
                         {"passed", !fails},
                         {"verdict", fails ? "FAILS" : "passes"},
                         {"detail", fmt::format("graph outputs: {}", fmt::join(outputs, ", "))}});
      return fails;
    };
    debug::ReduceResult result;
    try {
      result = debug::reduce(model, values_, recorded, options);
    } catch (...) {
      remove_iter_artifact();
      throw;
    }
    remove_iter_artifact();
    refuse_broken_check(result);
    report(result);
    if (!report_html_.empty()) save_html_report(result, std::move(checked));
    if (!output_.empty()) {
      suggest_further_reduction(result);
      save_.save(result.reduced, output_);
    }
    if (!min_good_.empty()) {
      if (result.min_good) {
        log::info("Saving the minimal good model ({} node(s)) to: {}", (*result.min_good)->graph().node_size(),
                  min_good_);
        onnx::save_model(*result.min_good, min_good_, save_.options());
      } else if (!result.reduced_fails) {
        log::warning("No candidate failed the check: there is no failing model for a minimal good model to be close "
                     "to, so nothing is saved to {}",
                     min_good_);
      } else {
        log::warning("No candidate passed the check: there is no minimal good model to save to {}", min_good_);
      }
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    log::finish("Reduced {} node(s) to {} in {:.3f}s ({} check(s) run, {} from the replay)", result.original_nodes,
                result.reduced->graph().node_size(), seconds, result.checks_run, result.checks_replayed);
    return 0;
  }

  // Each check reads a candidate's weights into buffers that are freed when it ends (the reference
  // interpreter's, ONNX Runtime's prepacked ones), and the next check's backends compile right after. glibc's
  // adaptive mmap threshold would put such buffers on the heap, whose freed pages stay resident under the next
  // compile (0.2x the model's size on a GPT-2 export); a fixed threshold keeps every block of 1 MiB or more in
  // its own mapping, returned to the system when freed.
  static void return_large_blocks_when_freed() {
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  }

  void parse_arguments() {
    checks_.parse(/*required=*/false);
    if (output_.empty() && min_good_.empty())
      raise<InvalidInputError>("--output (where to write the reduced model) and/or --min-good (where to write a "
                               "reduced model that passes) must be given");
    data_loader_.parse();
    comparison_.parse();
    runners_.parse();
    runners_.refuse_runners_without_onnx_model("debug reduce");
    auto runners = runners_.make_runners([] { return onnx::Model{}; });
    if (checks_.given()) {
      if (!runners.empty())
        raise<InvalidInputError>("give either --check or runner flags ({}) for an in-process comparison, not both",
                                 RunnerArgs::runner_flags());
    } else {
      if (runners.empty())
        raise<InvalidInputError>("no check: give --check <command ...> or runner flags ({}) to compare in-process",
                                 RunnerArgs::runner_flags());
      if (checks_.fail_options_given())
        raise<InvalidInputError>("--fail-code, --ignore-fail-code and --fail-regex apply to a --check command");
    }
  }

  // --min-good is where a passing model is written: a file already there must be a subgraph of the
  // input (an earlier reduction's, say), never a model of the user's that is not, which is refused
  // before any work rather than overwritten.
  void refuse_unrelated_min_good(const onnx::Model& model) const {
    std::error_code error;
    if (min_good_.empty() || !fs::exists(min_good_, error)) return;
    std::set<std::pair<std::string, std::string>> nodes;
    for (const auto& node : model->graph().node()) nodes.emplace(node.name(), node.op_type());
    onnx::Model existing;
    onnx::LoadOptions load_options;
    load_options.lazy_weights = true;  // only the nodes are compared
    try {
      existing = onnx::load_model(min_good_, load_options);
    } catch (const Error& e) {
      raise<InvalidInputError>("--min-good {} exists and is not an ONNX model ({}); refusing to overwrite it with a "
                               "subgraph of {} (give another --min-good path or remove the file)",
                               min_good_, e.what(), model_.path());
    }
    for (const auto& node : existing->graph().node())
      if (!nodes.count({node.name(), node.op_type()}))
        raise<InvalidInputError>("--min-good {} exists and is not a subgraph of {} (its {} is not a node of it); "
                                 "refusing to overwrite it (give another --min-good path or remove the file)",
                                 min_good_, model_.path(), onnx::describe_node(node));
  }

  bool run_check_command(const onnx::Model& candidate, int step) {
    onnx::save_model(candidate, iter_artifact_);
    auto outcome = checks_.run_check(step - 1);
    checks_.artifact_sorter().sort(!outcome.failed, fmt::format("step{}", step));
    failures_.add(outcome, candidate->graph().node_size());
    return outcome.failed;
  }

  // Every check failed with the same exit code and output, the smallest candidate included: when the
  // node checked alone outside the result failed the same way too, the check fails whatever it is given
  // (a missing module, a wrong path) and the "reduction" means nothing; refused. Without that probe
  // (no node outside the result), a warning.
  void refuse_broken_check(const debug::ReduceResult& result) const {
    if (!checks_.given() || !result.every_check_failed || !failures_.all_alike || failures_.count < 2) return;
    std::string output = failures_.output;
    while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
    constexpr std::size_t kShown = 600;
    if (output.size() > kShown) output = "..." + output.substr(output.size() - kShown);
    const std::string how =
        fmt::format("exit code {}, output {}", failures_.exit_code,
                    output.empty() ? std::string("empty") : fmt::format("ending:\n{}", output));
    if (result.outside_node_fails.value_or(false))
      raise<InvalidInputError>("the --check command looks broken: all {} checks failed the same way, the smallest "
                               "candidate ({} node(s)) and {} alone (which the reduction left out) included: {}\n"
                               "Run the command by hand on a candidate (--no-remove-intermediate keeps {}); nothing "
                               "was saved",
                               failures_.count, failures_.smallest, result.outside_node, how, iter_artifact_);
    if (!result.outside_node_fails)
      log::warning("The --check command may be broken: all {} checks failed the same way, the smallest candidate "
                   "({} node(s)) included: {}",
                   failures_.count, failures_.smallest, how);
  }

  // The candidate on every runner, fed from the whole model's values; fails when the comparison
  // (or --validate) fails, or when a runner cannot run it.
  bool compare_in_process(const onnx::Model& candidate) {
    auto feeds = debug::candidate_feeds(candidate, values_);
    bool failed = false;
    try {
      QuietUnlessVerbose quiet;
      auto runners = runners_.make_runners([&candidate] { return candidate; });
      std::vector<runtime::Runner*> pointers;
      for (auto& runner : runners) pointers.push_back(runner.get());
      compare::JudgeOptions options;
      options.compare_func = comparison_.compare_func();
      options.postprocess = comparison_.postprocess_rules();
      options.comparisons = [this](const compare::RunResults& results) { return comparison_.comparisons(results); };
      if (comparison_.validate()) options.validate = comparison_.validate_options();
      failed = !compare::Judge(pointers, {}, std::move(options)).run(compare::data_loader_from(feeds)).passed;
    } catch (const Error& e) {
      log::warning("The candidate could not be run (counted as a failure): {}", e.what());
      failed = true;
    }
    return failed;
  }

  void remove_iter_artifact() const {
    if (!checks_.given() || no_remove_intermediate_) return;
    std::error_code error;
    fs::remove(iter_artifact_, error);
  }

  // --report-html: the reduced model's nodes, the facts of the reduction and each check run.
  void save_html_report(const debug::ReduceResult& result, nlohmann::ordered_json checked) const {
    const auto& graph = result.reduced->graph();
    // Table rows of two cells (a braced pair of a string and a value would be read as an object's member).
    auto row = [](const std::string& label, const nlohmann::ordered_json& value) {
      return nlohmann::ordered_json::array({label, value});
    };
    nlohmann::ordered_json facts = nlohmann::ordered_json::array(
        {row("nodes of the model", result.original_nodes), row("nodes kept", graph.node_size()),
         row("why", result.failing_node.empty() ? std::string("-") : result.failing_node),
         row("graph inputs that were intermediate tensors", fmt::format("{}", fmt::join(result.frozen_inputs, ", "))),
         row("checks run / replayed", fmt::format("{} / {}", result.checks_run, result.checks_replayed))});
    nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
    for (const auto& node : graph.node()) nodes.push_back(row(node.name(), node.op_type()));
    nlohmann::ordered_json tables = nlohmann::ordered_json::array();
    tables.push_back({{"id", "answer"}, {"caption", "Nodes of the reduced model"}, {"columns", {"node", "op"}},
                      {"rows", std::move(nodes)}});
    tables.push_back({{"id", "facts"}, {"caption", "The reduction"}, {"columns", {"", ""}}, {"rows", std::move(facts)}});
    debug::save_search_html_report(
        report_html_,
        {{"title", "debug reduce"},
         {"command", command_line()},
         {"ok", result.reduced_fails},
         {"outcome", result.reduced_fails ? "reduced" : "no candidate failed"},
         {"summary", fmt::format("Reduced {} node(s) to {} that still fail the check{}.", result.original_nodes,
                                 graph.node_size(), result.reduced_fails ? "" : " (no candidate failed: the whole model)")},
         {"tables", std::move(tables)},
         {"steps_caption", "Each check run (replayed outcomes are not listed)"},
         {"size_axis", "nodes in the candidate"},
         {"passed_word", "passes"},
         {"failed_word", "fails the check"},
         {"steps", std::move(checked)}});
    log::info("Saved HTML report to {}", report_html_);
  }

  void report(const debug::ReduceResult& result) const {
    const auto& graph = result.reduced->graph();
    std::string nodes;
    for (const auto& node : graph.node()) nodes += "\n    " + onnx::describe_node(node);
    log::info("Kept {} of {} node(s):{}", graph.node_size(), result.original_nodes, nodes);
    if (!result.failing_node.empty() && reduce_neighbourhood_)
      log::info("Why: {} is the first node (in topological order) whose output makes the check fail{}",
                result.failing_node,
                graph.node_size() > 1 ? "; the other kept nodes are those of its ancestors it still fails with" : "");
    else if (!result.failing_node.empty())
      log::info("Why: marking the outputs of {} as the graph outputs gave the smallest failing candidate{}",
                result.failing_node,
                graph.node_size() > 1 ? "; the other kept nodes are those it needs, after the inputs were marked"
                                      : "");
    if (!result.frozen_initializers.empty())
      log::info("Tensors of cut-off branches frozen into initializers (their values in the data loader's first "
                "input): {}",
                fmt::join(result.frozen_initializers, ", "));
    if (!result.frozen_inputs.empty())
      log::info("Graph inputs that were intermediate tensors{}: {}",
                checks_.given() ? "" : " (fed with the whole model's values)", fmt::join(result.frozen_inputs, ", "));
    std::vector<std::string> outputs;
    for (const auto& output : graph.output()) outputs.push_back(output.name());
    log::info("Graph outputs: {}", fmt::join(outputs, ", "));
    if (!result.reduced_fails)
      log::warning("No candidate failed the check: the reduced model is the whole model ({} node(s)), which PASSES "
                   "the check",
                   graph.node_size());
  }

  // Polygraphy's warning when a bisection kept a quarter of the nodes or more, and the other way Parity has
  // to reduce further.
  void suggest_further_reduction(const debug::ReduceResult& result) const {
    const int kept = result.reduced->graph().node_size();
    if (mode_ != "bisect" || kept <= 1 || !result.reduced_fails ||
        static_cast<double>(kept) / static_cast<double>(result.original_nodes) < 0.25)
      return;
    log::warning("It looks like this model could potentially be reduced further.\nYou may want to reduce {} again "
                 "using --mode=linear. ",
                 output_);
    if (!reduce_neighbourhood_)
      log::info("Parity's --reduce-neighbourhood (the failing node's ancestors alone) may also reduce it further");
  }

  ModelArgs model_;
  ModelSaveArgs save_;
  RunnerArgs runners_;
  DataLoaderArgs data_loader_;
  ComparisonArgs comparison_;
  std::string output_, min_good_, mode_ = "bisect", report_html_;
  bool no_reduce_inputs_ = false, no_reduce_outputs_ = false, require_failing_model_ = false,
       force_fallback_ = false, reduce_neighbourhood_ = false;
  std::vector<std::string> model_input_shapes_;
  CheckArgs checks_;
  std::string iter_artifact_ = "polygraphy_debug.onnx";
  bool no_remove_intermediate_ = false;
  ReplayArgs replay_;

  debug::TensorValues values_;
  // The outcomes of the --check command: whether every one failed with the same exit code and output.
  struct Failures {
    int count = 0, exit_code = 0, smallest = 0;
    std::string output;
    bool all_alike = true;
    void add(const debug::CheckOutcome& outcome, int nodes) {
      if (!outcome.failed) all_alike = false;
      if (count > 0 && (outcome.exit_code != exit_code || outcome.output != output)) all_alike = false;
      if (count == 0) {
        exit_code = outcome.exit_code;
        output = outcome.output;
      }
      smallest = count == 0 ? nodes : std::min(smallest, nodes);
      ++count;
    }
  } failures_;
};

PARITY_REGISTER_COMMAND(DebugReduceCommand);

}  // namespace
}  // namespace parity::cli
