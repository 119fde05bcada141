// The --check command of the debug tools (Polygraphy's check arguments): a program run once per
// candidate, whose exit code (and optionally output) says whether the candidate fails.
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace parity::debug {

struct CheckCommandOptions {
  std::vector<std::string> command;         // program and its arguments
  std::vector<int> fail_codes;              // only these exit codes are failures (empty: any non-zero)
  std::vector<int> ignore_fail_codes;       // these exit codes are never failures
  std::vector<std::string> fail_regexes;    // output matching one is a failure (see failed())
};

struct CheckOutcome {
  int exit_code = 0;
  std::string output;           // stdout and stderr, interleaved as read (what --fail-regex searches)
  std::string standard_output;  // stdout alone
  std::string standard_error;   // stderr alone
  bool failed = false;
};

class CheckCommand {
 public:
  // Throws InvalidInputError when the command is empty, its program cannot be found (a path that
  // is not an executable file, or a name on no PATH folder) or a regex is invalid.
  explicit CheckCommand(CheckCommandOptions options);

  // Runs the command and decides as Polygraphy does: an ignored code passes; with --fail-code the
  // code must be one of them (and, with --fail-regex, the output must match); without, a regex
  // match alone fails, else a non-zero code fails.
  CheckOutcome run() const;

  std::string to_string() const;  // the command line, for messages

 private:
  CheckCommandOptions options_;
  std::vector<std::regex> regexes_;
  std::string program_;  // resolved path of command[0]
};

}  // namespace parity::debug
