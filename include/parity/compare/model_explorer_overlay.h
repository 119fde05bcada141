// `--save-model-explorer-overlay PATH`: the run's errors as node data for Google's Model Explorer
// ("custom node data", its GraphNodeData JSON: {"results": {key: {"value": number}}, "thresholds":
// [{"value": number, "bgColor": colour}]}), so the error is painted on the graph beside the model.
// Each key is a compared tensor's name, which Model Explorer matches to the node whose output it is;
// each value is the tensor's largest absolute error (a NaN/Inf error: the value -1, painted magenta).
// The thresholds colour by the tolerance: green up to atol, then yellow, orange and red at 10x,
// 100x and beyond.
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "parity/compare/judge.h"

namespace parity::compare {

// The overlay of a verdict: its layerwise tensors, else its compared outputs (the first pair's
// first iteration).
nlohmann::json model_explorer_overlay(const Verdict& verdict);

// Writes it atomically (no half-written file). Throws FileError.
void save_model_explorer_overlay(const std::filesystem::path& path, const Verdict& verdict);

}  // namespace parity::compare
