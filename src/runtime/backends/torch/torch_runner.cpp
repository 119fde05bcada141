// The PyTorch runner: a Python worker running _torch_model.py's commands (describe, activate, infer),
// the ONNX model's inputs and output names, and the errors a user can act on.
#include "parity/runtime/torch/torch_runner.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/core/process.h"
#include "parity/core/python_interpreter.h"
#include "parity/onnx/model.h"
#include "parity/runtime/python_worker.h"
#include "module_capture_source.h"  // generated from python/parity/backend/pyt/_module_capture.py
#include "torch_model_source.h"  // generated from python/parity/backend/pyt/_torch_model.py
#include "torch_layer_profile_source.h"  // generated from python/parity/backend/pyt/_torch_layer_profile.py
#include "torch_requests_source.h"  // generated from python/parity/backend/pyt/_torch_requests.py

namespace parity::runtime {
namespace {

using json = nlohmann::json;

constexpr const char* kChooseInterpreter = "choose an interpreter with torch through $PARITY_PYTHON or --torch-python";

json source_json(const TorchModelSource& source) {
  switch (source.kind) {
    case TorchModelSource::Kind::kScript:
      return {{"kind", "script"}, {"path", source.path}, {"function", source.function.empty() ? json() : json(source.function)}};
    case TorchModelSource::Kind::kTorchScript:
      return {{"kind", "torchscript"}, {"path", source.path}};
    case TorchModelSource::Kind::kExport:
      return {{"kind", "export"}, {"path", source.path}};
  }
  raise<InternalError>("unknown PyTorch model source");
}

json options_json(const TorchOptions& options) {
  return {{"device", options.device},
          {"dtype", options.dtype},
          {"dtype_mode", options.dtype_mode},
          {"tf32", options.tf32 ? json(*options.tf32) : json()},
          {"compile_mode", options.compile_mode ? json(*options.compile_mode) : json()}};
}

}  // namespace

TorchModelSource TorchModelSource::from_model_file(std::string path) {
  TorchModelSource source;
  source.kind = path.size() >= 4 && path.ends_with(".pt2") ? Kind::kExport : Kind::kTorchScript;
  source.path = std::move(path);
  return source;
}

TorchModelSource TorchModelSource::from_script(const std::string& path_and_function) {
  TorchModelSource source;
  source.kind = Kind::kScript;
  // "net.py:build"; a colon followed by no ".py" is the function's separator.
  const auto colon = path_and_function.rfind(':');
  if (colon != std::string::npos && path_and_function.find(".py", colon) == std::string::npos) {
    source.path = path_and_function.substr(0, colon);
    source.function = path_and_function.substr(colon + 1);
    if (source.function.empty())
      raise<InvalidInputError>("model script '{}': give a function after the colon, or leave the colon out (the "
                               "function 'load_model')",
                               path_and_function);
  } else {
    source.path = path_and_function;
  }
  return source;
}

std::string TorchModelSource::describe() const {
  return kind == Kind::kScript && !function.empty() ? path + ":" + function : path;
}

TorchRunner::TorchRunner(ModelLoader onnx_model, TorchOptions options)
    : Runner("pytorch-runner"), onnx_model_(std::move(onnx_model)), options_(std::move(options)) {}

TorchRunner::~TorchRunner() = default;

std::string TorchRunner::worker_name() const { return fmt::format("the PyTorch runner ({})", options_.model.describe()); }

void TorchRunner::activate_impl() {
  const std::string interpreter = options_.python.empty() ? configured_python() : options_.python;
  PythonWorkerOptions worker;
  worker.name = worker_name();
  worker.interpreter = interpreter;
  worker.commands = std::string(kModuleCaptureSource) + "\n" + kTorchModelSource + "\n" + kTorchRequestsSource +
                    "\n" + kTorchLayerProfileSource + "\nserve_commands(command, Reply, CommandFailed)\n";
  try {
    worker_ = std::make_unique<PythonWorker>(worker);
  } catch (const ProcessStartError& error) {
    raise<InvalidInputError>("{}: cannot start its Python '{}' ({}); {}", worker.name, interpreter, error.what(),
                             kChooseInterpreter);
  }

  const json python = worker_->call("describe").result;
  if (python.at("torch").is_null())
    raise<InvalidInputError>("{}: the Python {} ({}) cannot import torch ({}); {}", worker.name,
                             python.at("python").get<std::string>(), python.at("python_version").get<std::string>(),
                             python.at("error").get<std::string>(), kChooseInterpreter);

  json arguments = {{"source", source_json(options_.model)}, {"options", options_json(options_)},
                    {"output_names", json()}, {"inputs_from_script", false}};
  inputs_ = TensorMetadata();
  output_names_.clear();
  if (onnx_model_) {
    const onnx::Model model = onnx_model_();
    inputs_ = onnx::graph_inputs(model->graph());
    for (const auto& output : model->graph().output()) output_names_.push_back(output.name());
    arguments["output_names"] = output_names_;
  } else if (!options_.input_shapes.empty()) {
    for (const auto& [name, dims] : options_.input_shapes) {
      std::vector<Dim> shape;
      for (int64_t dim : dims) shape.push_back(Dim::fixed(dim));
      inputs_.add(name, DType::kFloat32, shape);
    }
  } else {
    arguments["inputs_from_script"] = true;
  }

  json activated;
  try {
    activated = worker_->call("activate", arguments).result;
  } catch (const PythonCommandError& error) {
    log::verbose("{}", error.traceback());
    throw;
  }
  plain_infer_ = worker_->bind("infer", {{"capture", json()}});
  for (const auto& message : activated.at("messages")) log::info("{:35} | {}", name(), message.get<std::string>());
  if (!activated.at("inputs").is_null()) {
    for (const auto& entry : activated.at("inputs")) {
      const std::string input = entry.at(0).get<std::string>();
      const std::string descr = entry.at(1).get<std::string>();
      auto dtype = dtype_from_numpy_descr(descr);
      if (!dtype)
        raise<UnsupportedError>("{}: example input '{}' has numpy dtype '{}', which Parity has no type for",
                                worker.name, input, descr);
      std::vector<Dim> shape;
      for (const auto& dim : entry.at(2)) shape.push_back(Dim::fixed(dim.get<int64_t>()));
      inputs_.add(input, *dtype, shape);
    }
  }
  pair_modules();
}

// The module's submodules and the tensors of its ONNX export that hold their outputs (without an ONNX
// model, tensors named by the modules' qualified names).
void TorchRunner::pair_modules() {
  pairings_.reset();
  pairings_used_ = false;
  producers_.clear();
  std::vector<onnx::TorchModule> modules;
  for (const auto& entry : worker_->call("modules").result)
    modules.push_back({entry.at(0).get<std::string>(), entry.at(1).get<std::string>()});
  if (!onnx_model_) {
    // Without an ONNX model, module outputs are compared by qualified name, against another PyTorch run.
    pairings_ = onnx::pair_torch_modules_by_name(modules);
    return;
  }
  const onnx::Model model = onnx_model_();
  pairings_ = onnx::pair_torch_modules(model->graph(), modules);
  const auto& nodes = model->graph().node();
  for (int i = 0; i < nodes.size(); ++i)
    for (const auto& output : nodes[i].output())
      if (!output.empty()) producers_.emplace(output, Producer{static_cast<std::size_t>(i), nodes[i].name(), nodes[i].op_type()});
  const auto paired = std::count_if(pairings_->modules.begin(), pairings_->modules.end(),
                                    [](const auto& m) { return m.paired(); });
  log::verbose("{:35} | {} of {} module(s) paired with tensors of the ONNX model ({} export)", name(), paired,
               pairings_->modules.size(), onnx::torch_exporter_label(pairings_->exporter));
}

const onnx::TorchModulePairings* TorchRunner::torch_module_pairings() const {
  return pairings_ && pairings_used_ ? &*pairings_ : nullptr;
}

// Intermediate tensors asked of the runner are its paired modules' outputs.
bool TorchRunner::captures_modules() const {
  return pairings_ && (callback_ || intermediates_.mode != IntermediateOutputs::Mode::kNone);
}

// The worker's outputs then module outputs (in the order the modules returned): streamed in the ONNX
// graph's order with their nodes (without an ONNX model, the module outputs in the order they
// returned, then the outputs); returned are the graph outputs, and the module outputs asked for when
// nothing streams them.
NamedTensors TorchRunner::module_outputs(NamedTensors tensors, const std::unordered_set<std::string>& captured) {
  const auto is_output = [&](const std::string& tensor) { return !captured.contains(tensor); };
  std::vector<std::size_t> order(tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto position = [&](std::size_t i) {
    if (const auto it = producers_.find(tensors[i].first); it != producers_.end()) return it->second.position;
    return producers_.empty() && !is_output(tensors[i].first) ? i : SIZE_MAX;
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return position(a) < position(b); });
  if (callback_) {
    static const std::string kNone;
    for (std::size_t i : order) {
      const auto it = producers_.find(tensors[i].first);
      callback_(ProducedTensor{tensors[i].first, tensors[i].second, it == producers_.end() ? kNone : it->second.node,
                               it == producers_.end() ? kNone : it->second.op, true});
    }
  }
  const auto listed = [&](const std::string& tensor) {
    return intermediates_.mode == IntermediateOutputs::Mode::kAll ||
           std::find(intermediates_.names.begin(), intermediates_.names.end(), tensor) != intermediates_.names.end();
  };
  NamedTensors returned;
  for (auto& entry : tensors)
    if (is_output(entry.first) || (!callback_ && listed(entry.first))) returned.push_back(std::move(entry));
  return returned;
}

void TorchRunner::deactivate_impl() { worker_.reset(); }

std::optional<WorkerMemory> TorchRunner::worker_memory() {
  const nlohmann::json reply = worker_->call("memory").result;
  WorkerMemory memory;
  memory.peak_rss_bytes = reply.at("peak_rss_bytes").get<int64_t>();
  if (!reply.at("gpu_peak_bytes").is_null()) memory.gpu_peak_bytes = reply.at("gpu_peak_bytes").get<int64_t>();
  memory.gpu_note = reply.value("gpu_note", "");
  return memory;
}

std::string TorchModuleCalls::input_name(const std::string& module, std::size_t index) {
  return fmt::format("{}#in{}", module, index);
}

std::string TorchModuleCalls::output_name(const std::string& module) { return module + "#out"; }

TorchModuleCalls TorchRunner::capture_module_calls(const NamedTensors& feed, const std::vector<std::string>& modules) {
  if (!worker_) raise<InternalError>("{}: capture_module_calls on an inactive runner", name());
  const NamedTensors ordered = ordered_feed(feed);
  PythonReply reply;
  try {
    reply = worker_->call("capture_module_calls", {{"modules", modules}}, ordered);
  } catch (const PythonCommandError& error) {
    log::verbose("{}", error.traceback());
    throw;
  }
  TorchModuleCalls calls;
  calls.tensors = std::move(reply.tensors);
  for (const auto& [module, count] : reply.result.at("inputs").items())
    calls.argument_counts[module] = count.get<std::size_t>();
  for (const auto& [module, reason] : reply.result.at("not_captured").items())
    calls.not_captured[module] = reason.get<std::string>();
  for (const auto& [module, arguments] : reply.result.at("sources").items()) {
    auto& sources = calls.sources[module];
    for (const auto& source : arguments) {
      TorchModuleCalls::Source entry;
      if (source.is_array() && source.at(0) == "module") {
        entry.kind = TorchModuleCalls::Source::Kind::kModule;
        entry.name = source.at(1).get<std::string>();
      } else if (source.is_array() && source.at(0) == "input") {
        // A positional argument of the top module's call is the feed at that position; a keyword one
        // is the input of that name.
        const json& which = source.at(1);
        if (which.is_number() && which.get<std::size_t>() < ordered.size()) {
          entry.kind = TorchModuleCalls::Source::Kind::kInput;
          entry.name = ordered[which.get<std::size_t>()].first;
        } else if (which.is_string()) {
          entry.kind = TorchModuleCalls::Source::Kind::kInput;
          entry.name = which.get<std::string>();
        }
      }
      sources.push_back(std::move(entry));
    }
  }
  return calls;
}

Tensor TorchRunner::run_module(const std::string& module, const std::vector<Tensor>& arguments,
                               const NamedTensors& substitutes) {
  if (!worker_) raise<InternalError>("{}: run_module on an inactive runner", name());
  NamedTensors tensors;
  json names = json::array();
  for (std::size_t i = 0; i < arguments.size(); ++i)
    tensors.emplace_back(TorchModuleCalls::input_name(module, i), arguments[i]);
  for (const auto& [child, value] : substitutes) {
    tensors.emplace_back(child, value);
    names.push_back(child);
  }
  PythonReply reply = worker_->call(
      "run_module", {{"module", module}, {"inputs", arguments.size()}, {"substitutes", std::move(names)}}, tensors);
  for (auto& [name, tensor] : reply.tensors)
    if (name == "output") return std::move(tensor);
  raise<InternalError>("{}: run_module returned no output", this->name());
}

TensorMetadata TorchRunner::input_metadata_impl() { return inputs_; }

// The feeds in the order of the input metadata: a module whose forward() parameters are not the
// inputs' names takes them positionally.
NamedTensors TorchRunner::ordered_feed(const NamedTensors& feed) const {
  NamedTensors ordered;
  for (const auto& [input, info] : inputs_)
    for (const auto& entry : feed)
      if (entry.first == input) ordered.push_back(entry);
  return ordered;
}

NamedTensors TorchRunner::infer_impl(const NamedTensors& feed) {
  const NamedTensors ordered = ordered_feed(feed);
  const bool modules = captures_modules();
  json arguments;
  std::unordered_set<std::string> captured;  // the module outputs' tensor names
  if (modules) {
    // Each paired module whose tensor is not a graph output (those the forward pass returns anyway).
    json requested = json::object();
    for (const auto& module : pairings_->modules)
      if (module.paired() &&
          std::find(output_names_.begin(), output_names_.end(), module.tensor) == output_names_.end()) {
        requested[module.module] = module.tensor;
        captured.insert(module.tensor);
      }
    arguments["capture"] = {{"modules", std::move(requested)}};
  }
  PythonReply reply;
  try {
    reply = modules ? worker_->call("infer", arguments, ordered) : worker_->call_bound(plain_infer_, ordered);
  } catch (const PythonCommandError& error) {
    log::verbose("{}", error.traceback());
    throw;
  }
  if (!modules) return std::move(reply.tensors);
  pairings_used_ = true;
  for (const auto& [module, reason] : reply.result.at("not_captured").items())
    pairings_->unpair(module, reason.get<std::string>());
  return module_outputs(std::move(reply.tensors), captured);
}

}  // namespace parity::runtime
