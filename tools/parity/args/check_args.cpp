#include "args/check_args.h"

#include <string_view>

#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::cli {

void CheckArgs::add_to(CLI::App& app, const std::string& command_help) {
  app_ = &app;
  const char* check = "Pass/Fail Reporting";
  app.add_flag("--check", given_, command_help)->group(check);
  app.add_option("--fail-code,--fail-returncode", fail_codes_,
                 "Exit code(s) of the --check command that count as failures (default: any non-zero)")
      ->group(check);
  app.add_option("--ignore-fail-code,--ignore-fail-returncode", ignore_fail_codes_,
                 "Exit code(s) of the --check command never counted as failures")
      ->group(check);
  app.add_option("--fail-regex", fail_regexes_,
                 "Regular expression(s) marking a failure in the --check command's output (stdout and stderr)")
      ->group(check);
  auto* show_output = app.add_flag("--show-output", show_output_,
                                   "Show the --check command's output even when it passes (by default only a failing "
                                   "check's output is shown; a passing one's is logged at -v)")
                          ->group(check);
  app.add_flag("--hide-fail-output", hide_fail_output_,
               "Do not show the --check command's output when it fails (it is then logged at -v only)")
      ->group(check)
      ->excludes(show_output);
  const char* artifacts = "Artifact Sorting";
  app.add_option("--artifacts", artifacts_,
                 "Files to sort after each check into --artifacts-dir/good or /bad (e.g. the file the check reads)")
      ->group(artifacts);
  app.add_option("--artifacts-dir", artifacts_dir_, "Where --artifacts go (default parity_artifacts)")
      ->group(artifacts);
  app.prefix_command();  // what follows --check's first word is the command's
}

void CheckArgs::parse(bool required) {
  std::vector<std::string> rest = app_->remaining();
  if (!given_ && !rest.empty())
    raise<InvalidInputError>("unexpected argument '{}' (a --check command goes last, after --check)", rest[0]);
  if (given_ && rest.empty()) raise<InvalidInputError>("--check: no command given after it");
  if (required && !given_) raise<InvalidInputError>("--check <command ...> is required");
  if (!given_) {
    if (show_output_ || hide_fail_output_)
      raise<InvalidInputError>("{} applies to a --check command",
                               show_output_ ? "--show-output" : "--hide-fail-output");
    return;
  }
  command_.emplace(debug::CheckCommandOptions{rest, fail_codes_, ignore_fail_codes_, fail_regexes_});
}

debug::CheckOutcome CheckArgs::run_check() const {
  debug::CheckOutcome outcome = command_->run();
  const bool show = show_output_ || (outcome.failed && !hide_fail_output_);
  if (!show) {
    log::verbose("Check command `{}` exited with {}; its output:\n{}", command_->to_string(), outcome.exit_code,
                 outcome.output);
    return outcome;
  }
  // Without the stream's final newline, which would print as an empty continuation line.
  auto text = [](const std::string& captured) {
    return std::string_view(captured).substr(0, captured.size() - (captured.ends_with('\n') ? 1 : 0));
  };
  log::verbose("Check command `{}` exited with {}", command_->to_string(), outcome.exit_code);
  log::info("========== CAPTURED STDOUT ==========\n{}", text(outcome.standard_output));
  log::at(outcome.failed ? Severity::kError : Severity::kWarning, "========== CAPTURED STDERR ==========\n{}",
          text(outcome.standard_error));
  return outcome;
}

}  // namespace parity::cli
