#include "args/logging_args.h"

#include "parity/core/allocation_limit.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::cli {

void LoggingArgs::add_to(CLI::App& app) {
  const char* group = "Logging";
  app.add_flag("-v,--verbose", verbose_count_, "Increase logging verbosity; repeat for more (-vv, -vvv)")->group(group);
  app.add_flag("-q,--quiet", quiet_count_, "Decrease logging verbosity; repeat for less (-qq, -qqq)")->group(group);
  app.add_option("--verbosity", verbosity_,
                 "Set the severity directly: ultra_verbose, super_verbose, extra_verbose, verbose, info, "
                 "start, finish, warning, error, critical (overrides -v/-q). Per path: path:LEVEL, the path "
                 "a folder or file of Parity's source tree without src/ (runtime/backends/onnxrt:verbose, "
                 "runtime/runner.cpp:info); the most specific path wins")->group(group);
  app.add_flag("--silent", silent_, "Print nothing")->group(group);
  app.add_option("--log-file", log_file_, "Also write the log to this file (without colours)")->group(group);
  app.add_option("--log-format", log_format_, "Log format: any of timestamp, line-info, no-colors")
      ->check(CLI::IsMember({"timestamp", "line-info", "no-colors"}))
      ->group(group);
  app.add_option("--max-allocation", max_allocation_,
                 "The most bytes one buffer made from what is read may take (a generated input, a file, an npz "
                 "member, a stream such as /dev/zero), checked before allocating; bytes with an optional K, M, G "
                 "or T suffix. Default: PARITY_MAX_ALLOCATION, else the machine's physical memory")
      ->group("Resources");
}

void LoggingArgs::apply() const {
  auto& logger = Logger::global();
  Severity severity = Severity::kInfo;
  static constexpr Severity kMoreVerbose[] = {Severity::kVerbose, Severity::kExtraVerbose,
                                              Severity::kSuperVerbose, Severity::kUltraVerbose};
  static constexpr Severity kLessVerbose[] = {Severity::kStart, Severity::kFinish, Severity::kWarning,
                                              Severity::kError, Severity::kCritical};
  if (verbose_count_ > 0) severity = kMoreVerbose[std::min(verbose_count_, 4) - 1];
  else if (quiet_count_ > 0) severity = kLessVerbose[std::min(quiet_count_, 5) - 1];
  // As Polygraphy's: a level alone sets the default (the last one given wins), path:LEVEL a
  // folder's or file's; -v/-q give the default when --verbosity has no level alone.
  std::vector<PathSeverity> path_rules;
  for (const auto& argument : verbosity_) {
    if (argument.find(':') == std::string::npos) {
      severity = severity_from_name(argument);
      continue;
    }
    try {
      path_rules.push_back(parse_path_severity(argument));
    } catch (Error& error) {
      error.add_context("--verbosity");
      throw;
    }
  }
  logger.set_severity(severity);
  logger.set_path_severities(path_rules);
  logger.set_silent(silent_);
  LogFormat format;
  for (const auto& f : log_format_) {
    if (f == "timestamp") format.timestamp = true;
    if (f == "line-info") format.line_info = true;
    if (f == "no-colors") format.no_colors = true;
  }
  logger.set_format(format);
  if (!log_file_.empty()) logger.set_log_file(log_file_);
  if (!max_allocation_.empty()) set_allocation_limit(parse_allocation_size(max_allocation_, "--max-allocation"));
}

void LoggingArgs::merge_from(const LoggingArgs& group) {
  verbose_count_ += group.verbose_count_;
  quiet_count_ += group.quiet_count_;
  verbosity_.insert(verbosity_.begin(), group.verbosity_.begin(), group.verbosity_.end());
  silent_ = silent_ || group.silent_;
  if (log_file_.empty()) log_file_ = group.log_file_;
  log_format_.insert(log_format_.begin(), group.log_format_.begin(), group.log_format_.end());
  if (max_allocation_.empty()) max_allocation_ = group.max_allocation_;
}

}  // namespace parity::cli
