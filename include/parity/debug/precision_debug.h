// `debug precision` as a whole: the float32 model checked, the nodes to search chosen (the graph
// mechanism: the nodes the conversion would convert; the split mechanism: the nodes depending on a
// graph input, parity/debug/precision_split.h), each candidate judged (its runner against golden
// outputs, or a check command on the candidate model), the search run with one progress line per
// candidate, and its outcome logged, measured (latency) and saved (keep list file, converted model,
// JSON report). The command only turns flags into PrecisionDebugOptions.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "parity/compare/comparator.h"
#include "parity/debug/artifacts.h"
#include "parity/debug/check_command.h"
#include "parity/debug/golden_check.h"
#include "parity/debug/int8_candidate.h"
#include "parity/debug/precision_search.h"
#include "parity/debug/precision_split.h"
#include "parity/onnx/model.h"
#include "parity/onnx/reduced_precision.h"
#include "parity/runtime/runner.h"

namespace parity::debug {

// Judges candidates with a command: each candidate model is written to `artifact`, then `run`
// (given the 0-based check index) decides; `sorter` sorts the artifacts after each check.
struct CandidateCommand {
  std::string artifact;
  std::function<CheckOutcome(int check)> run;
  ArtifactSorter sorter{{}, {}};
  bool fail_options_given = false;  // --fail-code/--ignore-fail-code/--fail-regex: said in each verdict
};

struct PrecisionDebugOptions {
  std::string model_name;                     // the model in messages and in the report
  onnx::ReducedPrecisionOptions conversion;   // the precision, --keep-fp32 and the default keep list
  PrecisionSearchOptions search;
  // How candidates are judged: exactly one of `make_runner` (graph mechanism: a runner, not
  // activated, for the converted model), `make_split_runner` (split mechanism) and `command`.
  std::function<std::unique_ptr<runtime::Runner>(onnx::Model candidate)> make_runner;
  PrecisionRunnerFactory make_split_runner;
  // Split mechanism: the lower-precision side's name ("bf16", "f16") and a check run before the
  // search that throws when the runner cannot run in it.
  std::string split_low_precision;
  std::function<void(const onnx::Model& fp32)> check_split_runner;
  std::optional<CandidateCommand> command;
  // Set: search which quantized nodes of the int8 (Q/DQ) model to keep in float32, the candidates
  // quantized with these scales (`conversion` is not used; graph mechanism only).
  std::optional<Int8Candidates> int8;
  // int8: the nodes to keep (those found and those --keep-fp32 keeps) as ONNX Runtime's and
  // ModelOpt's nodes_to_exclude lists (int8_candidate.h; empty: not saved).
  std::string ort_exclude_path;
  std::string modelopt_exclude_path;
  // Runners: the golden outputs are loaded from these RunResults files (one runner's, one iteration
  // per feed), or made by the reference runner on the float32 model; the feeds come from `data_loader`.
  std::vector<std::string> load_outputs;
  compare::DataLoaderFunc data_loader;
  GoldenCheckOptions golden;
  int latency_runs = 5;  // runners: the median latency measured over this many runs (0: not measured)
  std::string keep_list_path;  // the keep list file (empty: not saved)
  std::string output_path;     // graph mechanism: the model converted with the answer kept (empty: not saved)
  onnx::SaveOptions save;      // for output_path
  std::string report_path;     // the JSON report (empty: not written)
  std::string report_html_path;  // the report as an HTML page (search_html_report.h; empty: not written)
  std::string command_line;      // the command line, on the HTML page
};

// Runs the search on `fp32` (shape-inferred, float32). Returns whether a keep list was found (or
// none is needed); false, with an error logged, when none can make the check pass. Throws
// InvalidInputError for a model or options it cannot search, Error when even the candidate closest
// to float32 cannot run.
bool debug_precision(const onnx::Model& fp32, const PrecisionDebugOptions& options);

}  // namespace parity::debug
