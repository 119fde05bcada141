// A user's own check for the debug tools (Polygraphy's `--check`): a shell command run once per
// candidate; the candidate fails when the command exits non-zero or, with a fail pattern, when its
// output (stdout and stderr together) matches it.
#pragma once

#include <optional>
#include <regex>
#include <string>

#include "parity/debug/precision_search.h"

namespace parity::debug {

struct CheckCommandOptions {
  std::string command;                   // run with /bin/sh -c
  std::optional<std::regex> fail_regex;  // searched in the output
  std::string fail_regex_text;           // for messages
};

// Throws Error when the command cannot be started at all.
CandidateVerdict run_check_command(const CheckCommandOptions& options);

}  // namespace parity::debug
