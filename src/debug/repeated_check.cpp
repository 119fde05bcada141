#include "parity/debug/repeated_check.h"

#include <chrono>

#include <fmt/format.h>

#include "parity/core/logger.h"

namespace parity::debug {
namespace {

void log_outcome(bool failed, const std::string& noun, int index, const std::string& described, int exit_code,
                 const std::string& tail) {
  if (failed) log::error("FAILED | {} {} | {}exit code {} | {}", noun, index, described, exit_code, tail);
  else log::finish("PASSED | {} {} | {}exit code {} | {}", noun, index, described, exit_code, tail);
}

}  // namespace

RepeatedCheckSummary repeat_check(const Until& until, DebugReplay& replay, const RepeatedCheck& check) {
  RepeatedCheckSummary summary;
  auto describe = [&check](const nlohmann::json& fields) { return check.describe ? check.describe(fields) : ""; };
  summary.repeat = repeat(until, [&](int index) {
    const std::string key = fmt::format("{}:{}", check.key, index);
    RecordedIteration recorded;
    nlohmann::json fields = nlohmann::json::object();
    if (auto step = replay.find(key)) {
      recorded = RecordedIteration::from_step(*step, replay.load_path());
      if (check.read_fields) fields = check.read_fields(*step, key);
      ++summary.replayed;
      log_outcome(recorded.failed, check.noun, index, describe(fields), recorded.exit_code, "from the replay");
    } else {
      log::start("RUNNING | {} {} | Command: {}", check.noun, index, check.command);
      const auto start = std::chrono::steady_clock::now();
      if (check.prepare) fields = check.prepare(index);
      const CheckOutcome outcome = check.run_check(index - 1);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      log_outcome(outcome.failed, check.noun, index, describe(fields), outcome.exit_code,
                  fmt::format("{:.3f}s", seconds));
      check.sorter.sort(!outcome.failed, fmt::format("{}{}", check.artifact_prefix, index));
      recorded = {outcome.failed, outcome.exit_code};
    }
    nlohmann::json step = recorded.to_step(key);
    for (const auto& [name, value] : fields.items()) step[name] = value;
    replay.record(std::move(step));
    IterationOutcome result{!recorded.failed, outcome_label(recorded.failed, recorded.exit_code)};
    result.stop = check.stop && check.stop(index, fields);
    return result;
  });
  return summary;
}

void log_repeat_summary(const RepeatedCheckSummary& summary, const std::string& until, const std::string& singular,
                        const std::string& plural, const std::string& extra) {
  const RepeatSummary& counts = summary.repeat;
  if (counts.stopped_at_limit)
    log::warning("Stopped after {} {} without reaching --until {}", counts.iterations, plural, until);
  std::string labels;
  for (const auto& [label, count] : counts.labels) labels += fmt::format("\n    {}: {}", label, count);
  log::finish("Finished {} {}(s){}{} | Passed: {}/{} | Pass Rate: {:.1f}%{}", counts.iterations, singular,
              summary.replayed ? fmt::format(" ({} from the replay)", summary.replayed) : "", extra, counts.passed,
              counts.iterations, 100.0 * counts.passed / counts.iterations, labels);
}

}  // namespace parity::debug
