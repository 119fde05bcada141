#include "parity/compare/layerwise_torch_modules.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "parity/core/logger.h"

namespace parity::compare {
namespace {

std::size_t depth(const std::string& module) {
  return module.empty() ? 0 : 1 + static_cast<std::size_t>(std::count(module.begin(), module.end(), '.'));
}

}  // namespace

std::string module_label(const onnx::TorchModulePairing& module) {
  return module.module.empty() ? module.class_name : module.module + ": " + module.class_name;
}

void name_module_outputs(LayerwiseResult& result, const std::string& runner, const onnx::TorchModulePairings& pairings) {
  if (result.torch_modules) {
    // Both runners are PyTorch's (no ONNX model): a module either could not capture is not compared.
    for (const auto& module : pairings.modules)
      if (!module.paired()) result.torch_modules->pairings.unpair(module.module, runner + ": " + module.reason);
    result.torch_modules->runner += ", " + runner;
  } else {
    result.torch_modules = LayerwiseResult::TorchModules{runner, pairings};
  }
  std::unordered_map<std::string, std::vector<const onnx::TorchModulePairing*>> by_tensor;
  for (const auto& module : result.torch_modules->pairings.modules)
    if (module.paired()) by_tensor[module.tensor].push_back(&module);
  for (auto& [tensor, modules] : by_tensor)
    std::stable_sort(modules.begin(), modules.end(),
                     [](const auto* a, const auto* b) { return depth(a->module) > depth(b->module); });
  for (auto& entry : result.entries) {
    entry.module_outputs.clear();
    if (const auto it = by_tensor.find(entry.tensor); it != by_tensor.end())
      for (const auto* module : it->second) entry.module_outputs.push_back(module_label(*module));
  }
}

const LayerwiseEntry* first_diverging_module(const LayerwiseResult& result) {
  const LayerwiseEntry* first = nullptr;
  for (const auto& e : result.entries) {
    if (e.comparison.passed || !e.not_a_divergence.empty() || e.module_outputs.empty()) continue;
    if (!first || std::pair(e.iteration, e.order) < std::pair(first->iteration, first->order)) first = &e;
  }
  return first;
}

void log_torch_modules(const LayerwiseResult::TorchModules& modules) {
  const auto& list = modules.pairings.modules;
  const auto paired = std::count_if(list.begin(), list.end(), [](const auto& m) { return m.paired(); });
  const char* others =
      static_cast<std::size_t>(paired) < list.size() ? "; the others are listed with -v and in --report" : "";
  if (modules.pairings.exporter == onnx::TorchExporter::by_name)
    log::info("PyTorch modules of {}: {} of {} compared by qualified name (no ONNX model){}", modules.runner, paired,
              list.size(), others);
  else
    log::info("PyTorch modules of {}: {} of {} paired with the ONNX tensor holding their output ({} export){}",
              modules.runner, paired, list.size(), onnx::torch_exporter_label(modules.pairings.exporter), others);
  Logger::Indent indent;
  if (paired == 0) log::info("No module output to compare: only the final outputs are compared");
  for (const auto& module : list)
    if (!module.paired()) log::verbose("not paired: {} | {}", module_label(module), module.reason);
}

nlohmann::ordered_json to_json(const LayerwiseResult::TorchModules& modules) {
  nlohmann::ordered_json j;
  j["runner"] = modules.runner;
  j["exporter"] = onnx::torch_exporter_label(modules.pairings.exporter);
  j["paired"] = nlohmann::ordered_json::array();
  j["unpaired"] = nlohmann::ordered_json::array();
  for (const auto& m : modules.pairings.modules) {
    if (m.paired())
      j["paired"].push_back({{"module", m.module}, {"class", m.class_name}, {"tensor", m.tensor}, {"node", m.node}});
    else
      j["unpaired"].push_back({{"module", m.module}, {"class", m.class_name}, {"reason", m.reason}});
  }
  return j;
}

}  // namespace parity::compare
