// `parity debug repeat`: run a --check command repeatedly (Polygraphy's debug repeat) until it
// passes (--until good), fails (--until bad) or N times, sorting --artifacts into good/bad folders
// after each run, then summarize how often each outcome occurred. Each iteration's outcome goes to
// --save-debug-replay; --load-debug-replay takes recorded iterations instead of running them again.
#include "args/check_args.h"
#include "args/replay_args.h"
#include "command.h"
#include "parity/debug/repeated_check.h"

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
    auto replay = replay_.open("debug repeat");
    debug::RepeatedCheck check;
    check.noun = "Iteration";
    check.key = "iteration";
    check.artifact_prefix = "iter";
    check.command = checks_.command().to_string();
    check.run_check = [this](int iteration) { return checks_.run_check(iteration); };
    check.sorter = checks_.artifact_sorter();
    const auto summary = debug::repeat_check(until, replay, check);
    debug::log_repeat_summary(summary, until_, "iteration", "iterations");
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
