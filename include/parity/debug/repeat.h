// `debug repeat`'s loop (Polygraphy's debug repeat): run a check again and again until it passes,
// fails, or a number of times, counting the outcomes.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace parity::debug {

struct Until {
  enum class Kind { kGood, kBad, kCount } kind = Kind::kCount;
  int count = 1;
  // "good", "bad" or a positive count; throws InvalidInputError otherwise.
  static Until parse(const std::string& text);
};

// The outcome of one iteration: passed, and a label to count (e.g. "exit code 1").
struct IterationOutcome {
  bool passed = true;
  std::string label;
  bool stop = false;  // no further iteration can differ (e.g. a deterministic build): stop here
};

struct RepeatSummary {
  int iterations = 0;
  int passed = 0;
  std::map<std::string, int> labels;  // how often each label occurred
  bool stopped_at_limit = false;      // good/bad not reached within the iteration limit
  bool stopped_early = false;         // an iteration asked to stop
};

// Runs `iteration(index)` (index from 1) until `until` is met or an iteration says stop, at most
// `limit` times for good/bad.
RepeatSummary repeat(const Until& until, const std::function<IterationOutcome(int index)>& iteration,
                     int limit = 100000);

// What is counted for an iteration of a check command: "passed with exit code 0", "failed with
// exit code 2".
std::string outcome_label(bool failed, int exit_code);

// An iteration of a check command as `debug repeat` and `debug build` record it in the debug replay
// (parity/debug/replay.h): {"key", "failed", "exit_code"}.
struct RecordedIteration {
  bool failed = false;
  int exit_code = 0;
  nlohmann::json to_step(const std::string& key) const;
  // FileError naming `replay` when the step has no integer "exit_code".
  static RecordedIteration from_step(const nlohmann::json& step, const std::filesystem::path& replay);
};

}  // namespace parity::debug
