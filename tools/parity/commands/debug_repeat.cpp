// `parity debug repeat`: run a --check command repeatedly (Polygraphy's debug repeat) until it
// passes (--until good), fails (--until bad) or N times, sorting --artifacts into good/bad folders
// after each run, then summarize how often each outcome occurred. Each iteration's outcome goes to
// --save-debug-replay; --load-debug-replay takes recorded iterations instead of running them again.
#include <chrono>

#include <fmt/format.h>

#include "args/check_args.h"
#include "args/replay_args.h"
#include "command.h"
#include "parity/core/logger.h"
#include "parity/debug/repeat.h"

namespace parity::cli {
namespace {

class DebugRepeatCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"debug", "repeat"}; }
  std::string description() const override {
    return "Run a command repeatedly, sorting its artifacts into good and bad folders (Polygraphy's `debug repeat`)";
  }

  void add_options(CLI::App& app) override {
    app.add_option("--until", until_,
                   "When to stop: 'good' (the first passing run), 'bad' (the first failing run) or a number of runs")
        ->required()
        ->group("Pass/Fail Reporting");
    checks_.add_to(app, "The command to run, given last: every argument after it is the command's");
    replay_.add_to(app, "iteration");
  }

  int run() override {
    checks_.parse(/*required=*/true);
    const auto until = debug::Until::parse(until_);
    const auto& command = checks_.command();
    const auto sorter = checks_.artifact_sorter();
    auto replay = replay_.open("debug repeat");
    int replayed = 0;
    auto summary = debug::repeat(until, [&](int index) {
      const std::string key = fmt::format("iteration:{}", index);
      debug::RecordedIteration recorded;
      if (auto step = replay.find(key)) {
        recorded = debug::RecordedIteration::from_step(*step, replay.load_path());
        ++replayed;
        if (recorded.failed)
          log::error("FAILED | Iteration {} | exit code {} | from the replay", index, recorded.exit_code);
        else log::finish("PASSED | Iteration {} | exit code {} | from the replay", index, recorded.exit_code);
      } else {
        log::start("RUNNING | Iteration {} | Command: {}", index, command.to_string());
        const auto start = std::chrono::steady_clock::now();
        auto outcome = checks_.run_check(index - 1);
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (outcome.failed)
          log::error("FAILED | Iteration {} | exit code {} | {:.3f}s", index, outcome.exit_code, seconds);
        else log::finish("PASSED | Iteration {} | exit code {} | {:.3f}s", index, outcome.exit_code, seconds);
        sorter.sort(!outcome.failed, fmt::format("iter{}", index));
        recorded = {outcome.failed, outcome.exit_code};
      }
      replay.record(recorded.to_step(key));
      return debug::IterationOutcome{!recorded.failed, debug::outcome_label(recorded.failed, recorded.exit_code)};
    });
    if (summary.stopped_at_limit)
      log::warning("Stopped after {} iterations without reaching --until {}", summary.iterations, until_);
    std::string counts;
    for (const auto& [label, count] : summary.labels) counts += fmt::format("\n    {}: {}", label, count);
    log::finish("Finished {} iteration(s){} | Passed: {}/{} | Pass Rate: {:.1f}%{}", summary.iterations,
                replayed ? fmt::format(" ({} from the replay)", replayed) : "", summary.passed, summary.iterations,
                100.0 * summary.passed / summary.iterations, counts);
    return 0;
  }

 private:
  std::string until_;
  CheckArgs checks_;
  ReplayArgs replay_;
};

PARITY_REGISTER_COMMAND(DebugRepeatCommand);

}  // namespace
}  // namespace parity::cli
