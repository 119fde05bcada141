#include "args/output_marks.h"

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/onnx/modify_outputs.h"

namespace parity::cli {

runtime::IntermediateOutputs parse_output_marks(const std::vector<std::string>& args, const std::string& flag) {
  if (args.empty()) return runtime::IntermediateOutputs::none();
  if (args.size() == 2 && args[0] == "mark" && args[1] == "all") return runtime::IntermediateOutputs::all();
  std::vector<std::string> names;
  for (const auto& arg : args) {
    if (arg == "mark" || arg == "all")
      raise<InvalidInputError>("{}: use 'mark all' (two words, alone) to mark every tensor", flag);
    if (!arg.starts_with("@")) {
      names.push_back(arg);
      continue;
    }
    std::string text = read_file(arg.substr(1));
    std::size_t pos = 0;
    while (pos < text.size()) {
      auto end = text.find('\n', pos);
      std::string line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      line.erase(0, line.find_first_not_of(" \t\r"));
      line.erase(line.find_last_not_of(" \t\r") + 1);
      if (!line.empty() && line[0] != '#') names.push_back(line);
      if (end == std::string::npos) break;
      pos = end + 1;
    }
  }
  return runtime::IntermediateOutputs::list(std::move(names));
}

void mark_graph_outputs(::onnx::ModelProto& model, const runtime::IntermediateOutputs& marks,
                        const std::set<std::string>& exclude) {
  ::onnx::GraphProto& graph = *model.mutable_graph();
  std::vector<std::string> names;
  // "mark all" in Polygraphy's order (node outputs, Constants' left out), then the graph outputs;
  // a list: the graph outputs, then the listed tensors. onnx::mark_outputs keeps each name once.
  if (marks.mode == runtime::IntermediateOutputs::Mode::kAll) names = onnx::markable_tensor_names(graph);
  for (const auto& output : graph.output()) names.push_back(output.name());
  if (marks.mode == runtime::IntermediateOutputs::Mode::kList)
    names.insert(names.end(), marks.names.begin(), marks.names.end());
  std::erase_if(names, [&](const std::string& name) { return exclude.count(name) > 0; });
  with_context("--onnx-outputs", [&] { onnx::mark_outputs(graph, names); });
}

}  // namespace parity::cli

namespace parity::cli {

void SavedOutputsArgs::add_to(CLI::App& app) {
  const char* group = "ONNX Model Loading";
  app.add_option("--" + prefix_ + "outputs", outputs_,
                 "Name(s) of ONNX tensor(s) to mark as output(s), replacing the graph's outputs; 'mark all' marks "
                 "every tensor a node other than Constant computes; @file reads names, one a line")
      ->group(group);
  app.add_option("--" + prefix_ + "exclude-outputs", exclude_outputs_,
                 "Name(s) of ONNX output(s) to unmark as outputs (with 'mark all', the tensors to leave out)")
      ->group(group);
}

void SavedOutputsArgs::apply(onnx::Model& model, const std::string& model_path) const {
  const std::string outputs_flag = "--" + prefix_ + "outputs";
  const std::string exclude_flag = "--" + prefix_ + "exclude-outputs";
  runtime::IntermediateOutputs marks = parse_output_marks(outputs_, outputs_flag);
  auto& graph = *model->mutable_graph();
  with_context(fmt::format("{} ({})", outputs_flag, model_path), [&] {
    if (marks.mode == runtime::IntermediateOutputs::Mode::kAll) {
      log::verbose("Marking all ONNX tensors as outputs");
      onnx::mark_all_outputs(graph);
    } else if (marks.mode == runtime::IntermediateOutputs::Mode::kList) {
      onnx::mark_outputs(graph, marks.names);
    }
  });
  if (!exclude_outputs_.empty())
    with_context(fmt::format("{} ({})", exclude_flag, model_path),
                 [&] { onnx::unmark_outputs(graph, exclude_outputs_); });
}

}  // namespace parity::cli
