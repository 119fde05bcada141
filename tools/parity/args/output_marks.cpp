#include "args/output_marks.h"

#include <algorithm>
#include <iterator>
#include <regex>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/onnx/modify_outputs.h"
#include "parity/onnx/passes.h"

namespace parity::cli {

std::vector<std::string> expand_tensor_entries(const std::vector<std::string>& args, const std::string& flag) {
  std::vector<std::string> names;
  for (const auto& arg : args) {
    if (!arg.starts_with("@")) {
      names.push_back(arg);
      continue;
    }
    const std::string path = arg.substr(1);
    std::string text = with_context(flag, [&] { return read_file(path); });
    std::size_t pos = 0;
    while (pos < text.size()) {
      auto end = text.find('\n', pos);
      std::string line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      line.erase(0, line.find_first_not_of(" \t\r"));
      line.erase(line.find_last_not_of(" \t\r") + 1);
      if (line.starts_with("@"))
        raise<InvalidInputError>("{}: {}: a list of tensors cannot include another ('{}')", flag, path, line);
      if (!line.empty() && line[0] != '#') names.push_back(line);
      if (end == std::string::npos) break;
      pos = end + 1;
    }
  }
  return names;
}

runtime::IntermediateOutputs parse_output_marks(const std::vector<std::string>& args, const std::string& flag) {
  if (args.empty()) return runtime::IntermediateOutputs::none();
  if (args.size() == 2 && args[0] == "mark" && args[1] == "all") return runtime::IntermediateOutputs::all();
  for (const auto& arg : args)
    if (arg == "mark" || arg == "all")
      raise<InvalidInputError>("{}: use 'mark all' (two words, alone) to mark every tensor", flag);
  return runtime::IntermediateOutputs::list(expand_tensor_entries(args, flag));
}

namespace {
constexpr std::string_view kGraphPrefixes[] = {"op:", "node:", "re:"};
}  // namespace

bool selects_by_graph(const std::vector<std::string>& entries) {
  return std::any_of(entries.begin(), entries.end(), [](const std::string& entry) {
    return std::any_of(std::begin(kGraphPrefixes), std::end(kGraphPrefixes),
                       [&](std::string_view prefix) { return entry.starts_with(prefix); });
  });
}

std::vector<std::string> resolve_tensor_entries(const std::vector<std::string>& entries,
                                                const ::onnx::GraphProto& graph, const std::string& flag) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  auto add = [&](const std::string& name) {
    if (!name.empty() && seen.insert(name).second) names.push_back(name);
  };
  for (const auto& entry : entries) {
    auto value = [&](std::string_view prefix) {
      std::string text = entry.substr(prefix.size());
      if (text.empty()) raise<InvalidInputError>("{}: empty entry '{}'", flag, entry);
      return text;
    };
    bool found = false;
    if (entry.starts_with("op:")) {
      const std::string op = value("op:");
      for (const auto& node : graph.node())
        if (node.op_type() == op) {
          found = true;
          for (const auto& output : node.output()) add(output);
        }
      if (!found) log::warning("{}: no node has op type '{}'; it selects no tensor", flag, op);
    } else if (entry.starts_with("node:")) {
      const std::string name = value("node:");
      for (const auto& node : graph.node())
        if (node.name() == name) {
          found = true;
          for (const auto& output : node.output()) add(output);
        }
      if (!found) raise<InvalidInputError>("{}: the model has no node called '{}'", flag, name);
    } else if (entry.starts_with("re:")) {
      const std::string text = value("re:");
      std::regex pattern;
      try {
        pattern = std::regex(text, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        raise<InvalidInputError>("{}: invalid regular expression '{}': {}", flag, text, e.what());
      }
      auto consider = [&](const std::string& name) {
        if (!name.empty() && std::regex_search(name, pattern)) found = true, add(name);
      };
      for (const auto& node : graph.node())
        for (const auto& output : node.output()) consider(output);
      for (const auto& output : graph.output()) consider(output.name());
      if (!found) raise<InvalidInputError>("{}: no tensor name matches 're:{}'", flag, text);
    } else {
      add(entry);
    }
  }
  return names;
}

void mark_graph_outputs(::onnx::ModelProto& model, const runtime::IntermediateOutputs& marks,
                        const std::set<std::string>& exclude) {
  ::onnx::GraphProto& graph = *model.mutable_graph();
  std::vector<std::string> names;
  // "mark all" in Polygraphy's order (node outputs, Constants' left out), then the graph outputs no
  // Constant produces (the run compares no Constant's value); a list: the graph outputs, then the
  // listed tensors. onnx::mark_outputs keeps each name once.
  std::set<std::string> constants;
  if (marks.mode == runtime::IntermediateOutputs::Mode::kAll) {
    names = onnx::markable_tensor_names(graph);
    for (const auto& node : graph.node())
      if (onnx::is_constant_node(node)) constants.insert(node.output().begin(), node.output().end());
  }
  for (const auto& output : graph.output())
    if (!constants.count(output.name())) names.push_back(output.name());
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
                 "every tensor a node other than Constant computes; also op:TYPE, node:NAME, re:PATTERN, @file "
                 "(entries one a line)")
      ->group(group);
  app.add_option("--" + prefix_ + "exclude-outputs", exclude_outputs_,
                 "Name(s) of ONNX output(s) to unmark as outputs (with 'mark all', the tensors to leave out); also "
                 "op:TYPE, node:NAME, re:PATTERN, @file (entries one a line)")
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
      onnx::mark_outputs(graph, resolve_tensor_entries(marks.names, graph, outputs_flag));
    }
  });
  if (!exclude_outputs_.empty()) {
    auto excluded = resolve_tensor_entries(expand_tensor_entries(exclude_outputs_, exclude_flag), graph, exclude_flag);
    with_context(fmt::format("{} ({})", exclude_flag, model_path), [&] { onnx::unmark_outputs(graph, excluded); });
  }
}

}  // namespace parity::cli
