// Runs a --check command (parity/core/process.h), reading its stdout and stderr through a pipe each
// (polled, so neither fills up while the other is read).
#include "parity/debug/check_command.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "parity/core/error.h"
#include "parity/core/process.h"

namespace parity::debug {

CheckCommand::CheckCommand(CheckCommandOptions options) : options_(std::move(options)) {
  if (options_.command.empty()) raise<InvalidInputError>("--check: no command given");
  auto program = find_program(options_.command[0]);
  if (!program)
    raise<InvalidInputError>("--check: the command '{}' was not found ({})", options_.command[0],
                             options_.command[0].find('/') != std::string::npos ? "no executable file at that path"
                                                                                 : "not an executable on PATH");
  program_ = program->string();
  for (const auto& pattern : options_.fail_regexes) {
    try {
      regexes_.emplace_back(pattern);
    } catch (const std::regex_error& e) {
      raise<InvalidInputError>("--fail-regex: '{}' is not a valid regular expression: {}", pattern, e.what());
    }
  }
}

std::string CheckCommand::to_string() const {
  std::string text;
  for (const auto& word : options_.command) text += (text.empty() ? "" : " ") + word;
  return text;
}

CheckOutcome CheckCommand::run() const {
  ProcessSpec spec;
  spec.program = program_;
  spec.argument_zero = options_.command[0];
  spec.arguments.assign(options_.command.begin() + 1, options_.command.end());
  spec.standard_output = ProcessStream::pipe();
  spec.standard_error = ProcessStream::pipe();
  CheckOutcome outcome;
  try {
    ProcessResult result = run_process(spec);
    outcome.output = std::move(result.interleaved);
    outcome.standard_output = std::move(result.standard_output);
    outcome.standard_error = std::move(result.standard_error);
    outcome.exit_code = result.end.signal != 0 ? 128 + result.end.signal : result.end.exit_status;
  } catch (const ProcessStartError& error) {
    // A program that cannot be executed ends as a shell would report it: exit code 127.
    const int reason = error.error_number();
    if (reason == EAGAIN || reason == ENOMEM || reason == EMFILE || reason == ENFILE)
      raise<ResourceLimitError>("--check: cannot start '{}': {}", to_string(), std::strerror(error.error_number()));
    outcome.exit_code = 127;
  }

  auto contains = [](const std::vector<int>& codes, int code) {
    return std::find(codes.begin(), codes.end(), code) != codes.end();
  };
  if (contains(options_.ignore_fail_codes, outcome.exit_code)) return outcome;
  std::optional<bool> regex_matched;
  if (!regexes_.empty())
    regex_matched = std::any_of(regexes_.begin(), regexes_.end(),
                                [&](const std::regex& regex) { return std::regex_search(outcome.output, regex); });
  if (!options_.fail_codes.empty()) {
    outcome.failed = contains(options_.fail_codes, outcome.exit_code) && regex_matched.value_or(true);
  } else {
    outcome.failed = regex_matched ? *regex_matched : outcome.exit_code != 0;
  }
  return outcome;
}

}  // namespace parity::debug
