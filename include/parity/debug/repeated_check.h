// The loop `debug repeat` and `debug build` share: a check command run again and again (repeat()'s
// stopping rules), each iteration logged as Polygraphy does ("RUNNING | Iteration 1 | Command: ...",
// then "PASSED | ..." or "FAILED | ..."), its artifacts sorted into good/bad and its outcome recorded
// in the debug replay; an iteration the loaded replay holds is taken from it instead of being run.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "parity/debug/artifacts.h"
#include "parity/debug/check_command.h"
#include "parity/debug/repeat.h"
#include "parity/debug/replay.h"

namespace parity::debug {

struct RepeatedCheck {
  std::string noun;             // an iteration in the log lines: "Iteration", "Build"
  std::string key;              // the replay's step keys, "<key>:<index>": "iteration", "build"
  std::string artifact_prefix;  // the sorted artifacts' suffix, "<prefix><index>": "iter", "build"
  std::string command;          // the check command, for the RUNNING line
  std::function<CheckOutcome(int iteration)> run_check;  // runs the check (`iteration` 0-based)
  ArtifactSorter sorter{{}, {}};
  // Optional. Before the check of an iteration that runs (after its RUNNING line; its time counts):
  // makes what the check reads (e.g. the build) and returns fields recorded in its step.
  std::function<nlohmann::json(int index)> prepare;
  // Optional. The fields `prepare` records, read back from a replayed step (FileError when missing).
  std::function<nlohmann::json(const nlohmann::json& step, const std::string& key)> read_fields;
  // Optional. What an iteration's outcome line says of its fields before the exit code, e.g.
  // "compiled 1a2b | ".
  std::function<std::string(const nlohmann::json& fields)> describe;
  // Optional. After an iteration is recorded: true stops the loop (no later iteration can differ).
  std::function<bool(int index, const nlohmann::json& fields)> stop;
};

struct RepeatedCheckSummary {
  RepeatSummary repeat;
  int replayed = 0;  // iterations taken from the loaded replay
};

RepeatedCheckSummary repeat_check(const Until& until, DebugReplay& replay, const RepeatedCheck& check);

// The closing lines: a warning when good/bad was not reached, then "Finished 3 iteration(s) (1 from
// the replay)<extra> | Passed: 2/3 | Pass Rate: 66.7%" with each outcome's count. `plural` names
// the iterations in the warning ("iterations", "builds"), `singular` in the count ("iteration").
void log_repeat_summary(const RepeatedCheckSummary& summary, const std::string& until, const std::string& singular,
                        const std::string& plural, const std::string& extra = {});

}  // namespace parity::debug
