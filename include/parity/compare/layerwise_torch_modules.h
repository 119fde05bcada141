// A layerwise comparison against a runner that produced PyTorch modules' outputs under the ONNX
// tensor names holding them (--torch with mark all; the pairing is onnx/torch_module_pairing.h): the
// entries named by module, and the modules not paired with their reasons.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "parity/compare/layerwise.h"

namespace parity::compare {

// "m.conv2: Conv2d"; the class alone for the top module (whose name is empty).
std::string module_label(const onnx::TorchModulePairing& module);

// Sets module_outputs on each entry whose tensor the pairing's modules output (innermost first:
// the deepest qualified name) and keeps the pairing in result.torch_modules, with `runner`, the
// runner whose modules they are. Called for both runners of a result (two PyTorch runs without an
// ONNX model), a module either could not capture is unpaired, its reason prefixed by the runner.
void name_module_outputs(LayerwiseResult& result, const std::string& runner, const onnx::TorchModulePairings& pairings);

// The failing entry with the smallest (iteration, order) that is a divergence and the output of a
// module (module_outputs not empty); nullptr when there is none.
const LayerwiseEntry* first_diverging_module(const LayerwiseResult& result);

// Logs how many modules are paired and with which exporter's rules, then each module not paired
// with its reason (at verbose level).
void log_torch_modules(const LayerwiseResult::TorchModules& modules);

// {"runner", "exporter", "paired": [{"module", "class", "tensor", "node"}...],
//  "unpaired": [{"module", "class", "reason"}...]}
nlohmann::ordered_json to_json(const LayerwiseResult::TorchModules& modules);

}  // namespace parity::compare
