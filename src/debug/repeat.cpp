#include "parity/debug/repeat.h"

#include <charconv>
#include <climits>

#include <fmt/format.h>

#include "parity/core/error.h"

namespace parity::debug {

Until Until::parse(const std::string& text) {
  if (text == "good") return {Kind::kGood, 0};
  if (text == "bad") return {Kind::kBad, 0};
  int count = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (error != std::errc() || end != text.data() + text.size() || count < 1)
    raise<InvalidInputError>("--until: expected 'good', 'bad' or a number of iterations of at least 1, got '{}'",
                             text);
  return {Kind::kCount, count};
}

RepeatSummary repeat(const Until& until, const std::function<IterationOutcome(int index)>& iteration, int limit) {
  RepeatSummary summary;
  const int last = until.kind == Until::Kind::kCount ? until.count : limit;
  for (int index = 1; index <= last; ++index) {
    IterationOutcome outcome = iteration(index);
    ++summary.iterations;
    summary.passed += outcome.passed ? 1 : 0;
    ++summary.labels[outcome.label];
    if (until.kind == Until::Kind::kGood && outcome.passed) return summary;
    if (until.kind == Until::Kind::kBad && !outcome.passed) return summary;
    if (outcome.stop && index < last) {
      summary.stopped_early = true;
      return summary;
    }
  }
  summary.stopped_at_limit = until.kind != Until::Kind::kCount;
  return summary;
}

std::string outcome_label(bool failed, int exit_code) {
  return fmt::format("{} with exit code {}", failed ? "failed" : "passed", exit_code);
}

nlohmann::json RecordedIteration::to_step(const std::string& key) const {
  return {{"key", key}, {"failed", failed}, {"exit_code", exit_code}};
}

RecordedIteration RecordedIteration::from_step(const nlohmann::json& step, const std::filesystem::path& replay) {
  if (!step.contains("exit_code") || !step["exit_code"].is_number_integer())
    raise<FileError>("{}: the replay's step '{}' has no integer 'exit_code'", replay.string(),
                     step.value("key", std::string()));
  // An exit status is 0-255, or 128 + a signal number (recorded so): anything outside int is no status.
  const auto& exit_code = step["exit_code"];
  const bool fits = exit_code.is_number_unsigned()
                        ? exit_code.get<uint64_t>() <= static_cast<uint64_t>(INT_MAX)
                        : exit_code.get<int64_t>() >= INT_MIN && exit_code.get<int64_t>() <= INT_MAX;
  if (!fits)
    raise<FileError>("{}: the replay's step '{}' has exit_code {}, which is no exit status", replay.string(),
                     step.value("key", std::string()), exit_code.dump());
  return {step.at("failed").get<bool>(), exit_code.get<int>()};
}

}  // namespace parity::debug
