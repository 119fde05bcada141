#include "parity/debug/check_command.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::debug {

CandidateVerdict run_check_command(const CheckCommandOptions& options) {
  // The command's stderr joins its stdout, so --fail-regex sees both.
  const std::string shell_command = fmt::format("( {} ) 2>&1", options.command);
  std::FILE* pipe = ::popen(shell_command.c_str(), "r");
  if (!pipe) raise<Error>("--check: cannot start the command '{}'", options.command);
  std::string output;
  std::array<char, 4096> buffer;
  while (std::size_t read = std::fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), read);
  const int status = ::pclose(pipe);
  if (status == -1) raise<Error>("--check: cannot wait for the command '{}'", options.command);
  log::verbose("--check output:\n{}", output);
  const int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (exit_code != 0) return {false, fmt::format("the check exited with status {}", exit_code)};
  if (options.fail_regex && std::regex_search(output, *options.fail_regex))
    return {false, fmt::format("the check's output matches --fail-regex '{}'", options.fail_regex_text)};
  return {true, "the check exited with status 0"};
}

}  // namespace parity::debug
