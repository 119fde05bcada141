#include "args/check_args.h"

#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
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
  app.add_option("--iter-info,--iteration-info", iteration_info_,
                 "Path of a JSON file written before each check, {\"iteration\": N} (N counted from 0), for the "
                 "--check command to read; removed after the check")
      ->group(check);
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
  // An option this command lacks ends up here too (CLI11 hands unknown arguments to the prefix
  // command, wherever they stand); a program is never named with a leading dash.
  if (given_ && rest[0].starts_with('-'))
    raise<InvalidInputError>("unknown option '{}' (the --check command, given last, starts with the program to run)",
                             rest[0]);
  if (required && !given_) raise<InvalidInputError>("--check <command ...> is required");
  if (!given_) {
    if (show_output_ || hide_fail_output_ || !iteration_info_.empty())
      raise<InvalidInputError>("{} applies to a --check command",
                               show_output_        ? "--show-output"
                               : hide_fail_output_ ? "--hide-fail-output"
                                                   : "--iteration-info");
    return;
  }
  command_.emplace(debug::CheckCommandOptions{rest, fail_codes_, ignore_fail_codes_, fail_regexes_});
}

namespace {

// Writes --iteration-info's file for one check and removes it when the check is done.
class IterationInfoFile {
 public:
  IterationInfoFile(const std::string& path, int iteration) : path_(path) {
    if (!path_.empty()) write_file_atomic(path_, fmt::format("{{\"iteration\": {}}}\n", iteration));
  }
  ~IterationInfoFile() {
    std::error_code ignored;  // a file the check removed itself is fine
    if (!path_.empty()) std::filesystem::remove(path_, ignored);
  }
  IterationInfoFile(const IterationInfoFile&) = delete;
  IterationInfoFile& operator=(const IterationInfoFile&) = delete;

 private:
  std::string path_;
};

}  // namespace

debug::CheckOutcome CheckArgs::run_check(int iteration) const {
  debug::CheckOutcome outcome;
  {
    IterationInfoFile info(iteration_info_, iteration);
    outcome = command_->run();
  }
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
