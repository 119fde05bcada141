#include "args/runner_args.h"

#include <fmt/format.h>

#include "args/generated_script.h"
#include "parity/core/error.h"
#include "parity/runtime/hybrid_runner.h"

namespace parity::cli {
namespace {

// "a", "a or b", "a, b or c" (with `conjunction` "or").
std::string join_alternatives(const std::vector<std::string>& items, const char* conjunction) {
  if (items.size() < 2) return items.empty() ? "" : items[0];
  std::vector<std::string> first(items.begin(), items.end() - 1);
  return fmt::format("{} {} {}", fmt::join(first, ", "), conjunction, items.back());
}

// The names, flags or labels of the registry's backends with `capability`.
template <typename Field>
std::vector<std::string> backends_with(bool runtime::BackendDescriptor::*capability, Field field) {
  std::vector<std::string> values;
  for (const auto& backend : runtime::backends())
    if (backend.*capability) values.push_back(field(backend));
  return values;
}

std::string flag_of(const runtime::BackendDescriptor& backend) { return "--" + backend.name; }
std::string name_of(const runtime::BackendDescriptor& backend) { return backend.name; }
std::string label_of(const runtime::BackendDescriptor& backend) { return backend.label; }

}  // namespace

void RunnerArgs::add_to(CLI::App& app) {
  app_ = &app;
  for (auto& args : make_backend_args()) backends_.push_back({std::move(args)});
  const char* runners = "Runners";
  for (auto& backend : backends_)
    backend.flag = app.add_flag(flag_of(backend.args->descriptor()), backend.count, backend.args->flag_help())
                       ->group(runners);
  const auto primaries = backends_with(&runtime::BackendDescriptor::hybrid_primary, flag_of);
  const auto primary_labels = backends_with(&runtime::BackendDescriptor::hybrid_primary, label_of);
  const auto fallbacks = backends_with(&runtime::BackendDescriptor::hybrid_fallback, name_of);
  app.add_option("--fallback", fallback_,
                 fmt::format("Hybrid run: each {} runner runs the subgraphs {} supports and hands the others "
                             "(as `inspect capability {}` partitions the model) to this runner: {}",
                             join_alternatives(primaries, "or"), join_alternatives(primary_labels, "or"),
                             join_alternatives(primaries, "or"), join_alternatives(fallbacks, "or")))
      ->check(CLI::IsMember(fallbacks))
      ->group(runners);
  for (auto& backend : backends_) backend.args->add_runner_options(app);
}

void RunnerArgs::parse() {
  for (auto& backend : backends_) backend.args->parse_runner_options(backend.count, !fallback_.empty());
  if (fallback_.empty()) return;
  for (const auto& backend : backends_)
    if (backend.count > 0 && backend.args->descriptor().hybrid_primary) return;
  const auto primary = &runtime::BackendDescriptor::hybrid_primary;
  raise<InvalidInputError>("--fallback runs what {} cannot on another runner: give {}",
                           join_alternatives(backends_with(primary, label_of), "or"),
                           join_alternatives(backends_with(primary, flag_of), "or"));
}

int RunnerArgs::runner_count() const {
  int count = 0;
  for (const auto& backend : backends_) count += backend.count;
  return count;
}

void RunnerArgs::refuse_runners_without_onnx_model(const std::string& command) const {
  for (const auto& backend : backends_)
    if (backend.count > 0 && backend.args->descriptor().runs_without_onnx_model)
      raise<InvalidInputError>("{}: --{} runs {}'s own model, whose outputs are the whole model's: it cannot run the "
                               "ONNX models {} makes; compare {} with `run` instead",
                               command, backend.args->descriptor().name, backend.args->descriptor().label, command,
                               backend.args->descriptor().label);
}

bool RunnerArgs::needs_onnx_model() const {
  for (const auto& backend : backends_)
    if (backend.count > 0 && !backend.args->descriptor().runs_without_onnx_model) return true;
  return false;
}

std::string RunnerArgs::runner_flags() {
  std::vector<std::string> flags;
  for (const auto& backend : runtime::backends()) flags.push_back(flag_of(backend));
  return fmt::format("{}", fmt::join(flags, ", "));
}

const RunnerArgs::Backend& RunnerArgs::backend(const std::string& name) const {
  for (const auto& backend : backends_)
    if (backend.args->descriptor().name == name) return backend;
  raise<InternalError>("no runner flags for the backend '{}'", name);
}

const OpenvinoArgs& RunnerArgs::openvino() const {
  // The registry lists OpenvinoArgs as the "openvino" backend's group (args/backend_args.cpp).
  return static_cast<const OpenvinoArgs&>(*backend("openvino").args);
}

std::vector<std::unique_ptr<runtime::Runner>> RunnerArgs::make_runners(const runtime::ModelLoader& model,
                                                                      const std::string& compiled_file) const {
  if (!compiled_file.empty()) {
    const auto compiled = &runtime::BackendDescriptor::runs_compiled_files;
    const auto labels = backends_with(compiled, label_of);
    std::vector<std::string> others;
    bool other_runners = false;
    for (const auto& backend : backends_) {
      if (backend.args->descriptor().runs_compiled_files) continue;
      others.push_back(flag_of(backend.args->descriptor()));
      other_runners = other_runners || backend.count > 0;
    }
    if (other_runners)
      raise<InvalidInputError>("{} is a compiled {} model, which only {} runs; give {} the ONNX model (or compare with "
                               "results saved from it: --load-outputs)",
                               compiled_file, join_alternatives(labels, "or"),
                               join_alternatives(backends_with(compiled, flag_of), "or"),
                               join_alternatives(others, "and"));
    if (!fallback_.empty())
      raise<InvalidInputError>("{} is a compiled {} model; a hybrid run (--fallback) partitions an ONNX model: "
                               "give the ONNX model",
                               compiled_file, join_alternatives(labels, "or"));
  }
  std::vector<std::unique_ptr<runtime::Runner>> runners;
  for (const auto& backend : backends_) backend.args->start_runners();
  for (const CLI::Option* option : app_->parse_order()) {
    for (const auto& backend : backends_) {
      if (option != backend.flag) continue;
      const runtime::BackendDescriptor& descriptor = backend.args->descriptor();
      if (!fallback_.empty() && descriptor.hybrid_primary) {
        const BackendArgs* primary_args = backend.args.get();
        const BackendArgs* fallback_args = this->backend(fallback_).args.get();
        runtime::HybridBackend primary{descriptor.name, [primary_args](const runtime::ModelLoader& loader) {
                                         return primary_args->make_runner(loader, "");
                                       }};
        runtime::HybridBackend fallback{fallback_, [fallback_args](const runtime::ModelLoader& loader) {
                                          return fallback_args->make_runner(loader, "");
                                        }};
        runners.push_back(std::make_unique<runtime::HybridRunner>(model, descriptor.make_support_query,
                                                                  std::move(primary), std::move(fallback)));
      } else {
        runners.push_back(backend.args->make_runner(model, compiled_file));
      }
    }
  }
  return runners;
}

void RunnerArgs::add_to_script(GeneratedScript& script, const ScriptModel& model) const {
  std::vector<std::string> loaders, runners, names;
  const bool edits = model.outputs.mode != runtime::IntermediateOutputs::Mode::kNone || !model.exclude_outputs.empty();
  bool onnx_loader = edits || !model.external_data_dir.empty();
  for (const auto& backend : backends_)
    onnx_loader = onnx_loader || (backend.count > 0 && backend.args->script_reads_onnx_loader());
  // Without a model (runners that load their own), runners get none.
  std::string onnx_model = model.path.empty() ? "" : script.path(model.path);
  if (onnx_loader && !model.path.empty()) {
    script.add_import("parity.backend.onnx", "OnnxFromPath");
    std::string external_data;
    if (!model.external_data_dir.empty())
      external_data = ", external_data_dir=" + script.path(model.external_data_dir);
    loaders.push_back(fmt::format("load_onnx = OnnxFromPath({}{})", onnx_model, external_data));
    onnx_model = "load_onnx";
    if (edits) {
      script.add_import("parity.backend.onnx", "ModifyOutputs as ModifyOnnxOutputs");
      std::vector<std::string> arguments{"load_onnx"};
      if (model.outputs.mode == runtime::IntermediateOutputs::Mode::kAll) {
        script.add_import("parity", "constants");
        arguments.push_back("outputs=constants.MARK_ALL");
      } else if (model.outputs.mode == runtime::IntermediateOutputs::Mode::kList) {
        arguments.push_back("outputs=" + python_string_list(model.outputs.names));
      }
      if (!model.exclude_outputs.empty())
        arguments.push_back("exclude_outputs=" + python_string_list(model.exclude_outputs));
      loaders.push_back(fmt::format("modify_outputs = ModifyOnnxOutputs({})", fmt::join(arguments, ", ")));
      onnx_model = "modify_outputs";
    }
  }
  for (const auto& backend : backends_) {
    backend.args->start_runners();
    backend.args->add_script_loaders(script, onnx_model, onnx_loader, backend.count, loaders);
  }
  for (const CLI::Option* option : app_->parse_order())
    for (const auto& backend : backends_)
      if (option == backend.flag) {
        runners.push_back(backend.args->add_script_runner(script, onnx_model));
        names.push_back(backend.args->script_name());
      }
  const std::string subject = model.path.empty() ? "the model" : model.path;
  if (names.size() == 1) script.add_summary(fmt::format("This script runs {} using {}.", subject, names[0]));
  if (names.size() > 1) {
    std::vector<std::string> first(names.begin(), names.end() - 1);
    script.add_summary(fmt::format("This script compares {} between {} and {}.", subject, fmt::join(first, ", "),
                                   names.back()));
  }
  if (!loaders.empty()) script.add_section("Loaders", loaders);
  if (runners.empty()) {
    script.add_section("Runners", {"runners = []"});
  } else {
    runners.insert(runners.begin(), "runners = [");
    runners.push_back("]");
    script.add_section("Runners", runners);
  }
}

}  // namespace parity::cli
