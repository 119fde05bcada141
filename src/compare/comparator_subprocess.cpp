// Comparator::run with RunOptions::use_subprocess: each runner runs in a forked child process.
// The child activates the runner, runs every iteration (detail::run_runner, so it logs the same
// lines) and writes its results (Polygraphy's RunResults JSON) and, for the first runner, the
// feeds it made into a private temporary folder; the parent reads them back. An Error in the child
// comes back as the same kind of Error; a child killed by a signal or exiting without results is
// reported as an Error naming the runner, and the parent goes on to report it like any failure.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "comparator_internal.h"
#include "parity/compare/run_results.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/core/temporary_folder.h"

namespace parity::compare::detail {
namespace {

namespace fs = std::filesystem;

// The Error subclass's name, so the parent can throw the same kind.
std::string error_kind(const Error& error) {
  if (dynamic_cast<const InvalidInputError*>(&error)) return "InvalidInputError";
  if (dynamic_cast<const FileError*>(&error)) return "FileError";
  if (dynamic_cast<const UnsupportedError*>(&error)) return "UnsupportedError";
  if (dynamic_cast<const ResourceLimitError*>(&error)) return "ResourceLimitError";
  if (dynamic_cast<const InternalError*>(&error)) return "InternalError";
  return "Error";
}

[[noreturn]] void rethrow(const std::string& kind, const std::string& message) {
  if (kind == "InvalidInputError") throw InvalidInputError(message);
  if (kind == "FileError") throw FileError(message);
  if (kind == "UnsupportedError") throw UnsupportedError(message);
  if (kind == "ResourceLimitError") throw ResourceLimitError(message);
  if (kind == "InternalError") throw InternalError(message);
  throw Error(message);
}

// " (SIGSEGV)" for the usual ways a process is ended, else nothing.
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

// In the child: never returns. Exit status 0 with results written, 1 with error.txt written.
[[noreturn]] void child_main(runtime::Runner& runner, std::vector<NamedTensors>& feeds, const RunnerSetup& setup,
                             const fs::path& folder) {
  int status = 0;
  // The child's own temporary folders (a data loader script's) go inside the parent's, which the
  // parent removes even when the child crashes.
  ::setenv("TMPDIR", folder.c_str(), 1);
  try {
    RunnerSetup child_setup = setup;
    child_setup.on_feeds = nullptr;  // the parent calls it with the feeds that come back
    RunResults results{run_runner(runner, feeds, child_setup)};
    if (setup.data_loader) save_inputs_json(folder / "feeds.json", feeds);
    save_run_results(folder / "results.json", results);
  } catch (const std::exception& error) {
    const auto* parity_error = dynamic_cast<const Error*>(&error);
    std::ofstream out(folder / "error.txt", std::ios::binary);
    out << (parity_error ? error_kind(*parity_error) : "Error") << "\n" << error.what();
    status = 1;
  } catch (...) {
    std::ofstream out(folder / "error.txt", std::ios::binary);
    out << "Error\nunknown exception";
    status = 1;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  // No atexit handlers or static destructors: they belong to the parent.
  std::_Exit(status);
}

}  // namespace

RunnerResults run_runner_in_subprocess(runtime::Runner& runner, std::vector<NamedTensors>& feeds,
                                       const RunnerSetup& setup) {
  TemporaryFolder folder("parity-subprocess", "a runner's subprocess");
  // Buffered output (the console, a --log-file) would otherwise be written by both processes.
  std::fflush(nullptr);
  log::verbose("Running {} in a subprocess", runner.name());
  const pid_t child = ::fork();
  if (child < 0) raise<ResourceLimitError>("{}: cannot start a subprocess: {}", runner.name(), std::strerror(errno));
  if (child == 0) child_main(runner, feeds, setup, folder.path());

  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR)
      raise<InternalError>("{}: waiting for its subprocess failed: {}", runner.name(), std::strerror(errno));
  }
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    raise<Error>("{} | Terminated prematurely: its subprocess ended with signal {}{} (its backend crashed or was "
                 "killed)",
                 runner.name(), signal, signal_name(signal));
  }
  const fs::path error_file = folder.path() / "error.txt";
  if (fs::exists(error_file)) {
    std::ifstream in(error_file, std::ios::binary);
    std::string kind;
    std::getline(in, kind);
    std::stringstream message;
    message << in.rdbuf();
    rethrow(kind, message.str());
  }
  const fs::path results_file = folder.path() / "results.json";
  if (WEXITSTATUS(status) != 0 || !fs::exists(results_file))
    raise<Error>("{} | Terminated prematurely: its subprocess exited with status {} without results", runner.name(),
                 WEXITSTATUS(status));
  RunResults results = load_run_results(results_file);
  if (results.size() != 1)
    raise<InternalError>("{}: the subprocess returned {} runner results, expected 1", runner.name(), results.size());
  if (setup.data_loader) {
    feeds = load_inputs_json(folder.path() / "feeds.json");
    if (setup.on_feeds) setup.on_feeds(feeds);
  }
  return std::move(results.front());
}

}  // namespace parity::compare::detail
