// The debug tools' check flags (Polygraphy's CheckCmdArgs and ArtifactSortArgs): --check given
// last (every argument after it is the command's), --fail-code, --ignore-fail-code, --fail-regex,
// --show-output, --hide-fail-output, --iteration-info, --artifacts and --artifacts-dir.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "parity/debug/artifacts.h"
#include "parity/debug/check_command.h"

namespace parity::cli {

class CheckArgs {
 public:
  // `command_help` describes --check for this tool. Makes `app` a prefix command: arguments it
  // does not know end its parsing and go to the check command.
  void add_to(CLI::App& app, const std::string& command_help);
  // Checks the values: a --check with a command after it, nothing unexpected without one.
  // `required`: a tool that has no other check (InvalidInputError without --check).
  void parse(bool required);
  bool given() const { return given_; }
  // The check command (after parse(), when given()).
  const debug::CheckCommand& command() const { return *command_; }
  // Runs the check command and shows its output as Polygraphy does: a failing run's unless
  // --hide-fail-output, a passing run's only with --show-output (stdout at [I], stderr at [E] for a
  // failure and [W] for a pass, each under Polygraphy's "========== CAPTURED ... ==========" line);
  // output not shown goes to -v. The exit status is logged at -v either way. With --iteration-info,
  // {"iteration": `iteration`} (Polygraphy's 0-based iteration index) is written there for the
  // command to read, and removed after it.
  debug::CheckOutcome run_check(int iteration) const;
  bool fail_options_given() const {
    return !fail_codes_.empty() || !ignore_fail_codes_.empty() || !fail_regexes_.empty();
  }
  debug::ArtifactSorter artifact_sorter() const { return {artifacts_, artifacts_dir_}; }

 private:
  CLI::App* app_ = nullptr;
  bool given_ = false;
  bool show_output_ = false, hide_fail_output_ = false;
  std::vector<int> fail_codes_, ignore_fail_codes_;
  std::vector<std::string> fail_regexes_;
  std::string iteration_info_;
  std::vector<std::string> artifacts_;
  std::string artifacts_dir_ = "parity_artifacts";
  std::optional<debug::CheckCommand> command_;
};

}  // namespace parity::cli
