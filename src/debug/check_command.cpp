// Runs a --check command with fork/exec, reading its stdout and stderr through a pipe each (polled,
// so neither fills up while the other is read).
#include "parity/debug/check_command.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "parity/core/child_process.h"
#include "parity/core/error.h"

namespace parity::debug {
namespace {

bool is_executable(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

std::optional<std::string> find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return is_executable(name) ? std::optional(name) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::stringstream folders(path ? path : "");
  std::string folder;
  while (std::getline(folders, folder, ':')) {
    auto candidate = std::filesystem::path(folder.empty() ? "." : folder) / name;
    if (is_executable(candidate)) return candidate.string();
  }
  return std::nullopt;
}

}  // namespace

CheckCommand::CheckCommand(CheckCommandOptions options) : options_(std::move(options)) {
  if (options_.command.empty()) raise<InvalidInputError>("--check: no command given");
  auto program = find_program(options_.command[0]);
  if (!program)
    raise<InvalidInputError>("--check: the command '{}' was not found ({})", options_.command[0],
                             options_.command[0].find('/') != std::string::npos ? "no executable file at that path"
                                                                                 : "not an executable on PATH");
  program_ = *program;
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
  int stdout_ends[2], stderr_ends[2];
  if (::pipe2(stdout_ends, O_CLOEXEC) != 0)
    raise<ResourceLimitError>("--check: cannot create a pipe: {}", std::strerror(errno));
  if (::pipe2(stderr_ends, O_CLOEXEC) != 0) {
    const int error = errno;
    ::close(stdout_ends[0]);
    ::close(stdout_ends[1]);
    raise<ResourceLimitError>("--check: cannot create a pipe: {}", std::strerror(error));
  }
  std::vector<char*> argv;
  for (const auto& word : options_.command) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    for (int end : {stdout_ends[0], stdout_ends[1], stderr_ends[0], stderr_ends[1]}) ::close(end);
    raise<ResourceLimitError>("--check: cannot start '{}': {}", to_string(), std::strerror(error));
  }
  if (child == 0) {
    ::dup2(stdout_ends[1], STDOUT_FILENO);
    ::dup2(stderr_ends[1], STDERR_FILENO);
    ::execv(program_.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(stdout_ends[1]);
  ::close(stderr_ends[1]);
  CheckOutcome outcome;
  pollfd streams[2] = {{stdout_ends[0], POLLIN, 0}, {stderr_ends[0], POLLIN, 0}};
  std::string* captured[2] = {&outcome.standard_output, &outcome.standard_error};
  int open_streams = 2;
  char buffer[4096];
  while (open_streams > 0) {
    if (::poll(streams, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (streams[i].fd < 0 || streams[i].revents == 0) continue;
      ssize_t got = ::read(streams[i].fd, buffer, sizeof buffer);
      if (got > 0) {
        captured[i]->append(buffer, static_cast<std::size_t>(got));
        outcome.output.append(buffer, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(streams[i].fd);
        streams[i].fd = -1;  // poll() skips it from now on
        --open_streams;
      }
    }
  }
  for (const auto& stream : streams)
    if (stream.fd >= 0) ::close(stream.fd);
  const int status = wait_for_child(child).value_or(0);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

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
