#include "parity/debug/replay.h"

#include "parity/core/error.h"
#include "parity/core/json_depth.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"

namespace parity::debug {
namespace {

// Polygraphy's replay: an object whose every key names an iteration ("_N<index>[_<suffix>]").
bool is_polygraphy_replay(const nlohmann::json& json) {
  if (!json.is_object() || json.empty()) return false;
  for (const auto& [key, value] : json.items())
    if (key.rfind("_N", 0) != 0 || !value.is_array()) return false;
  return true;
}

}  // namespace

DebugReplay::DebugReplay(std::filesystem::path load, std::filesystem::path save, nlohmann::json header,
                         const std::vector<std::string>& required)
    : load_(std::move(load)), save_(std::move(save)), header_(std::move(header)) {
  if (load_.empty()) return;
  try {
    std::string text = read_file(load_);
    check_json_depth(text, load_.string());
    loaded_ = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    raise<FileError>("{}: not a debug replay (invalid JSON: {})", load_.string(), e.what());
  }
  if (is_polygraphy_replay(loaded_))
    raise<FileError>("{}: a debug replay written by Polygraphy (its keys are Polygraphy's iterations, \"_N0_...\"); "
                     "Parity replays only its own (--save-debug-replay of the same Parity command)",
                     load_.string());
  bool complete = loaded_.is_object() && loaded_.contains("steps") && loaded_["steps"].is_array();
  for (const auto& field : required) complete = complete && loaded_.contains(field);
  if (!complete) {
    std::string fields = "'steps'";
    for (const auto& field : required) fields += " or '" + field + "'";
    raise<FileError>("{}: not a debug replay (no {})", load_.string(), fields);
  }
  for (const auto& step : loaded_["steps"]) {
    if (!step.is_object() || !step.contains("key") || !step.contains("failed") || !step["key"].is_string() ||
        !step["failed"].is_boolean())
      raise<FileError>("{}: not a debug replay (a step without a string 'key' and a boolean 'failed': {})",
                       load_.string(), step.dump());
    loaded_steps_[step["key"].get<std::string>()] = step;
  }
}

const nlohmann::json& DebugReplay::loaded_field(const std::string& name) const {
  static const nlohmann::json null;
  if (!loaded_.is_object() || !loaded_.contains(name)) return null;
  return loaded_[name];
}

std::optional<nlohmann::json> DebugReplay::find(const std::string& key) const {
  auto it = loaded_steps_.find(key);
  if (it == loaded_steps_.end()) return std::nullopt;
  // Polygraphy's line for a replayed iteration (its Python bool).
  log::info("Loading iteration information from debug replay: success={}",
            it->second["failed"].get<bool>() ? "False" : "True");
  return it->second;
}

void DebugReplay::record(nlohmann::json step) {
  steps_.push_back(std::move(step));
  if (save_.empty()) return;
  nlohmann::json json = header_;
  json["steps"] = steps_;
  write_file_atomic(save_, json.dump(2) + "\n");
}

}  // namespace parity::debug
