// Processes: the one place Parity starts them. A program run with arguments and environment
// (`Process`, `run_process`), its standard streams piped, sent to /dev/null or a file, read through
// poll() so neither output pipe fills while the other is read, with a deadline after which it is
// killed; a function run in a forked child (`run_in_child_process`); and program lookup on PATH.
// Finding a Python interpreter is python_interpreter.h.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parity/core/error.h"

namespace parity {

// `name` as a path to an executable file: a name with a slash is that path (absolute, normalized);
// one without is looked for in each folder of $PATH in turn (an empty entry is the current
// folder). nullopt when there is no executable regular file.
std::optional<std::filesystem::path> find_program(const std::string& name);

// Whether `path` is a regular file this process may execute.
bool is_executable_file(const std::filesystem::path& path);

// Where one of a child's standard streams goes.
struct ProcessStream {
  enum class Kind { kInherit, kNull, kPipe, kFile, kSameAsStandardError };
  Kind kind = Kind::kInherit;
  std::filesystem::path file;  // kFile: created or truncated, mode 0600

  static ProcessStream inherit() { return {Kind::kInherit, {}}; }
  static ProcessStream null() { return {Kind::kNull, {}}; }  // /dev/null
  static ProcessStream pipe() { return {Kind::kPipe, {}}; }  // read or written through the Process
  static ProcessStream to_file(std::filesystem::path path) { return {Kind::kFile, std::move(path)}; }
  static ProcessStream same_as_standard_error() { return {Kind::kSameAsStandardError, {}}; }  // stdout only
};

struct ProcessSpec {
  std::string program;                 // a path, or a name looked up with find_program
  std::string argument_zero;           // argv[0]; empty: `program` as given
  std::vector<std::string> arguments;  // after argv[0]
  // Set (or replaced) on top of this process's environment, NAME -> value.
  std::vector<std::pair<std::string, std::string>> environment;
  ProcessStream standard_input = ProcessStream::inherit();
  ProcessStream standard_output = ProcessStream::inherit();
  ProcessStream standard_error = ProcessStream::inherit();
  // Descriptors of this process passed on to the child under the same numbers (all others close
  // on exec).
  std::vector<int> inherited_descriptors;
  // The child leads a process group of its own, which the programs it starts join: kill_group
  // ends them all (a child whose own children hang or outlive it).
  bool own_process_group = false;
};

// How a process ended.
struct ProcessEnd {
  int exit_status = 0;     // its exit status (0 when a signal ended it)
  int signal = 0;          // the signal that ended it, else 0
  bool timed_out = false;  // killed because its deadline passed

  bool succeeded() const { return signal == 0 && exit_status == 0; }
  // "exit status 3" or "signal 9"
  std::string describe() const;
};

// " (SIGSEGV)" for the usual ways a process is ended (SEGV, ABRT, BUS, FPE, ILL, KILL, TERM), else "".
std::string signal_name(int signal);

enum class ProcessOutput { kStandardOutput = 0, kStandardError = 1 };

using ProcessClock = std::chrono::steady_clock;
using ProcessDeadline = std::optional<ProcessClock::time_point>;  // nullopt: no deadline

// Raised when a program cannot be started: "cannot start <program>: <strerror>", with the errno
// (ENOENT for a program not found on PATH, as exec would say).
class ProcessStartError : public ResourceLimitError {
 public:
  ProcessStartError(std::string message, int error_number)
      : ResourceLimitError(std::move(message)), error_number_(error_number) {}
  int error_number() const { return error_number_; }

 private:
  int error_number_;
};

// A started program. Destroying one still running kills it (SIGKILL) and reaps it.
class Process {
 public:
  // Starts the program; throws ProcessStartError when it cannot be started.
  explicit Process(const ProcessSpec& spec);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }

  // Writes all of `bytes` to the standard input pipe; false when the child no longer reads it
  // (no SIGPIPE is raised).
  bool write_input(std::string_view bytes);
  void close_input();

  // Reads what is there (waiting until something is, up to `deadline`) from one output pipe into
  // `into` (appended): the byte count, 0 at the pipe's end, nullopt when the deadline passed.
  std::optional<std::size_t> read_output(ProcessOutput stream, std::string& into, ProcessDeadline deadline);

  // Reads both output pipes (those that are pipes) until their ends, each piece handed to
  // `on_data` in the order read; false when the deadline passed first.
  bool read_outputs(const std::function<void(ProcessOutput, std::string_view)>& on_data, ProcessDeadline deadline);

  // Sends `signal` to the child when it has not been reaped.
  void kill(int signal);
  // Sends `signal` to the child's process group (ProcessSpec::own_process_group), when the child
  // has not been reaped: the child and the programs it started that are still in the group.
  void kill_group(int signal);

  // Closes the pipes still open and waits for the child; past `deadline` it is killed (SIGKILL)
  // and the end says timed_out. Throws InternalError when waitpid fails. Once waited, the same
  // end is returned again.
  ProcessEnd wait(ProcessDeadline deadline = std::nullopt);

 private:
  pid_t pid_ = -1;
  int input_ = -1;
  int outputs_[2] = {-1, -1};
  std::optional<ProcessEnd> end_;
  bool killed_for_deadline_ = false;
};

// What run_process collected.
struct ProcessResult {
  ProcessEnd end;
  std::string standard_output;  // when piped
  std::string standard_error;   // when piped
  std::string interleaved;      // both, in the order read
};

// Starts the program, reads its output pipes to their ends and waits; past `timeout` it is killed
// (the result's end says timed_out). Standard input defaults to what the spec says.
ProcessResult run_process(const ProcessSpec& spec, std::optional<std::chrono::milliseconds> timeout = std::nullopt);

// What the function run in a child process threw.
struct ThrownInChild {
  std::string kind;     // the parity::Error subclass's name ("InvalidInputError", "Error"); empty for another exception
  std::string message;  // its what()

  // Throws the same kind of parity::Error with the same message (Error for another exception).
  [[noreturn]] void rethrow() const;
};

// How a child process running a function ended.
struct ChildProcessEnd {
  int exit_status = 0;  // its exit status (0 when a signal ended it)
  int signal = 0;       // the signal that ended it, else 0
  bool timed_out = false;  // it was still running at the time limit and was killed (signal SIGKILL)
  std::optional<ThrownInChild> thrown;
};

// Forks and runs `work` in the child, then waits for the child. The child flushes C stdio and ends
// with _Exit (no atexit handlers or static destructors: they are the parent's), with status 0 when
// `work` returned, 1 when it threw a parity::Error and 2 when it threw anything else; what it threw
// comes back through a pipe. Buffered C stdio is flushed before the fork, so nothing is written
// twice. `description` names the child in the errors raised when it cannot be started or waited for
// (ResourceLimitError "cannot start <description>: ...", InternalError). Only the calling thread
// exists in the child: call it before the caller starts threads of its own that `work` needs.
// With `time_limit`, a child still running when it passes is killed and `timed_out` set.
ChildProcessEnd run_in_child_process(const std::function<void()>& work, const std::string& description,
                                     std::optional<std::chrono::milliseconds> time_limit = std::nullopt);

}  // namespace parity
