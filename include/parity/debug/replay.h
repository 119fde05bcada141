// The debug tools' replay file (--save-debug-replay / --load-debug-replay), one format for
// `debug reduce`, `debug repeat` and `debug build`: a JSON object with fields that say what was
// debugged (e.g. "model_nodes", "tool") and "steps", one object per check in the order run, each
// with a "key" naming the check and its outcome "failed", plus what the tool needs to replay it
// (e.g. "label", "exit_code", "hash"). A later run takes a recorded outcome instead of running that
// check again, so an interrupted run resumes where it stopped.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace parity::debug {

class DebugReplay {
 public:
  // Reads `load` (nothing when empty): FileError when it is not JSON, not an object, a replay
  // written by Polygraphy (another format), or lacks "steps" or one of the `required` fields. `header` is written
  // before the steps to `save` (not written when empty), which is rewritten after each record().
  DebugReplay(std::filesystem::path load, std::filesystem::path save, nlohmann::json header,
              const std::vector<std::string>& required);

  // A field of the loaded replay (null when nothing was loaded).
  const nlohmann::json& loaded_field(const std::string& name) const;
  const std::filesystem::path& load_path() const { return load_; }

  // The recorded step of `key`, when the loaded replay has one; logs Polygraphy's "Loading iteration
  // information from debug replay: success=True|False" line when it does.
  std::optional<nlohmann::json> find(const std::string& key) const;

  // Appends `step` (which has "key" and "failed") and rewrites the saved replay.
  void record(nlohmann::json step);

 private:
  std::filesystem::path load_, save_;
  nlohmann::json header_, loaded_;
  std::map<std::string, nlohmann::json> loaded_steps_;
  nlohmann::json steps_ = nlohmann::json::array();
};

}  // namespace parity::debug
