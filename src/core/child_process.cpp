#include "parity/core/child_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace parity {

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

}  // namespace parity
