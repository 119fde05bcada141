// Starting programs (posix_spawn), reading their pipes (poll), waiting for and killing them, a
// function run in a forked child, and program lookup on PATH.
#include "parity/core/process.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "parity/core/error.h"

extern char** environ;

namespace parity {
namespace {

namespace fs = std::filesystem;

// waitpid(child), retried when a signal interrupts it: the child's wait status, or nullopt when
// waitpid failed (errno says why).
std::optional<int> wait_for_child(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return std::nullopt;
  }
  return status;
}

// Reads `fd` until its end (or an error other than an interruption) and returns what it read.
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

void write_all(int fd, const std::string& text) {
  std::size_t written = 0;
  while (written < text.size()) {
    ssize_t count = ::write(fd, text.data() + written, text.size() - written);
    if (count <= 0 && errno != EINTR) break;
    if (count > 0) written += static_cast<std::size_t>(count);
  }
}

void close_descriptor(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Milliseconds from now to `deadline` for poll(): -1 without one, 0 once it passed.
int poll_timeout(ProcessDeadline deadline) {
  if (!deadline) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - ProcessClock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

ProcessEnd end_from_status(int status) {
  ProcessEnd end;
  if (WIFSIGNALED(status)) end.signal = WTERMSIG(status);
  else end.exit_status = WEXITSTATUS(status);
  return end;
}

// The child's environment: this process's, with `overrides` set or replaced.
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::map<std::string, std::string> replaced(overrides.begin(), overrides.end());
  std::vector<std::string> entries;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view text(*entry);
    if (!replaced.count(std::string(text.substr(0, text.find('='))))) entries.emplace_back(text);
  }
  for (const auto& [name, value] : overrides) entries.push_back(name + "=" + value);
  return entries;
}

// The pieces of a spawn that must be released whatever happens.
struct SpawnResources {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  int pipes[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};  // stdin, stdout, stderr

  SpawnResources() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
  }
  ~SpawnResources() {
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    for (auto& ends : pipes)
      for (int& fd : ends) close_descriptor(fd);
  }
};

// Throws the ProcessStartError for `program` and `error_number`.
[[noreturn]] void start_failed(const std::string& program, int error_number) {
  throw ProcessStartError(fmt::format("cannot start {}: {}", program, std::strerror(error_number)), error_number);
}

// In a child running a function: the Error subclass's name, so the parent can throw the same kind.
std::string error_kind(const Error& error) {
  if (dynamic_cast<const InvalidInputError*>(&error)) return "InvalidInputError";
  if (dynamic_cast<const FileError*>(&error)) return "FileError";
  if (dynamic_cast<const UnsupportedError*>(&error)) return "UnsupportedError";
  if (dynamic_cast<const ResourceLimitError*>(&error)) return "ResourceLimitError";
  if (dynamic_cast<const InternalError*>(&error)) return "InternalError";
  return "Error";
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

bool is_executable_file(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

std::optional<fs::path> find_program(const std::string& name) {
  std::error_code error;
  if (name.find('/') != std::string::npos) {
    fs::path path = fs::absolute(name, error).lexically_normal();
    return is_executable_file(path) ? std::optional(path) : std::nullopt;
  }
  if (name.empty()) return std::nullopt;
  const char* variable = std::getenv("PATH");
  std::string_view folders(variable ? variable : "");
  while (!folders.empty()) {
    auto colon = folders.find(':');
    std::string folder(folders.substr(0, colon));
    folders = colon == std::string_view::npos ? std::string_view() : folders.substr(colon + 1);
    fs::path candidate = fs::absolute(fs::path(folder.empty() ? "." : folder) / name, error).lexically_normal();
    if (is_executable_file(candidate)) return candidate;
  }
  return std::nullopt;
}

std::string ProcessEnd::describe() const {
  return signal != 0 ? fmt::format("signal {}", signal) : fmt::format("exit status {}", exit_status);
}

std::string signal_name(int signal) {
  switch (signal) {
    case SIGSEGV: return " (SIGSEGV)";
    case SIGABRT: return " (SIGABRT)";
    case SIGBUS: return " (SIGBUS)";
    case SIGFPE: return " (SIGFPE)";
    case SIGILL: return " (SIGILL)";
    case SIGKILL: return " (SIGKILL)";
    case SIGTERM: return " (SIGTERM)";
    default: return "";
  }
}

Process::Process(const ProcessSpec& spec) {
  std::string path = spec.program;
  if (spec.program.find('/') == std::string::npos) {
    auto found = find_program(spec.program);
    if (!found) start_failed(spec.program, ENOENT);
    path = found->string();
  }
  SpawnResources resources;
  const ProcessStream* streams[3] = {&spec.standard_input, &spec.standard_output, &spec.standard_error};
  for (int i = 0; i < 3; ++i)
    if (streams[i]->kind == ProcessStream::Kind::kPipe && ::pipe2(resources.pipes[i], O_CLOEXEC) != 0)
      start_failed(spec.program, errno);
  // Standard error before standard output, which may be a copy of it.
  for (int i : {0, 2, 1}) {
    const ProcessStream& stream = *streams[i];
    const int child_end = i == 0 ? 0 : 1;  // the read end of stdin's pipe, the write end of the others'
    switch (stream.kind) {
      case ProcessStream::Kind::kInherit: break;
      case ProcessStream::Kind::kNull:
        posix_spawn_file_actions_addopen(&resources.actions, i, "/dev/null", i == 0 ? O_RDONLY : O_WRONLY, 0);
        break;
      case ProcessStream::Kind::kPipe:
        posix_spawn_file_actions_adddup2(&resources.actions, resources.pipes[i][child_end], i);
        break;
      case ProcessStream::Kind::kFile:
        posix_spawn_file_actions_addopen(&resources.actions, i, stream.file.c_str(),
                                         i == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, 0600);
        break;
      case ProcessStream::Kind::kSameAsStandardError:
        posix_spawn_file_actions_adddup2(&resources.actions, STDERR_FILENO, i);
        break;
    }
  }
  // dup2 onto the same number clears close-on-exec (glibc 2.29 and later).
  for (int fd : spec.inherited_descriptors) posix_spawn_file_actions_adddup2(&resources.actions, fd, fd);

  std::vector<std::string> arguments{spec.argument_zero.empty() ? spec.program : spec.argument_zero};
  arguments.insert(arguments.end(), spec.arguments.begin(), spec.arguments.end());
  std::vector<char*> argv;
  for (auto& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  std::vector<std::string> environment;
  std::vector<char*> envp;
  if (!spec.environment.empty()) {
    environment = child_environment(spec.environment);
    for (auto& entry : environment) envp.push_back(entry.data());
    envp.push_back(nullptr);
  }
  posix_spawnattr_t* attributes = nullptr;
  if (spec.own_process_group) {
    attributes = &resources.attributes;
    posix_spawnattr_setflags(attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(attributes, 0);  // a new group, whose id is the child's pid
  }
  const int spawned = ::posix_spawn(&pid_, path.c_str(), &resources.actions, attributes, argv.data(),
                                    envp.empty() ? environ : envp.data());
  if (spawned != 0) start_failed(spec.program, spawned);
  input_ = std::exchange(resources.pipes[0][1], -1);
  outputs_[0] = std::exchange(resources.pipes[1][0], -1);
  outputs_[1] = std::exchange(resources.pipes[2][0], -1);
}

Process::~Process() {
  if (end_) return;
  kill(SIGKILL);
  try {
    wait();
  } catch (const Error&) {
    // Nothing more can be done for a child that cannot be waited for.
  }
}

bool Process::write_input(std::string_view bytes) {
  if (input_ < 0) return false;
  // SIGPIPE is blocked for this thread while writing; one raised by a closed pipe is taken back.
  sigset_t pipe_signal, previous;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &previous);
  bool written = true;
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t count = ::write(input_, bytes.data() + sent, bytes.size() - sent);
    if (count >= 0) {
      sent += static_cast<std::size_t>(count);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EPIPE && !sigismember(&previous, SIGPIPE)) {
      const timespec no_wait{0, 0};
      while (::sigtimedwait(&pipe_signal, nullptr, &no_wait) < 0 && errno == EINTR) {
      }
    }
    written = false;
    break;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return written;
}

void Process::close_input() { close_descriptor(input_); }

std::optional<std::size_t> Process::read_output(ProcessOutput stream, std::string& into, ProcessDeadline deadline) {
  int& fd = outputs_[static_cast<int>(stream)];
  if (fd < 0) return 0;
  char buffer[65536];
  for (;;) {
    pollfd ready{fd, POLLIN, 0};
    int polled = ::poll(&ready, 1, poll_timeout(deadline));
    if (polled < 0) {
      if (errno == EINTR) continue;
      return 0;
    }
    if (polled == 0) return std::nullopt;
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      into.append(buffer, static_cast<std::size_t>(got));
      return static_cast<std::size_t>(got);
    }
    if (got < 0 && errno == EINTR) continue;
    return 0;
  }
}

bool Process::read_outputs(const std::function<void(ProcessOutput, std::string_view)>& on_data,
                           ProcessDeadline deadline) {
  pollfd streams[2] = {{outputs_[0], POLLIN, 0}, {outputs_[1], POLLIN, 0}};
  int open_streams = (outputs_[0] >= 0) + (outputs_[1] >= 0);
  char buffer[4096];
  while (open_streams > 0) {
    int polled = ::poll(streams, 2, poll_timeout(deadline));
    if (polled < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (polled == 0) return false;
    for (int i = 0; i < 2; ++i) {
      if (streams[i].fd < 0 || streams[i].revents == 0) continue;
      ssize_t got = ::read(streams[i].fd, buffer, sizeof buffer);
      if (got > 0) {
        on_data(static_cast<ProcessOutput>(i), std::string_view(buffer, static_cast<std::size_t>(got)));
      } else if (got == 0 || errno != EINTR) {
        close_descriptor(outputs_[i]);
        streams[i].fd = -1;  // poll() skips it from now on
        --open_streams;
      }
    }
  }
  return true;
}

void Process::kill(int signal) {
  if (!end_ && pid_ > 0) ::kill(pid_, signal);
}

void Process::kill_group(int signal) {
  if (!end_ && pid_ > 0) ::kill(-pid_, signal);
}

ProcessEnd Process::wait(ProcessDeadline deadline) {
  if (end_) return *end_;
  close_descriptor(input_);
  close_descriptor(outputs_[0]);
  close_descriptor(outputs_[1]);
  bool timed_out = false;
  if (deadline) {
    // Polled: waitpid has no timeout of its own.
    for (auto pause = std::chrono::milliseconds(1);; pause = std::min(pause * 2, std::chrono::milliseconds(50))) {
      int status = 0;
      pid_t waited = ::waitpid(pid_, &status, WNOHANG);
      if (waited == pid_) {
        end_ = end_from_status(status);
        return *end_;
      }
      if (waited < 0 && errno != EINTR)
        raise<InternalError>("waiting for process {} failed: {}", pid_, std::strerror(errno));
      if (ProcessClock::now() >= *deadline) break;
      std::this_thread::sleep_for(pause);
    }
    ::kill(pid_, SIGKILL);
    timed_out = true;
  }
  const std::optional<int> status = wait_for_child(pid_);
  if (!status) raise<InternalError>("waiting for process {} failed: {}", pid_, std::strerror(errno));
  end_ = end_from_status(*status);
  end_->timed_out = timed_out;
  return *end_;
}

ProcessResult run_process(const ProcessSpec& spec, std::optional<std::chrono::milliseconds> timeout) {
  ProcessDeadline deadline;
  if (timeout) deadline = ProcessClock::now() + *timeout;
  Process process(spec);
  process.close_input();
  ProcessResult result;
  std::string* captured[2] = {&result.standard_output, &result.standard_error};
  const bool finished = process.read_outputs(
      [&](ProcessOutput stream, std::string_view data) {
        captured[static_cast<int>(stream)]->append(data);
        result.interleaved.append(data);
      },
      deadline);
  if (!finished) {
    process.kill(SIGKILL);
    result.end = process.wait();
    result.end.timed_out = true;
    return result;
  }
  result.end = process.wait(deadline);
  return result;
}

void ThrownInChild::rethrow() const {
  if (kind == "InvalidInputError") throw InvalidInputError(message);
  if (kind == "FileError") throw FileError(message);
  if (kind == "UnsupportedError") throw UnsupportedError(message);
  if (kind == "ResourceLimitError") throw ResourceLimitError(message);
  if (kind == "InternalError") throw InternalError(message);
  throw Error(message);
}

ChildProcessEnd run_in_child_process(const std::function<void()>& work, const std::string& description,
                                     std::optional<std::chrono::milliseconds> time_limit) {
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
  ChildProcessEnd end;
  std::string report;
  if (time_limit) {
    // The pipe's end comes with the child's: wait for it no longer than the limit, then kill.
    const auto deadline = std::chrono::steady_clock::now() + *time_limit;
    char buffer[4096];
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd ready{pipe_ends[0], POLLIN, 0};
      const int polled = left.count() > 0 ? ::poll(&ready, 1, static_cast<int>(std::min<int64_t>(left.count(), 60'000)))
                                          : 0;
      if (polled < 0 && errno == EINTR) continue;
      if (polled == 0 && std::chrono::steady_clock::now() < deadline) continue;
      if (polled <= 0) {
        ::kill(child, SIGKILL);
        end.timed_out = true;
        break;
      }
      const ssize_t count = ::read(pipe_ends[0], buffer, sizeof buffer);
      if (count > 0) report.append(buffer, static_cast<std::size_t>(count));
      else if (count == 0 || errno != EINTR) break;
    }
  } else {
    report = read_to_end(pipe_ends[0]);
  }
  ::close(pipe_ends[0]);
  const std::optional<int> status = wait_for_child(child);
  if (!status) raise<InternalError>("waiting for {} failed: {}", description, std::strerror(errno));
  if (WIFSIGNALED(*status)) end.signal = WTERMSIG(*status);
  else end.exit_status = WEXITSTATUS(*status);
  if (!report.empty()) {
    const auto newline = report.find('\n');
    end.thrown = ThrownInChild{report.substr(0, newline), report.substr(newline + 1)};
  }
  return end;
}

}  // namespace parity
