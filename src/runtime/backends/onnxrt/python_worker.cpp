#include "python_worker.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "parity/core/child_process.h"
#include "parity/core/error.h"
#include "parity/core/temporary_folder.h"

extern char** environ;

namespace parity::runtime::onnxrt {
namespace {

namespace fs = std::filesystem;

// What a process wrote to its standard error, its last `limit` bytes.
std::string tail_of(const fs::path& file, std::size_t limit = 4000) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  return all.size() > limit ? "..." + all.substr(all.size() - limit) : all;
}

bool send_all(int socket, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t count = ::send(socket, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (count < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    sent += static_cast<std::size_t>(count);
  }
  return true;
}

bool receive_exactly(int socket, std::string& into, std::size_t count) {
  std::size_t start = into.size();
  into.resize(start + count);
  std::size_t received = 0;
  while (received < count) {
    ssize_t got = ::recv(socket, into.data() + start + received, count - received, 0);
    if (got == 0) return false;
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    received += static_cast<std::size_t>(got);
  }
  return true;
}

// One message: "<decimal byte count>\n<bytes>".
std::optional<std::string> receive_message(int socket) {
  std::string header;
  while (true) {
    if (!receive_exactly(socket, header, 1)) return std::nullopt;
    if (header.back() == '\n') break;
    if (header.size() > 20 || !std::isdigit(static_cast<unsigned char>(header.back()))) return std::nullopt;
  }
  header.pop_back();
  if (header.empty()) return std::nullopt;
  std::string message;
  if (!receive_exactly(socket, message, std::stoull(header))) return std::nullopt;
  return message;
}

}  // namespace

std::unique_ptr<PythonWorker> PythonWorker::start(const fs::path& interpreter, const std::string& script,
                                                  std::string& outcome) {
  std::unique_ptr<TemporaryFolder> folder;
  try {
    folder = std::make_unique<TemporaryFolder>("parity-python-worker", "a Python worker");
  } catch (const Error& error) {
    outcome = error.what();
    return nullptr;
  }
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    outcome = fmt::format("could not start that Python: {}", std::strerror(errno));
    return nullptr;
  }
  const std::string errors = (folder->path() / "stderr.txt").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, ends[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, ends[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errors.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::string program = interpreter.string();
  std::string code = script;
  std::string dash_c = "-c";
  std::vector<char*> argv = {program.data(), dash_c.data(), code.data(), nullptr};
  pid_t pid = 0;
  int spawned = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(ends[1]);
  if (spawned != 0) {
    ::close(ends[0]);
    outcome = fmt::format("could not start that Python: {}", std::strerror(spawned));
    return nullptr;
  }
  return std::unique_ptr<PythonWorker>(new PythonWorker(pid, ends[0], std::move(folder)));
}

PythonWorker::~PythonWorker() {
  if (socket_ >= 0) ended("");
}

std::optional<std::string> PythonWorker::call(const std::vector<std::string>& fields, std::string& outcome) {
  if (socket_ < 0) {
    outcome = "the Python worker has already ended";
    return std::nullopt;
  }
  std::string request;
  for (const auto& field : fields) request += fmt::format("{}\n", field.size()) + field;
  if (send_all(socket_, request))
    if (auto answer = receive_message(socket_)) return answer;
  outcome = ended("the Python worker ended before it answered");
  return std::nullopt;
}

std::string PythonWorker::ended(const std::string& what) {
  ::shutdown(socket_, SHUT_RDWR);  // the script reads the end of its input and returns
  ::close(socket_);
  socket_ = -1;
  const int status = wait_for_child(pid_).value_or(0);
  if (what.empty()) return "";
  std::string how = WIFEXITED(status)   ? fmt::format("exit status {}", WEXITSTATUS(status))
                    : WIFSIGNALED(status) ? fmt::format("signal {}", WTERMSIG(status))
                                          : "unknown status";
  std::string errors = tail_of(folder_->path() / "stderr.txt");
  return fmt::format("{} ({}){}", what, how, errors.empty() ? "" : ":\n" + errors);
}

}  // namespace parity::runtime::onnxrt
