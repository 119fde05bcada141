// `parity inspect data`: what a Polygraphy/Parity data file holds, as `polygraphy inspect data`:
// for a RunResults file (--save-outputs) each runner's outputs, for an input file (--save-inputs)
// each iteration's inputs; per tensor its name, dtype and shape and Polygraphy's stats line, with
// --histogram its histogram and with --show-values its values as numpy prints them.
#include <algorithm>

#include <fmt/format.h>

#include "command.h"
#include "parity/compare/polygraphy_data_file.h"
#include "parity/core/python_format.h"
#include "parity/statistics/statistics.h"
#include "parity/core/logger.h"
#include "parity/core/tensor_metadata.h"

namespace parity::cli {
namespace {

// Python's util.indent_block: every line of `block` (split as str.splitlines) indented by `level`
// tabs of 4 spaces; a trailing newline is dropped.
std::string indent_block(const std::string& block, int level) {
  std::string tab(static_cast<std::size_t>(level) * 4, ' ');
  std::string out = tab;
  std::size_t start = 0;
  bool first = true;
  while (start < block.size()) {
    std::size_t end = block.find('\n', start);
    if (end == std::string::npos) end = block.size();
    if (!first) out += "\n" + tab;
    out += block.substr(start, end - start);
    first = false;
    start = end + 1;
  }
  return out;
}

std::string strip(const std::string& text) {
  auto space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
  std::size_t b = 0, e = text.size();
  while (b < e && space(text[b])) ++b;
  while (e > b && space(text[e - 1])) --e;
  return text.substr(b, e - b);
}

class InspectDataCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"inspect", "data"}; }
  std::string description() const override {
    return "Display information about inference inputs and outputs saved by `run --save-inputs` or "
           "`run --save-outputs` (Parity or Polygraphy)";
  }
  void add_options(CLI::App& app) override {
    app.add_option("path", path_, "Path to a file containing input or output data")->required();
    app.add_flag("-a,--all", all_,
                 "Show information on all iterations present in the data instead of just the first");
    app.add_flag("-s,--show-values", show_values_, "Show values of the tensors instead of just metadata");
    app.add_flag("--histogram", histogram_, "Show a histogram of the value distribution");
    app.add_option("-n,--num-items", print_options_.edgeitems,
                   "The number of values to show at the beginning and end of each dimension when printing "
                   "arrays. Use a value of -1 to show all elements in the array. Defaults to 3.")
        ->check(CLI::Range(int64_t{-1}, INT64_MAX / 4));
    app.add_option("--line-width", print_options_.linewidth,
                   "The number of characters per line when displaying arrays. Use a value of -1 to insert line "
                   "breaks only at dimension end points. Defaults to 75.")
        ->check(CLI::Range(int64_t{-1}, INT64_MAX / 4));
  }

  int run() override {
    compare::PolygraphyData data = compare::load_polygraphy_data(path_);
    std::string text;
    if (data.is_run_results) {
      text = fmt::format("==== Run Results ({} runners) ====\n\n", data.results.size());
      std::size_t width = 0;
      for (const auto& runner : data.results) width = std::max(width, runner.runner_name.size());
      for (const auto& runner : data.results) {
        text += fmt::format("---- {} ({} iterations) ----\n", pad_right(runner.runner_name, width),
                            runner.iterations.size());
        std::vector<const NamedTensors*> iterations;
        for (const auto& iteration : runner.iterations) iterations.push_back(&iteration.outputs);
        text += str_from_iterations(iterations) + "\n";
      }
    } else {
      text = fmt::format("==== Data ({} iterations) ====\n", data.inputs.size());
      std::vector<const NamedTensors*> iterations;
      for (const auto& iteration : data.inputs) iterations.push_back(&iteration);
      text += str_from_iterations(iterations) + "\n";
    }
    log::info("{}", strip(text));
    return 0;
  }

 private:
  std::string stats_text(const Tensor& tensor) const {
    try {
      auto summary = statistics::summarize(tensor.view());
      return statistics::format_statistics(summary.polygraphy, summary.is_bool);
    } catch (const Error& error) {
      log::verbose("Could not generate statistics.\nNote: Error was: {}", error.what());
      return "<Error while computing statistics>";
    }
  }

  std::string histogram_text(const Tensor& tensor) const {
    if (tensor.dtype() == DType::kBool) return "";
    try {
      return statistics::format_histogram(
          statistics::histogram(tensor.view(), std::nullopt, statistics::StatisticsStyle::kPolygraphy));
    } catch (const Error& error) {
      log::verbose("Could not generate histogram.\nNote: Error was: {}", error.what());
      return "";
    }
  }

  std::string str_from_iterations(const std::vector<const NamedTensors*>& iterations) const {
    std::string out;
    for (std::size_t index = 0; index < iterations.size(); ++index) {
      int indent = 1;
      if (iterations.size() > 1 && all_) {
        out += indent_block(fmt::format("\n-- Iteration: {}\n", index), 0);
        indent = 2;
      }
      for (const auto& [name, tensor] : *iterations[index]) {
        std::vector<Dim> dims;
        for (int64_t d : tensor.shape()) dims.push_back(Dim::fixed(d));
        TensorInfo info{tensor.dtype(), std::move(dims)};
        out += indent_block(fmt::format("\n{} {} | Stats: {}", name, info.to_string(), stats_text(tensor)),
                            indent - 1);
        if (histogram_) out += "\n" + indent_block(histogram_text(tensor), indent);
        if (show_values_) out += "\n" + indent_block(numpy_array_str(tensor.view(), print_options_), indent);
      }
      if (indent == 2) out += "\n";
      if (!all_) break;
    }
    return out;
  }

  std::string path_;
  bool all_ = false, show_values_ = false, histogram_ = false;
  NumpyPrintOptions print_options_;
};

PARITY_REGISTER_COMMAND(InspectDataCommand);

}  // namespace
}  // namespace parity::cli
