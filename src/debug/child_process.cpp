#include "parity/debug/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "parity/core/error.h"

namespace parity::debug {

void run_in_child_process(const std::function<void()>& work) {
  int pipe_ends[2];
  if (::pipe2(pipe_ends, O_CLOEXEC) != 0)
    raise<ResourceLimitError>("cannot create a pipe for a child process: {}", std::strerror(errno));
  std::fflush(nullptr);
  pid_t child = ::fork();
  if (child < 0) raise<ResourceLimitError>("cannot start a child process: {}", std::strerror(errno));
  if (child == 0) {
    ::close(pipe_ends[0]);
    int code = 0;
    std::string message;
    try {
      work();
    } catch (const Error& e) {
      code = 1;
      message = e.what();
    } catch (const std::exception& e) {
      code = 2;
      message = e.what();
    }
    std::fflush(nullptr);
    std::size_t written = 0;
    while (written < message.size()) {
      ssize_t n = ::write(pipe_ends[1], message.data() + written, message.size() - written);
      if (n <= 0 && errno != EINTR) break;
      if (n > 0) written += static_cast<std::size_t>(n);
    }
    ::_exit(code);
  }
  ::close(pipe_ends[1]);
  std::string message;
  char buffer[4096];
  for (;;) {
    ssize_t got = ::read(pipe_ends[0], buffer, sizeof buffer);
    if (got > 0) message.append(buffer, static_cast<std::size_t>(got));
    else if (got == 0 || errno != EINTR) break;
  }
  ::close(pipe_ends[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) raise<InternalError>("the child process was killed by signal {}", WTERMSIG(status));
  const int code = WEXITSTATUS(status);
  if (code == 1) raise<InvalidInputError>("{}", message);
  if (code != 0) raise<InternalError>("{}", message.empty() ? "the child process failed" : message);
}

}  // namespace parity::debug
