#include "parity/core/fork_server.h"

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "parity/core/error.h"

namespace parity {
namespace {

bool send_all(int fd, const void* data, std::size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t sent = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    bytes += sent;
    size -= static_cast<std::size_t>(sent);
  }
  return true;
}

bool receive_all(int fd, void* data, std::size_t size) {
  char* bytes = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t got = ::recv(fd, bytes, size, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    bytes += got;
    size -= static_cast<std::size_t>(got);
  }
  return true;
}

// A string as its 64-bit length and its bytes.
bool send_string(int fd, const std::string& text) {
  const uint64_t size = text.size();
  return send_all(fd, &size, sizeof size) && send_all(fd, text.data(), text.size());
}

std::optional<std::string> receive_string(int fd) {
  uint64_t size = 0;
  if (!receive_all(fd, &size, sizeof size)) return std::nullopt;
  std::string text(size, '\0');
  if (!receive_all(fd, text.data(), text.size())) return std::nullopt;
  return text;
}

// The server's loop: a request in, its child's end out, until the socket closes.
[[noreturn]] void serve(int fd, const std::function<void(const std::string&)>& work, const std::string& description) {
  // The server ends with this process: a parent that dies without closing the socket (SIGKILL) takes it along.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  for (;;) {
    std::optional<std::string> request = receive_string(fd);
    if (!request) std::_Exit(0);
    ChildProcessEnd end;
    try {
      end = run_in_child_process([&] { work(*request); }, description);
    } catch (const std::exception& error) {
      end.exit_status = 1;
      end.thrown = ThrownInChild{"ResourceLimitError", error.what()};
    }
    request.reset();
    const int32_t numbers[3] = {end.exit_status, end.signal, end.thrown ? 1 : 0};
    if (!send_all(fd, numbers, sizeof numbers)) std::_Exit(0);
    if (end.thrown && !(send_string(fd, end.thrown->kind) && send_string(fd, end.thrown->message))) std::_Exit(0);
  }
}

}  // namespace

ForkServer::ForkServer(std::function<void(const std::string& request)> work, std::string description)
    : description_(std::move(description)) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    raise<ResourceLimitError>("cannot create a socket for {}: {}", description_, std::strerror(errno));
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::close(ends[0]);
    ::close(ends[1]);
    raise<ResourceLimitError>("cannot start {}: {}", description_, std::strerror(error));
  }
  if (child == 0) {
    ::close(ends[0]);
    serve(ends[1], work, description_);
  }
  ::close(ends[1]);
  pid_ = child;
  socket_ = ends[0];
}

ForkServer::~ForkServer() {
  ::close(socket_);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

ChildProcessEnd ForkServer::run(const std::string& request) {
  std::lock_guard lock(mutex_);
  int32_t numbers[3] = {0, 0, 0};
  if (!send_string(socket_, request) || !receive_all(socket_, numbers, sizeof numbers))
    raise<ResourceLimitError>("{} has ended", description_);
  ChildProcessEnd end;
  end.exit_status = numbers[0];
  end.signal = numbers[1];
  if (numbers[2]) {
    std::optional<std::string> kind = receive_string(socket_);
    std::optional<std::string> message = kind ? receive_string(socket_) : std::nullopt;
    if (!message) raise<ResourceLimitError>("{} has ended", description_);
    end.thrown = ThrownInChild{std::move(*kind), std::move(*message)};
  }
  return end;
}

}  // namespace parity
