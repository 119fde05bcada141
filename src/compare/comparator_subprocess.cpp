// Comparator::run with RunOptions::use_subprocess: each runner runs in a forked child process.
// The child activates the runner, runs every iteration (detail::run_runner, so it logs the same
// lines) and writes its results (Polygraphy's RunResults JSON) and, for the first runner, the
// feeds it made into a private temporary folder; the parent reads them back. An Error in the child
// comes back as the same kind of Error; a child killed by a signal or exiting without results is
// reported as an Error naming the runner, and the parent goes on to report it like any failure.
#include <cstdlib>
#include <filesystem>

#include "comparator_internal.h"
#include "parity/compare/run_results.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/core/process.h"
#include "parity/core/temporary_folder.h"

namespace parity::compare::detail {

namespace fs = std::filesystem;

RunnerResults run_runner_in_subprocess(runtime::Runner& runner, std::vector<NamedTensors>& feeds,
                                       const RunnerSetup& setup) {
  TemporaryFolder folder("parity-subprocess", "a runner's subprocess");
  log::verbose("Running {} in a subprocess", runner.name());
  const ChildProcessEnd end = with_context(runner.name(), [&] {
    return run_in_child_process(
        [&] {
          // The child's own temporary folders (a data loader script's) go inside the parent's, which
          // the parent removes even when the child crashes.
          ::setenv("TMPDIR", folder.path().c_str(), 1);
          RunnerSetup child_setup = setup;
          child_setup.on_feeds = nullptr;  // the parent calls it with the feeds that come back
          RunResults results{run_runner(runner, feeds, child_setup)};
          if (setup.data_loader) save_inputs_json(folder.path() / "feeds.json", feeds);
          save_run_results(folder.path() / "results.json", results);
        },
        "a subprocess");
  });
  if (end.signal != 0)
    raise<Error>("{} | Terminated prematurely: its subprocess ended with signal {}{} (its backend crashed or was "
                 "killed)",
                 runner.name(), end.signal, signal_name(end.signal));
  if (end.thrown) end.thrown->rethrow();
  const fs::path results_file = folder.path() / "results.json";
  if (end.exit_status != 0 || !fs::exists(results_file))
    raise<Error>("{} | Terminated prematurely: its subprocess exited with status {} without results", runner.name(),
                 end.exit_status);
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
