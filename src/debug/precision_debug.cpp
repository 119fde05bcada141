#include "parity/debug/precision_debug.h"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "parity/debug/search_html_report.h"

#include "parity/compare/accuracy.h"
#include "parity/compare/run_results.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/debug/candidate_latency.h"
#include "parity/debug/precision_candidate.h"
#include "parity/onnx/passes.h"
#include "parity/runtime/ref/ref_runner.h"

namespace parity::debug {
namespace {

class PrecisionDebug {
 public:
  PrecisionDebug(const onnx::Model& model, const PrecisionDebugOptions& options)
      : model_(model),
        options_(options),
        split_(static_cast<bool>(options.make_split_runner)),
        int8_(options.int8.has_value()) {}

  bool run() {
    check_model_is_float32();
    const std::string_view precision = int8_ ? "int8" : onnx::reduced_precision_name(options_.conversion.precision);
    const char* mode = options_.search.mode == SearchMode::kLinear ? "linear" : "bisect";
    const char* direction = options_.search.direction == SearchDirection::kReverse ? "reverse" : "forward";
    if (split_) {
      split_space_ = split_search_space(model_, options_.conversion.keep_fp32);
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
                                 options_.model_name);
      if (options_.check_split_runner) options_.check_split_runner(model_);
      log::info("Searching {} node(s) of {} for those OpenVINO must run at f32 while the rest runs at {} (split: the "
                "model is cut into subgraphs, {} mode, {})",
                nodes_.size(), options_.model_name, options_.split_low_precision, mode, direction);
    } else if (int8_) {
      auto space = int8_search_space(*options_.int8);
      if (!space.unnamed_op_types.empty())
        log::warning("{} quantized node(s) without a name ({}) cannot be named in a keep list: the search leaves them "
                     "quantized; name them in the model to include them",
                     space.unnamed_op_types.size(), fmt::join(space.unnamed_op_types, ", "));
      if (space.nodes.empty())
        raise<InvalidInputError>("{}: no quantized node left to search: the quantizer quantizes none, or --keep-fp32 "
                                 "keeps them all, or they are unnamed",
                                 options_.model_name);
      nodes_ = std::move(space.nodes);
      kept_by_entries_ = std::move(space.kept_by_entries);
      log::info("Searching {} quantized node(s) of {} for those to keep in float32 (unquantized) in the int8 model "
                "({} mode, {})",
                nodes_.size(), options_.model_name, mode, direction);
    } else {
      auto space = precision_search_space(model_, options_.conversion);
      if (!space.unnamed_op_types.empty())
        log::warning("{} node(s) without a name ({}) cannot be named in a keep list: the search leaves them in {}; "
                     "name them in the model to include them",
                     space.unnamed_op_types.size(), fmt::join(space.unnamed_op_types, ", "), precision);
      if (space.nodes.empty())
        raise<InvalidInputError>(
            "{}: no node left to search: every node producing float32 is already kept (by "
            "--keep-fp32{}) or unnamed",
            options_.model_name, options_.conversion.default_keep ? " or the default keep list" : "");
      nodes_ = std::move(space.nodes);
      log::info("Searching {} node(s) of {} for those to keep in float32 in a {} model ({} mode, {})", nodes_.size(),
                options_.model_name, precision, mode, direction);
    }

    auto check = make_check();
    std::vector<PrecisionSearchStep> steps;
    const std::size_t total = nodes_.size();
    auto result = search_precision(total, check, options_.search, [&](const PrecisionSearchStep& step) {
      log::info("Iteration {} (of about {}) | {} | keeping {}/{} node(s) in float32 | {} | {}", step.iteration,
                step.estimated_iterations, step.phase, step.kept_count, total,
                step.verdict.passed ? "PASSED" : "FAILED", step.verdict.detail);
      steps.push_back(step);
    });
    return conclude(result, steps, precision);
  }

 private:
  // Logs and saves the search's outcome.
  bool conclude(const PrecisionSearchResult& result, const std::vector<PrecisionSearchStep>& steps,
                std::string_view precision) {
    const std::size_t total = nodes_.size();
    std::vector<PrecisionNode> kept;
    for (std::size_t index : result.kept) kept.push_back(nodes_[index]);
    using Outcome = PrecisionSearchResult::Outcome;
    if (result.outcome == Outcome::kFailsWithAllKept && steps.back().verdict.error) {
      // Not even the candidate closest to float32 runs: a broken runner or model, not a precision problem.
      raise<Error>("debug precision: with all {} searched node(s) kept in float32, {}", total,
                   steps.back().verdict.detail);
    }
    if (result.outcome == Outcome::kIterationLimit && !result.final_verdict.passed)
      raise<InvalidInputError>("debug precision stopped at --max-iterations {} before any candidate passed; allow at "
                               "least 2 iterations (keep none, keep all)",
                               options_.search.max_iterations);
    if (result.outcome == Outcome::kFailsWithAllKept) {
      log::error("The check fails even with all {} searched node(s) kept in float32 ({}): no keep list can make it "
                 "pass; check the tolerances, the check itself, or whether the difference comes from precision at all",
                 total, steps.back().verdict.detail);
      write_report(result, kept, steps, precision, /*with_segments=*/false);
      return false;
    }
    if (result.outcome == Outcome::kCannotRunReduced) {
      // A runner that cannot run the reduced model at all (ONNX Runtime's CPU build and bfloat16
      // arithmetic): which nodes make it load is not a precision question.
      log::error("The runner cannot run the {} model ({}), while with all {} searched node(s) kept in float32 it "
                 "passes: it cannot change this model's precision, so there is nothing to search. Search on --ref "
                 "(every op in {}), or on a runner that runs {}",
                 precision, result.none_kept.detail, total, precision, precision);
      write_report(result, kept, steps, precision, /*with_segments=*/false);
      return false;
    }
    if (result.outcome == Outcome::kNothingToKeep) {
      log::info("The {} model passes with no node kept in float32 ({}): nothing to keep", precision,
                result.none_kept.detail);
    } else {
      if (result.outcome == Outcome::kIterationLimit)
        log::warning("Stopped at --max-iterations {}: the nodes below pass but may be more than needed",
                     options_.search.max_iterations);
      log_summary(result, kept, precision);
      if (split_) log_cuts(result.kept);
    }
    measure_latencies(result.kept);
    if (!options_.keep_list_path.empty()) save_keep_list(kept, precision);
    if (!options_.output_path.empty()) save_output(kept, precision);
    save_nodes_to_exclude(kept);
    write_report(result, kept, steps, precision, /*with_segments=*/true);
    return true;
  }

  // Refuses a model that is already (partly) float16/bfloat16 (the search converts a float32 model
  // itself) or has nothing in float32 to convert, naming a tensor.
  void check_model_is_float32() const {
    std::string reduced;
    bool has_float32 = false;
    auto look = [&](const std::string& name, int element_type) {
      if (element_type == ::onnx::TensorProto::FLOAT) has_float32 = true;
      if (reduced.empty() &&
          (element_type == ::onnx::TensorProto::FLOAT16 || element_type == ::onnx::TensorProto::BFLOAT16))
        reduced = fmt::format("'{}' is {}", name,
                              element_type == ::onnx::TensorProto::FLOAT16 ? "float16" : "bfloat16");
    };
    const auto& graph = model_->graph();
    for (const auto& tensor : graph.initializer()) look(tensor.name(), tensor.data_type());
    for (const auto* values : {&graph.input(), &graph.output(), &graph.value_info()})
      for (const auto& value : *values)
        if (value.type().has_tensor_type()) look(value.name(), value.type().tensor_type().elem_type());
    if (!reduced.empty())
      raise<InvalidInputError>("{} is already a reduced-precision model ({}): debug precision converts the float32 "
                               "model itself; give it the float32 model",
                               options_.model_name, reduced);
    if (!has_float32)
      raise<InvalidInputError>("{} has no float32 tensor: there is nothing to convert to {}", options_.model_name,
                               int8_ ? "int8" : onnx::reduced_precision_name(options_.conversion.precision));
  }

  std::vector<std::string> names_of(const std::vector<std::size_t>& kept) const {
    std::vector<std::string> names;
    for (std::size_t index : kept) names.push_back(nodes_[index].name);
    return names;
  }

  std::vector<SplitSegment> segments_keeping(const std::vector<std::size_t>& kept) const {
    std::vector<std::size_t> positions;
    for (std::size_t index : kept) positions.push_back(split_positions_[index]);
    return split_segments(model_, split_space_, positions);
  }

  // Graph mechanism: the model converted (int8: quantized) with the named nodes kept in float32.
  onnx::Model candidate_model(const std::vector<std::string>& kept_names) const {
    if (int8_) return quantize_keeping(*options_.int8, kept_names);
    return convert_keeping(model_, options_.conversion, kept_names);
  }

  // The candidate keeping `kept` (positions in `nodes_`) in higher precision, on the runner under test.
  std::unique_ptr<runtime::Runner> candidate_runner(const std::vector<std::size_t>& kept) const {
    if (split_)
      return std::make_unique<SplitPrecisionRunner>(model_, segments_keeping(kept), options_.make_split_runner);
    return options_.make_runner(candidate_model(names_of(kept)));
  }

  CandidateCheck make_check() {
    if (options_.command) {
      return [this](const std::vector<std::size_t>& kept) {
        const CandidateCommand& command = *options_.command;
        onnx::save_model(candidate_model(names_of(kept)), command.artifact);
        const CheckOutcome outcome = command.run(check_count_);
        command.sorter.sort(!outcome.failed, fmt::format("iter{}", ++check_count_));
        return CandidateVerdict{!outcome.failed,
                                fmt::format("the check exited with status {}{}", outcome.exit_code,
                                            command.fail_options_given
                                                ? " (judged with --fail-code/--ignore-fail-code/--fail-regex)"
                                                : ""),
                                false};
      };
    }
    golden_.emplace(make_golden());
    return [this](const std::vector<std::size_t>& kept) {
      std::unique_ptr<runtime::Runner> candidate;
      try {
        candidate = candidate_runner(kept);
      } catch (const Error& error) {
        return CandidateVerdict{false, fmt::format("the candidate could not be made: {}", error.what()), true};
      }
      return golden_->check(*candidate);
    };
  }

  // The golden outputs: loaded, or the float32 model on the reference runner; computed once.
  GoldenCheck make_golden() const {
    std::vector<NamedTensors> feeds = options_.data_loader(onnx::graph_inputs(model_->graph()));
    const auto& load_outputs = options_.load_outputs;
    compare::RunnerResults golden;
    if (!load_outputs.empty()) {
      compare::RunResults loaded;
      for (const auto& path : load_outputs) {
        auto more = compare::load_run_results(path);
        loaded.insert(loaded.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
      }
      if (loaded.size() != 1)
        raise<InvalidInputError>("--load-outputs: debug precision compares with one runner's results, found {} in {}",
                                 loaded.size(), fmt::join(load_outputs, ", "));
      golden = std::move(loaded[0]);
      if (golden.iterations.size() != feeds.size())
        raise<InvalidInputError>("--load-outputs: {} holds {} iteration(s) but the data loader gives {} (--iterations)",
                                 fmt::join(load_outputs, ", "), golden.iterations.size(), feeds.size());
      log::info("Golden outputs: {} ({} iteration(s)) loaded from {}", golden.runner_name, golden.iterations.size(),
                fmt::join(load_outputs, ", "));
    } else {
      const onnx::Model& model = model_;
      runtime::RefRunner reference([model] { return model; });
      log::info("Golden outputs: the float32 model on the reference runner");
      compare::RunOptions run_options;
      golden = compare::Comparator::run({&reference}, compare::data_loader_from(feeds), run_options).at(0);
    }
    return GoldenCheck(std::move(golden), std::move(feeds), options_.golden);
  }

  // Split: the answer as the subgraphs OpenVINO runs, and the tensors handed across each cut.
  void log_cuts(const std::vector<std::size_t>& kept) const {
    const auto segments = segments_keeping(kept);
    log::info("OpenVINO runs {} subgraph(s): {}", segments.size(),
              describe_segments(segments, split_space_, "f32", options_.split_low_precision));
    for (std::size_t index = 1; index < segments.size(); ++index)
      log::info("    cut {} hands across: {}", index, fmt::join(segments[index].inputs, ", "));
  }

  void save_keep_list(const std::vector<PrecisionNode>& kept, std::string_view precision) const {
    const auto& conversion = options_.conversion;
    std::vector<std::string> header{
        fmt::format("Nodes to keep in float32 in {} {} model of {}, found by `parity debug precision`",
                    int8_ ? "an" : "a", precision, options_.model_name),
        int8_ ? fmt::format("Use: parity convert MODEL --int8 --keep-fp32 @{}{} -o OUT.onnx, with the search's "
                            "calibration flags",
                            options_.keep_list_path,
                            options_.int8->keep_fp32.empty() ? "" : " and the search's --keep-fp32 entries")
              : fmt::format("Use: parity convert MODEL --fp-to-{} --keep-fp32 @{}{} -o OUT.onnx",
                            conversion.precision == onnx::ReducedPrecision::kBFloat16 ? "bf16" : "fp16",
                            options_.keep_list_path, conversion.default_keep ? "" : " --no-default-keep")};
    std::vector<PrecisionNode> named;
    for (const auto& node : kept)
      if (node.name.rfind("(unnamed ", 0) != 0) named.push_back(node);
    if (split_) {
      header.insert(header.begin() + 1, fmt::format("On OpenVINO: the nodes run at f32 while the rest runs at {} "
                                                    "(split: the report's segments give the cuts)",
                                                    options_.split_low_precision));
      if (named.size() != kept.size())
        log::warning("{} unnamed node(s) of the answer cannot be named in the keep list; name them in the model",
                     kept.size() - named.size());
    }
    write_file_atomic(options_.keep_list_path, keep_list_file_text(named, header));
    log::info("Saved the keep list ({} node(s)) to {}", named.size(), options_.keep_list_path);
  }

  // int8: the nodes the quantizer must leave unquantized, those found and those --keep-fp32 keeps,
  // as ONNX Runtime's and ModelOpt's nodes_to_exclude.
  void save_nodes_to_exclude(const std::vector<PrecisionNode>& kept) const {
    if (!int8_) return;
    std::vector<PrecisionNode> excluded = kept_by_entries_;
    excluded.insert(excluded.end(), kept.begin(), kept.end());
    if (!options_.ort_exclude_path.empty()) {
      write_file_atomic(options_.ort_exclude_path, ort_nodes_to_exclude_json(excluded));
      log::info("Saved ONNX Runtime's quantize_static nodes_to_exclude ({} node(s)) to {}", excluded.size(),
                options_.ort_exclude_path);
    }
    if (!options_.modelopt_exclude_path.empty()) {
      write_file_atomic(options_.modelopt_exclude_path, modelopt_nodes_to_exclude_json(excluded));
      log::info("Saved ModelOpt's nodes_to_exclude patterns ({} node(s)) to {}", excluded.size(),
                options_.modelopt_exclude_path);
    }
  }

  void save_output(const std::vector<PrecisionNode>& kept, std::string_view precision) const {
    std::vector<std::string> names;
    for (const auto& node : kept) names.push_back(node.name);
    onnx::Model fixed = candidate_model(names);
    // As convert does: the converted model's value types are inferred again.
    auto inference = onnx::infer_shapes(*fixed);
    if (!inference.ok)
      log::warning("ONNX shape inference fails on the {} model.\nNote: error was: {}", precision, inference.error);
    onnx::save_model(fixed, options_.output_path, options_.save);
    log::info("Saved the {} model with {} node(s) kept in float32 to {}", precision, kept.size(),
              options_.output_path);
  }

  // The speed cost: median latency of the candidate with nothing kept, with the answer kept and
  // with every searched node kept, on the runner under test (not for a command: there is no runner).
  void measure_latencies(const std::vector<std::size_t>& kept) {
    const int runs = options_.latency_runs;
    if (options_.command || runs == 0) return;
    const auto& feed = golden_->feeds().at(0);
    std::vector<std::size_t> all(nodes_.size());
    for (std::size_t index = 0; index < all.size(); ++index) all[index] = index;
    try {
      latency_.none_kept = median_latency(*candidate_runner({}), feed, runs);
      latency_.kept = kept.empty() ? latency_.none_kept : median_latency(*candidate_runner(kept), feed, runs);
      latency_.all_kept = median_latency(*candidate_runner(all), feed, runs);
    } catch (const Error& error) {
      log::warning("The latency could not be measured: {}", error.what());
      return;
    }
    latency_.measured = true;
    log::info("Latency (median of {} run(s) after a warm-up, first feed): {:.3f} ms with no node kept, {:.3f} ms with "
              "the {} node(s) found kept ({:+.1f}%), {:.3f} ms with all {} searched node(s) kept",
              runs, latency_.none_kept * 1e3, latency_.kept * 1e3, kept.size(),
              (latency_.kept / latency_.none_kept - 1) * 100, latency_.all_kept * 1e3, nodes_.size());
  }

  void log_summary(const PrecisionSearchResult& result, const std::vector<PrecisionNode>& kept,
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

  // --report-html's page of the search, from the JSON report.
  nlohmann::ordered_json html_view(const nlohmann::ordered_json& report) const {
    const std::string outcome = report["outcome"];
    // A table row of two cells (a braced pair of a string and a value would be read as an object's member).
    auto row = [](const std::string& label, const nlohmann::ordered_json& value) {
      return nlohmann::ordered_json::array({label, value});
    };
    nlohmann::ordered_json kept = nlohmann::ordered_json::array();
    for (const auto& node : report["kept"]) kept.push_back(row(node["name"], node["op_type"]));
    nlohmann::ordered_json tables = nlohmann::ordered_json::array();
    tables.push_back({{"id", "answer"}, {"caption", "Nodes kept in float32"}, {"columns", {"node", "op"}}, {"rows", kept}});
    tables.push_back({{"id", "errors"},
                      {"caption", "Errors"},
                      {"columns", {"", "error"}},
                      {"rows", nlohmann::ordered_json::array({row("with no node kept", report["error_before"]),
                                                              row("with these kept", report["error_after"])})}});
    if (report.contains("latency_ms")) {
      const auto& latency = report["latency_ms"];
      tables.push_back({{"id", "latency"},
                        {"caption", fmt::format("Latency (ms, median of {} runs)", latency["runs"].get<int>())},
                        {"columns", {"", "ms"}},
                        {"rows", nlohmann::ordered_json::array({row("none kept", latency["none_kept"]),
                                                                row("these kept", latency["kept"]),
                                                                row("all kept", latency["all_kept"])})}});
    }
    if (report.contains("segments")) {
      nlohmann::ordered_json rows = nlohmann::ordered_json::array();
      for (const auto& segment : report["segments"])
        rows.push_back({segment["precision"], segment["first_node"], segment["last_node"], segment["node_count"]});
      tables.push_back({{"id", "segments"}, {"caption", "Segments"}, {"columns", {"precision", "first node", "last node", "nodes"}}, {"rows", rows}});
    }
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    for (const auto& step : report["steps"])
      steps.push_back({{"candidate", fmt::format("{}: keep {} node(s) in float32", step["phase"].get<std::string>(),
                                                 step["kept_count"].get<int64_t>())},
                       {"size", step["kept_count"]},
                       {"passed", step["passed"]},
                       {"verdict", step["passed"].get<bool>() ? "PASSED" : "FAILED"},
                       {"detail", step["detail"]}});
    return {{"title", "debug precision"},
            {"command", options_.command_line},
            {"ok", outcome == "found" || outcome == "nothing_to_keep"},
            {"outcome", outcome},
            {"summary", fmt::format("Model {}, {} ({} mechanism): {} node(s) kept in float32 after {} iteration(s).",
                                    report["model"].get<std::string>(), report["precision"].get<std::string>(),
                                    report["mechanism"].get<std::string>(), kept.size(),
                                    report["iterations"].get<int64_t>())},
            {"tables", std::move(tables)},
            {"steps_caption", "Each step of the search"},
            {"size_axis", "nodes kept in float32"},
            {"passed_word", "passed"},
            {"failed_word", "failed"},
            {"steps", std::move(steps)}};
  }

  // `with_segments`: the split's segments are listed (unless every kept candidate failed).
  void write_report(const PrecisionSearchResult& result, const std::vector<PrecisionNode>& kept,
                    const std::vector<PrecisionSearchStep>& steps, std::string_view precision,
                    bool with_segments) const {
    if (options_.report_path.empty() && options_.report_html_path.empty()) return;
    static const char* kOutcomes[] = {"nothing_to_keep", "found", "fails_with_all_kept", "iteration_limit",
                                      "cannot_run_reduced"};
    nlohmann::ordered_json report;
    report["model"] = options_.model_name;
    report["precision"] = precision;
    report["mechanism"] = split_ ? "split" : "graph";
    report["outcome"] = kOutcomes[static_cast<int>(result.outcome)];
    report["iterations"] = result.iterations;
    report["kept"] = nlohmann::ordered_json::array();
    for (const auto& node : kept) report["kept"].push_back({{"name", node.name}, {"op_type", node.op_type}});
    report["error_before"] = result.none_kept.detail;
    report["error_after"] = result.final_verdict.detail;
    if (latency_.measured)
      report["latency_ms"] = {{"runs", options_.latency_runs},
                              {"none_kept", latency_.none_kept * 1e3},
                              {"kept", latency_.kept * 1e3},
                              {"all_kept", latency_.all_kept * 1e3}};
    if (split_ && with_segments && result.outcome != PrecisionSearchResult::Outcome::kFailsWithAllKept) {
      report["segments"] = nlohmann::ordered_json::array();
      for (const auto& segment : segments_keeping(result.kept))
        report["segments"].push_back({{"precision", segment.high_precision ? "f32" : options_.split_low_precision},
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
    if (!options_.report_path.empty()) {
      compare::save_report(options_.report_path, report);
      log::info("Saved report to {}", options_.report_path);
    }
    if (!options_.report_html_path.empty()) {
      save_search_html_report(options_.report_html_path, html_view(report));
      log::info("Saved HTML report to {}", options_.report_html_path);
    }
  }

  const onnx::Model& model_;
  const PrecisionDebugOptions& options_;
  const bool split_;
  const bool int8_;
  std::vector<PrecisionNode> nodes_;  // the nodes searched, in the search's order
  std::vector<PrecisionNode> kept_by_entries_;  // int8: quantizable nodes --keep-fp32 keeps
  SplitSearchSpace split_space_;
  std::vector<std::size_t> split_positions_;  // split: each searched node's position in split_space_
  std::optional<GoldenCheck> golden_;
  int check_count_ = 0;
  struct {
    bool measured = false;
    double none_kept = 0, kept = 0, all_kept = 0;  // seconds
  } latency_;
};

}  // namespace

bool debug_precision(const onnx::Model& fp32, const PrecisionDebugOptions& options) {
  return PrecisionDebug(fp32, options).run();
}

}  // namespace parity::debug
