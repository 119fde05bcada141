#include "parity/core/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "parity/core/error.h"

namespace parity {
namespace {

// The Error subclass's name, so the parent can throw the same kind.
std::string error_kind(const Error& error) {
  if (dynamic_cast<const InvalidInputError*>(&error)) return "InvalidInputError";
  if (dynamic_cast<const FileError*>(&error)) return "FileError";
  if (dynamic_cast<const UnsupportedError*>(&error)) return "UnsupportedError";
  if (dynamic_cast<const ResourceLimitError*>(&error)) return "ResourceLimitError";
  if (dynamic_cast<const InternalError*>(&error)) return "InternalError";
  return "Error";
}

void write_all(int fd, const std::string& text) {
  std::size_t written = 0;
  while (written < text.size()) {
    ssize_t count = ::write(fd, text.data() + written, text.size() - written);
    if (count <= 0 && errno != EINTR) break;
    if (count > 0) written += static_cast<std::size_t>(count);
  }
}

// In the child: runs `work`, writes "<kind>\n<message>" to `report_fd` when it throws, and exits.
[[noreturn]] void child_main(const std::function<void()>& work, int report_fd) {
  int status = 0;
  std::string report;
  try {
    work();
  } catch (const Error& error) {
    status = 1;
    report = error_kind(error) + "\n" + error.what();
  } catch (const std::exception& error) {
    status = 2;
    report = std::string("\n") + error.what();
  } catch (...) {
    status = 2;
    report = "\nunknown exception";
  }
  std::fflush(nullptr);
  write_all(report_fd, report);
  std::_Exit(status);
}

}  // namespace

void ThrownInChild::rethrow() const {
  if (kind == "InvalidInputError") throw InvalidInputError(message);
  if (kind == "FileError") throw FileError(message);
  if (kind == "UnsupportedError") throw UnsupportedError(message);
  if (kind == "ResourceLimitError") throw ResourceLimitError(message);
  if (kind == "InternalError") throw InternalError(message);
  throw Error(message);
}

std::optional<int> wait_for_child(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return std::nullopt;
  }
  return status;
}

std::string read_to_end(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    ssize_t count = ::read(fd, buffer, sizeof buffer);
    if (count > 0) text.append(buffer, static_cast<std::size_t>(count));
    else if (count == 0 || errno != EINTR) break;
  }
  return text;
}

ChildProcessEnd run_in_child_process(const std::function<void()>& work, const std::string& description) {
  int pipe_ends[2];
  if (::pipe2(pipe_ends, O_CLOEXEC) != 0)
    raise<ResourceLimitError>("cannot create a pipe for {}: {}", description, std::strerror(errno));
  // Buffered output (the console, a --log-file) would otherwise be written by both processes.
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::close(pipe_ends[0]);
    ::close(pipe_ends[1]);
    raise<ResourceLimitError>("cannot start {}: {}", description, std::strerror(error));
  }
  if (child == 0) {
    ::close(pipe_ends[0]);
    child_main(work, pipe_ends[1]);
  }
  ::close(pipe_ends[1]);
  const std::string report = read_to_end(pipe_ends[0]);
  ::close(pipe_ends[0]);
  const std::optional<int> status = wait_for_child(child);
  if (!status) raise<InternalError>("waiting for {} failed: {}", description, std::strerror(errno));
  ChildProcessEnd end;
  if (WIFSIGNALED(*status)) end.signal = WTERMSIG(*status);
  else end.exit_status = WEXITSTATUS(*status);
  if (!report.empty()) {
    const auto newline = report.find('\n');
    end.thrown = ThrownInChild{report.substr(0, newline), report.substr(newline + 1)};
  }
  return end;
}

}  // namespace parity
