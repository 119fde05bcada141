#include "parity/compare/module_attribution.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::compare {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using Calls = runtime::TorchModuleCalls;

std::size_t depth(const std::string& module) {
  return module.empty() ? 0 : 1 + static_cast<std::size_t>(std::count(module.begin(), module.end(), '.'));
}

// Whether `inner` is a submodule of `outer` (at any depth), not `outer` itself.
bool inside(const std::string& inner, const std::string& outer) {
  if (inner == outer) return false;
  return outer.empty() || (inner.size() > outer.size() && inner.starts_with(outer) && inner[outer.size()] == '.');
}

double worse(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  return std::max(a, b);
}

// One attributed module: a paired module whose tensor was compared.
struct Module {
  std::string name, tensor;
  std::size_t index = 0;     // into the result's tensors
  std::size_t arguments = 0;  // its positional arguments (known once captured)
  bool reference_output = false;  // the reference's value of its output is known
  std::vector<std::string> reference_arguments;  // where the reference's value of each argument waits
};

class ModuleAttributor {
 public:
  ModuleAttributor(runtime::Runner& reference, runtime::TorchRunner& under_test, const LayerwiseResult& totals,
                   const AttributionOptions& options)
      : reference_(reference), under_test_(under_test), totals_(totals),
        options_(options), spill_(options.spill_directory, options.memory_budget) {}

  AttributionResult run(const NamedTensors& feed) {
    result_.reference = totals_.runner0;
    result_.under_test = totals_.runner1;
    result_.by_module = true;
    for (const auto& [name, tensor] : feed) feed_[name] = tensor;
    collect();
    if (modules_.empty()) return std::move(result_);
    std::vector<std::string> names;
    for (const auto& module : modules_) names.push_back(module.name);
    auto* torch_reference = dynamic_cast<runtime::TorchRunner*>(&reference_);
    if (torch_reference) capture_torch_reference(*torch_reference, names, feed);
    else run_onnx_reference(feed);
    runtime::ActiveRunner active(under_test_);
    capture_under_test(names, feed, torch_reference != nullptr);
    for (auto& module : modules_)
      if (result_.tensors[module.index].not_run.empty()) run_alone(module);
    return std::move(result_);
  }

 private:
  // The paired modules whose tensors were compared, innermost first where modules share a tensor.
  void collect() {
    const auto entries = first_iteration_entries(totals_);
    const onnx::TorchModulePairings* pairings =
        totals_.torch_modules ? &totals_.torch_modules->pairings : under_test_.torch_module_pairings();
    if (!pairings)
      raise<InvalidInputError>("--attribute by PyTorch module needs the modules' outputs compared (--onnx-outputs "
                               "mark all); {} compared none",
                               under_test_.name());
    std::vector<std::pair<const LayerwiseEntry*, const onnx::TorchModulePairing*>> found;
    for (const auto& module : pairings->modules) {
      if (!module.paired()) continue;
      if (auto entry = entries.find(module.tensor); entry != entries.end()) found.emplace_back(entry->second, &module);
    }
    std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
      if (a.first->order != b.first->order) return a.first->order < b.first->order;
      return depth(a.second->module) > depth(b.second->module);
    });
    for (const auto& [entry, module] : found) {
      TensorAttribution tensor;
      tensor.order = entry->order;
      tensor.tensor = entry->tensor;
      tensor.node = module->module.empty() ? "(top module)" : module->module;
      tensor.op = module->class_name;
      tensor.modules = entry->module_outputs;
      tensor.total_abs = entry->comparison.simple->required_atol;
      tensor.total_rel = entry->comparison.simple->required_rtol;
      tensor.total_failed = !entry->comparison.passed;
      tensor.flipped = entry->comparison.simple->mismatch_count;
      tensor.local_abs = tensor.local_rel = tensor.local_excess = tensor.inherited_abs = tensor.inherited_rel =
          tensor.amplification = kNaN;
      modules_.push_back(Module{module->module, module->tensor, result_.tensors.size(), 0, false, {}});
      result_.tensors.push_back(std::move(tensor));
    }
  }

  // A PyTorch reference: each module's arguments and output from one forward pass with hooks, kept in
  // the spill.
  void capture_torch_reference(runtime::TorchRunner& reference, const std::vector<std::string>& names,
                               const NamedTensors& feed) {
    Calls calls;
    {
      runtime::ActiveRunner active(reference);
      calls = reference.capture_module_calls(feed, names);
    }
    for (auto& [name, tensor] : calls.tensors) {
      spill_.append(0, name, tensor.view(), "", "");
      tensor = Tensor();
    }
    for (auto& module : modules_) {
      if (auto why = calls.not_captured.find(module.name); why != calls.not_captured.end()) {
        result_.tensors[module.index].not_run = fmt::format("{}: {}", result_.reference, why->second);
        continue;
      }
      const auto count = calls.argument_counts.find(module.name);
      if (count == calls.argument_counts.end()) {
        result_.tensors[module.index].not_run = fmt::format("{} returned no call of it", result_.reference);
        continue;
      }
      module.arguments = count->second;
      module.reference_output = true;
      for (std::size_t i = 0; i < module.arguments; ++i)
        module.reference_arguments.push_back(Calls::input_name(module.name, i));
    }
  }

  // An ONNX reference: run again with every tensor kept; a module's output is its paired tensor.
  void run_onnx_reference(const NamedTensors& feed) {
    reference_.set_intermediate_outputs(runtime::IntermediateOutputs::all());
    reference_.set_tensor_callback([this](const runtime::ProducedTensor& t) {
      if (t.tensor.dtype() == DType::kString) return;
      if (t.immutable) spill_.append_shared(0, t.name, t.tensor, t.node_name, t.op_type);
      else spill_.append(0, t.name, t.tensor, t.node_name, t.op_type);
    });
    try {
      runtime::ActiveRunner active(reference_);
      for (auto& [name, tensor] : active->infer(feed))
        if (tensor.dtype() != DType::kString && !spill_.find(0, name)) spill_.append(0, name, tensor.view(), "", "");
    } catch (...) {
      reference_.set_tensor_callback(nullptr);
      reference_.set_intermediate_outputs(runtime::IntermediateOutputs::none());
      throw;
    }
    reference_.set_tensor_callback(nullptr);
    reference_.set_intermediate_outputs(runtime::IntermediateOutputs::none());
    for (auto& module : modules_) {
      module.reference_output = spill_.find(0, module.tensor) != nullptr;
      if (!module.reference_output)
        result_.tensors[module.index].not_run =
            fmt::format("{} produced no value of its tensor '{}'", result_.reference, module.tensor);
    }
  }

  // The run under test with hooks: each module's arguments there, against the reference's (the
  // inherited error). With an ONNX reference, also where each argument comes from, which says which
  // of the reference's tensors it is.
  void capture_under_test(const std::vector<std::string>& names, const NamedTensors& feed, bool torch_reference) {
    Calls calls = under_test_.capture_module_calls(feed, names);
    std::unordered_map<std::string, const Tensor*> values;
    for (const auto& [name, tensor] : calls.tensors) values[name] = &tensor;
    for (auto& module : modules_) {
      TensorAttribution& tensor = result_.tensors[module.index];
      if (!tensor.not_run.empty()) continue;
      const auto why = calls.not_captured.find(module.name);
      if (!torch_reference) {
        if (why != calls.not_captured.end()) {
          tensor.not_run = fmt::format("{}: {}, so which of {}'s tensors are its arguments is not known",
                                       result_.under_test, why->second, result_.reference);
          continue;
        }
        if (!resolve_onnx_arguments(module, calls)) continue;
      }
      if (why != calls.not_captured.end()) continue;  // inherited error unknown; the module still runs alone
      const auto count = calls.argument_counts.find(module.name);
      if (count == calls.argument_counts.end() || count->second != module.arguments) continue;
      double abs = 0, rel = 0;
      for (std::size_t i = 0; i < module.arguments; ++i) {
        const auto value = values.find(Calls::input_name(module.name, i));
        if (value == values.end()) {
          abs = rel = kNaN;
          break;
        }
        const Tensor reference = reference_value(module.reference_arguments[i]);
        if (reference.size() != value->second->size()) {
          abs = rel = kNaN;
          break;
        }
        try {
          auto [a, r] = attribution_error(module.tensor, reference, *value->second, options_.simple);
          abs = worse(abs, a);
          rel = worse(rel, r);
        } catch (const UnsupportedError&) {
          abs = rel = kNaN;
          break;
        }
      }
      tensor.inherited_abs = abs;
      tensor.inherited_rel = rel;
      tensor.amplification = abs > 0 ? tensor.total_abs / abs : (abs == 0 && tensor.total_abs > 0 ? kInf : kNaN);
    }
  }

  // With an ONNX reference: the reference's value of each argument, where the run under test says the
  // argument is a model input or the output of a module paired with a tensor the reference produced.
  bool resolve_onnx_arguments(Module& module, const Calls& calls) {
    TensorAttribution& tensor = result_.tensors[module.index];
    const auto count = calls.argument_counts.find(module.name);
    const auto sources = calls.sources.find(module.name);
    if (count == calls.argument_counts.end() || sources == calls.sources.end() ||
        sources->second.size() != count->second) {
      tensor.not_run = fmt::format("{} returned no call of it", result_.under_test);
      return false;
    }
    module.arguments = count->second;
    for (std::size_t i = 0; i < module.arguments; ++i) {
      const Calls::Source& source = sources->second[i];
      std::string value;
      if (source.kind == Calls::Source::Kind::kInput && feed_.count(source.name)) {
        value = source.name;
      } else if (source.kind == Calls::Source::Kind::kModule) {
        if (auto paired = paired_tensor(source.name); !paired.empty() && spill_.find(0, paired)) value = paired;
      }
      if (value.empty()) {
        tensor.not_run = fmt::format(
            "its argument {} is {}, so {}'s value of it is not known", i,
            source.kind == Calls::Source::Kind::kModule
                ? fmt::format("the output of module '{}', which is paired with no tensor {} produced", source.name,
                              result_.reference)
                : std::string("neither a model input nor the output of a module (computed in its caller's forward)"),
            result_.reference);
        return false;
      }
      module.reference_arguments.push_back(value);
    }
    return true;
  }

  std::string paired_tensor(const std::string& module) const {
    const onnx::TorchModulePairings* pairings =
        totals_.torch_modules ? &totals_.torch_modules->pairings : under_test_.torch_module_pairings();
    for (const auto& entry : pairings->modules)
      if (entry.module == module && entry.paired()) return entry.tensor;
    return "";
  }

  // The reference's value of a module's output.
  std::string reference_output(const Module& module) const {
    return dynamic_cast<runtime::TorchRunner*>(&reference_) ? Calls::output_name(module.name) : module.tensor;
  }

  Tensor reference_value(const std::string& name) const {
    if (auto it = feed_.find(name); it != feed_.end()) return it->second;
    const auto* record = spill_.find(0, name);
    if (!record) raise<InternalError>("module attribution: no reference value of '{}'", name);
    return spill_.read(*record);
  }

  // The module alone on the runner under test, fed the reference's arguments, its outermost attributed
  // submodules returning the reference's outputs.
  void run_alone(const Module& module) {
    TensorAttribution& tensor = result_.tensors[module.index];
    std::vector<Tensor> arguments;
    for (const auto& name : module.reference_arguments) arguments.push_back(reference_value(name));
    NamedTensors substitutes;
    for (const auto& other : modules_) {
      if (!other.reference_output || !inside(other.name, module.name)) continue;
      const bool outermost = std::none_of(modules_.begin(), modules_.end(), [&](const Module& between) {
        return between.reference_output && inside(between.name, module.name) && inside(other.name, between.name);
      });
      if (outermost && std::none_of(substitutes.begin(), substitutes.end(),
                                    [&](const auto& s) { return s.first == other.name; }))
        substitutes.emplace_back(other.name, reference_value(reference_output(other)));
    }
    Tensor value;
    try {
      ++result_.batches;
      value = under_test_.run_module(module.name, arguments, substitutes);
    } catch (const Error& error) {
      tensor.not_run = fmt::format("{} cannot run it alone: {}", result_.under_test, error.message());
      return;
    }
    const Tensor reference = reference_value(reference_output(module));
    tensor.discontinuous = is_integer(reference.dtype()) || reference.dtype() == DType::kBool;
    if (reference.size() != value.size()) {
      tensor.not_run = fmt::format("alone it has shape {}, the reference's has {}", shape_to_string(value.shape()),
                                   shape_to_string(reference.shape()));
      return;
    }
    measure_local(tensor, reference, value, options_.simple);
  }

  runtime::Runner& reference_;
  runtime::TorchRunner& under_test_;
  const LayerwiseResult& totals_;
  const AttributionOptions& options_;
  TensorSpill spill_;
  std::unordered_map<std::string, Tensor> feed_;
  std::vector<Module> modules_;
  AttributionResult result_;
};

}  // namespace

AttributionResult attribute_modules(runtime::Runner& reference, runtime::TorchRunner& under_test,
                                    const NamedTensors& feed, const LayerwiseResult& totals,
                                    const AttributionOptions& options) {
  return ModuleAttributor(reference, under_test, totals, options).run(feed);
}

AttributionResult attribute_run(runtime::ModelLoader model, runtime::Runner& reference, runtime::Runner& under_test,
                                const NamedTensors& feed, const LayerwiseResult& totals,
                                const AttributionOptions& options) {
  if (auto* torch = dynamic_cast<runtime::TorchRunner*>(&under_test))
    return attribute_modules(reference, *torch, feed, totals, options);
  if (!model)
    raise<InvalidInputError>("--attribute runs single ONNX nodes on {}: give the ONNX model", under_test.name());
  return attribute(model(), reference, under_test, feed, totals, options);
}

}  // namespace parity::compare
