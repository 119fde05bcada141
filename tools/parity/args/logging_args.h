// Logging options shared by every command: -v/-q (repeatable), --verbosity LEVEL [path:LEVEL...], --silent,
// --log-file, --log-format (Polygraphy's names and meanings); and --max-allocation, the limit on one
// buffer made from what the command reads (parity/core/allocation_limit.h).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace parity::cli {

class LoggingArgs {
 public:
  void add_to(CLI::App& app);
  // Applies the options to the global logger; call once after parsing.
  void apply() const;
  // Takes the options given to an enclosing command group (`parity inspect -v model ...`) where
  // this command's own do not set them: -v/-q counts add up, the others fill what is unset.
  void merge_from(const LoggingArgs& group);
  bool verbose() const { return verbose_count_ > 0; }

 private:
  int verbose_count_ = 0;
  int quiet_count_ = 0;
  std::vector<std::string> verbosity_;  // each a level (the default) or path:LEVEL
  bool silent_ = false;
  std::string log_file_;
  std::vector<std::string> log_format_;
  std::string max_allocation_;
};

}  // namespace parity::cli
