// Running a function in a forked child process, and the small POSIX pieces that every place that
// starts a process needs (waiting for it, reading a pipe to its end).
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

namespace parity {

// What the function run in a child process threw.
struct ThrownInChild {
  std::string kind;     // the parity::Error subclass's name ("InvalidInputError", "Error"); empty for another exception
  std::string message;  // its what()

  // Throws the same kind of parity::Error with the same message (Error for another exception).
  [[noreturn]] void rethrow() const;
};

// How a child process ended.
struct ChildProcessEnd {
  int exit_status = 0;  // its exit status (0 when a signal ended it)
  int signal = 0;       // the signal that ended it, else 0
  std::optional<ThrownInChild> thrown;
};

// Forks and runs `work` in the child, then waits for the child. The child flushes C stdio and ends
// with _Exit (no atexit handlers or static destructors: they are the parent's), with status 0 when
// `work` returned, 1 when it threw a parity::Error and 2 when it threw anything else; what it threw
// comes back through a pipe. Buffered C stdio is flushed before the fork, so nothing is written
// twice. `description` names the child in the errors raised when it cannot be started or waited for
// (ResourceLimitError "cannot start <description>: ...", InternalError). Only the calling thread
// exists in the child: call it before the caller starts threads of its own that `work` needs.
ChildProcessEnd run_in_child_process(const std::function<void()>& work, const std::string& description);

// waitpid(child), retried when a signal interrupts it: the child's wait status, or nullopt when
// waitpid failed (errno says why).
std::optional<int> wait_for_child(pid_t child);

// Reads `fd` until its end (or an error other than an interruption) and returns what it read.
std::string read_to_end(int fd);

}  // namespace parity
