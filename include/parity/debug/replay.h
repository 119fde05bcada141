// The debug tools' replay file (--save-debug-replay / --load-debug-replay), one format for
// `debug reduce`, `debug repeat` and `debug build`: a JSON object with fields that say what was
// debugged (e.g. "model_nodes", "tool") and "steps", one object per check in the order run, each
// with a "key" naming the check and its outcome "failed", plus what the tool needs to replay it
// (e.g. "label", "exit_code", "hash"). A later run takes a recorded outcome instead of running that
// check again, so an interrupted run resumes where it stopped. Saving appends each step to a journal
// beside the replay (replay_journal_path) and rewrites the replay itself only now and then (below).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace parity::debug {

class DebugReplay {
 public:
  // Reads `load` (nothing when empty), with the steps of its journal (below) when it has one:
  // FileError when it is not JSON, not an object, a replay written by Polygraphy (another format),
  // or lacks "steps" or one of the `required` fields. `header` is written before the steps to
  // `save` (not written when empty).
  DebugReplay(std::filesystem::path load, std::filesystem::path save, nlohmann::json header,
              const std::vector<std::string>& required);
  // Writes the saved replay whole and removes its journal (a failure is logged as a warning; the
  // journal then keeps the steps).
  ~DebugReplay();
  DebugReplay(DebugReplay&&) noexcept;
  DebugReplay& operator=(DebugReplay&&) noexcept;

  // A field of the loaded replay (null when nothing was loaded).
  const nlohmann::json& loaded_field(const std::string& name) const;
  const std::filesystem::path& load_path() const { return load_; }

  // The recorded step of `key`, when the loaded replay has one; logs Polygraphy's "Loading iteration
  // information from debug replay: success=True|False" line when it does.
  std::optional<nlohmann::json> find(const std::string& key) const;

  // Appends `step` (which has "key" and "failed") to the saved replay.
  void record(nlohmann::json step);

 private:
  class Writer;
  void read(const std::vector<std::string>& required);

  std::filesystem::path load_;
  nlohmann::json loaded_;
  std::map<std::string, nlohmann::json> loaded_steps_;
  std::unique_ptr<Writer> writer_;  // null when nothing is saved
};

// The saved replay's journal: `<save>.journal`, one step per line (compact JSON), appended and
// flushed to disk (fdatasync) by each record(). The replay file itself is rewritten whole only when
// its step count doubles (1, 2, 4, 8... steps) and once at the end, when the journal is removed: n
// steps cost O(n) bytes written instead of O(n^2) (each step used to rewrite and fsync the whole
// file). A run that is killed leaves the replay with at least half its steps and the journal with
// the rest; loading the replay reads its journal too (a last line cut short is ignored), so the run
// resumes from every step it recorded.
std::filesystem::path replay_journal_path(const std::filesystem::path& replay);

}  // namespace parity::debug
