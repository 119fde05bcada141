#include "args/check_args.h"

#include "parity/core/error.h"

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
  if (!given_) return;
  command_.emplace(debug::CheckCommandOptions{rest, fail_codes_, ignore_fail_codes_, fail_regexes_});
}

}  // namespace parity::cli
