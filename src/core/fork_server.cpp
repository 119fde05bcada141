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
#include <utility>

#include "parity/core/error.h"

namespace parity {
namespace {

// One message of a request's header: the size's bytes, and room for the two sockets of its child
// (report, channel) passed along with them. Built in place: the message points into itself.
struct HeaderMessage {
  explicit HeaderMessage(uint64_t& size) : part{&size, sizeof size} {
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
  }
  HeaderMessage(const HeaderMessage&) = delete;
  HeaderMessage& operator=(const HeaderMessage&) = delete;

  iovec part;
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  msghdr message{};
};

// A request's header: its size, with the two sockets of its child (report, channel) passed along.
bool send_header(int fd, uint64_t size, const int (&sockets)[2]) {
  HeaderMessage header_message(size);
  cmsghdr* header = CMSG_FIRSTHDR(&header_message.message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof sockets);
  std::memcpy(CMSG_DATA(header), sockets, sizeof sockets);
  ssize_t sent;
  do sent = ::sendmsg(fd, &header_message.message, MSG_NOSIGNAL);
  while (sent < 0 && errno == EINTR);
  if (sent <= 0) return false;
  // The sockets went with the first byte; the rest of the size follows plainly.
  return channel_send(fd, reinterpret_cast<const char*>(&size) + sent, sizeof size - static_cast<std::size_t>(sent));
}

bool receive_header(int fd, uint64_t& size, int (&sockets)[2]) {
  HeaderMessage header_message(size);
  ssize_t got;
  do got = ::recvmsg(fd, &header_message.message, 0);
  while (got < 0 && errno == EINTR);
  if (got <= 0) return false;
  const cmsghdr* header = CMSG_FIRSTHDR(&header_message.message);
  if (!header || header->cmsg_type != SCM_RIGHTS || header->cmsg_len != CMSG_LEN(sizeof sockets)) return false;
  std::memcpy(sockets, CMSG_DATA(header), sizeof sockets);
  return channel_receive(fd, reinterpret_cast<char*>(&size) + got, sizeof size - static_cast<std::size_t>(got));
}

void send_end(int fd, const ChildProcessEnd& end) {
  const int32_t numbers[3] = {end.exit_status, end.signal, end.thrown ? 1 : 0};
  if (channel_send(fd, numbers, sizeof numbers) && end.thrown) {
    (void)channel_send_string(fd, end.thrown->kind);
    (void)channel_send_string(fd, end.thrown->message);
  }
}

// A request's waiter: runs `work` in a child of its own and reports the child's end on `report`.
[[noreturn]] void wait_for_request(const std::string& request, int report, int channel,
                                   const std::function<void(const std::string&, int)>& work,
                                   const std::string& description) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  std::signal(SIGCHLD, SIG_DFL);  // the server's SIG_IGN would keep waitpid from seeing the child
  std::signal(SIGINT, SIG_IGN);   // Ctrl-C ends the child, whose end this process reports
  ChildProcessEnd end;
  try {
    end = run_in_child_process(
        [&] {
          ::prctl(PR_SET_PDEATHSIG, SIGKILL);
          std::signal(SIGINT, SIG_DFL);
          ::close(report);
          work(request, channel);
        },
        description);
  } catch (const std::exception& error) {
    end.exit_status = 1;
    end.thrown = ThrownInChild{"ResourceLimitError", error.what()};
  }
  send_end(report, end);
  std::_Exit(0);
}

// The server's loop: a request in, a waiter forked for it, until the socket closes.
[[noreturn]] void serve(int fd, const std::function<void(const std::string&, int)>& work,
                        const std::string& description) {
  // The server ends with this process: a parent that dies without closing the socket (SIGKILL) takes it along.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  std::signal(SIGCHLD, SIG_IGN);  // the waiters are reaped by the kernel
  for (;;) {
    uint64_t size = 0;
    int sockets[2] = {-1, -1};
    if (!receive_header(fd, size, sockets)) std::_Exit(0);
    std::string request(size, '\0');
    if (!channel_receive(fd, request.data(), request.size())) std::_Exit(0);
    std::fflush(nullptr);
    const pid_t waiter = ::fork();
    if (waiter == 0) {
      ::close(fd);
      wait_for_request(request, sockets[0], sockets[1], work, description);
    }
    if (waiter < 0) {
      ChildProcessEnd end;
      end.exit_status = 1;
      end.thrown = ThrownInChild{"ResourceLimitError", fmt::format("cannot start {}: {}", description,
                                                                   std::strerror(errno))};
      send_end(sockets[0], end);
    }
    ::close(sockets[0]);
    ::close(sockets[1]);
  }
}

}  // namespace

bool channel_send(int socket, const void* data, std::size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t sent = ::send(socket, bytes, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    bytes += sent;
    size -= static_cast<std::size_t>(sent);
  }
  return true;
}

bool channel_receive(int socket, void* data, std::size_t size) {
  char* bytes = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t got = ::recv(socket, bytes, size, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    bytes += got;
    size -= static_cast<std::size_t>(got);
  }
  return true;
}

bool channel_send_string(int socket, const std::string& text) {
  const uint64_t size = text.size();
  return channel_send(socket, &size, sizeof size) && channel_send(socket, text.data(), text.size());
}

bool channel_receive_string(int socket, std::string& text) {
  uint64_t size = 0;
  if (!channel_receive(socket, &size, sizeof size)) return false;
  text.assign(size, '\0');
  return channel_receive(socket, text.data(), text.size());
}

ForkServer::ForkServer(std::function<void(const std::string& request, int channel)> work, std::string description)
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

ForkServer::Child ForkServer::start(const std::string& request) {
  int report[2], channel[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, report) != 0)
    raise<ResourceLimitError>("cannot create a socket for {}: {}", description_, std::strerror(errno));
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) {
    const int error = errno;
    ::close(report[0]);
    ::close(report[1]);
    raise<ResourceLimitError>("cannot create a socket for {}: {}", description_, std::strerror(error));
  }
  Child child(channel[0], report[0], description_);
  const int theirs[2] = {report[1], channel[1]};
  bool sent;
  {
    std::lock_guard lock(mutex_);
    sent = send_header(socket_, request.size(), theirs) && channel_send(socket_, request.data(), request.size());
  }
  ::close(report[1]);
  ::close(channel[1]);
  if (!sent) raise<ResourceLimitError>("{} has ended", description_);
  return child;
}

ChildProcessEnd ForkServer::run(const std::string& request) { return start(request).wait(); }

ForkServer::Child::Child(int channel, int report, std::string description)
    : channel_(channel), report_(report), description_(std::move(description)) {}

ForkServer::Child::~Child() {
  if (channel_ >= 0) ::close(channel_);
  if (report_ >= 0) ::close(report_);
}

ForkServer::Child::Child(Child&& other) noexcept
    : channel_(std::exchange(other.channel_, -1)),
      report_(std::exchange(other.report_, -1)),
      description_(std::move(other.description_)) {}

ChildProcessEnd ForkServer::Child::wait() {
  if (report_ < 0) raise<InternalError>("{}: a child waited for twice", description_);
  if (channel_ >= 0) ::close(std::exchange(channel_, -1));
  const int report = std::exchange(report_, -1);
  int32_t numbers[3] = {0, 0, 0};
  ChildProcessEnd end;
  std::string kind, message;
  const bool read = channel_receive(report, numbers, sizeof numbers) &&
                    (!numbers[2] || (channel_receive_string(report, kind) && channel_receive_string(report, message)));
  ::close(report);
  if (!read) raise<ResourceLimitError>("{} has ended", description_);
  end.exit_status = numbers[0];
  end.signal = numbers[1];
  if (numbers[2]) end.thrown = ThrownInChild{std::move(kind), std::move(message)};
  return end;
}

}  // namespace parity
