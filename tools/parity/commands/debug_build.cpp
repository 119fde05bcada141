// `parity debug build`: compile the model with OpenVINO again and again (Polygraphy's debug build),
// saving each compiled model (a .ovc file, as `convert --openvino` writes) to --iter-artifact and
// running the --check command on it, until it passes, fails or N times; --artifacts sorted into
// good/bad. Each build runs in a child process. OpenVINO's CPU compilation is deterministic across
// processes (byte-identical exports of the same model and options): when a build's compiled bytes
// equal an earlier build's, the command says so and stops, as further builds would only repeat it.
// Each build's outcome and hash go to --save-debug-replay; --load-debug-replay takes recorded builds
// instead of building and checking them again.
#include <chrono>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "args/check_args.h"
#include "args/model_args.h"
#include "args/openvino_args.h"
#include "args/replay_args.h"
#include "command.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/debug/fresh_process.h"
#include "parity/debug/repeat.h"
#include "parity/runtime/openvino/openvino_compiled_file.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::cli {
namespace {

class DebugBuildCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"debug", "build"}; }
  std::string description() const override {
    return "Compile a model with OpenVINO repeatedly, checking and sorting each compiled model (Polygraphy's "
           "`debug build`)";
  }

  void add_options(CLI::App& app) override {
    model_.add_to(app, /*shape_inference_by_default=*/false, /*checker_flag=*/false);
    app.add_flag("--openvino", openvino_, "Build with OpenVINO (the --ov-* options apply); the only builder")
        ->group("Runners");
    openvino_args_.add_to(app);
    app.add_option("--until", until_,
                   "When to stop: 'good' (the first passing build), 'bad' (the first failing build) or a number")
        ->required()
        ->group("Pass/Fail Reporting");
    app.add_option("--iter-artifact,--intermediate-artifact", iter_artifact_,
                   "Where each compiled model is written for the --check command (default parity_debug.ovc)")
        ->group("Artifact Sorting");
    app.add_flag("--no-remove-intermediate", no_remove_intermediate_,
                 "Keep the last compiled model at --iter-artifact at the end")
        ->group("Artifact Sorting");
    checks_.add_to(app, "The command checking each compiled model, given last (it reads --iter-artifact)");
    replay_.add_to(app, "build");
  }

  int run() override {
    checks_.parse(/*required=*/true);
    if (!openvino_) raise<InvalidInputError>("debug build: give --openvino (the builder to repeat)");
    openvino_args_.parse(1);
    if (openvino_args_.marks_tensors())
      raise<InvalidInputError>("debug build: a compiled model file marks no tensors (--ov-outputs, "
                               "--ov-exclude-outputs)");
    const auto until = debug::Until::parse(until_);
    std::map<std::string, int> first_build_of_hash;
    auto replay = replay_.open("debug build");
    int replayed = 0;
    auto summary = debug::repeat(until, [&](int index) {
      const std::string key = fmt::format("build:{}", index);
      debug::RecordedIteration recorded;
      std::string hash;
      if (auto step = replay.find(key)) {
        recorded = debug::RecordedIteration::from_step(*step, replay.load_path());
        if (!step->contains("hash") || !(*step)["hash"].is_string())
          raise<FileError>("{}: the replay's step '{}' has no 'hash' of the compiled model",
                           replay.load_path().string(), key);
        hash = (*step)["hash"].get<std::string>();
        ++replayed;
        if (recorded.failed)
          log::error("FAILED | Build {} | compiled {} | exit code {} | from the replay", index, hash,
                     recorded.exit_code);
        else
          log::finish("PASSED | Build {} | compiled {} | exit code {} | from the replay", index, hash,
                      recorded.exit_code);
      } else {
        recorded = build_and_check(index, hash);
      }
      auto step = recorded.to_step(key);
      step["hash"] = hash;
      replay.record(std::move(step));
      debug::IterationOutcome result{!recorded.failed, debug::outcome_label(recorded.failed, recorded.exit_code)};
      auto [seen, inserted] = first_build_of_hash.emplace(hash, index);
      if (!inserted) {
        log::info("Build {} is byte-identical to build {} ({}): OpenVINO's compilation is deterministic for this "
                  "model and these options, so further builds would give the same compiled model; stopping",
                  index, seen->second, hash);
        result.stop = true;
      }
      return result;
    });
    if (!no_remove_intermediate_) {
      std::error_code error;
      std::filesystem::remove(iter_artifact_, error);
    }
    if (summary.stopped_at_limit)
      log::warning("Stopped after {} builds without reaching --until {}", summary.iterations, until_);
    std::string counts;
    for (const auto& [label, count] : summary.labels) counts += fmt::format("\n    {}: {}", label, count);
    log::finish("Finished {} build(s){}, {} distinct compiled model(s) | Passed: {}/{} | Pass Rate: {:.1f}%{}",
                summary.iterations, replayed ? fmt::format(" ({} from the replay)", replayed) : "",
                first_build_of_hash.size(), summary.passed, summary.iterations,
                100.0 * summary.passed / summary.iterations, counts);
    return 0;
  }

 private:
  // Build `index` in a child process, written to --iter-artifact, its hash in `hash`, then checked
  // and its artifacts sorted.
  debug::RecordedIteration build_and_check(int index, std::string& hash) {
    const auto& command = checks_.command();
    log::start("RUNNING | Build {} | Command: {}", index, command.to_string());
    const auto start = std::chrono::steady_clock::now();
    // Each build in a fresh process, as separate builds are: two builds within one process export
    // bytes that differ slightly (most likely names from OpenVINO's process-wide node counters).
    debug::run_in_child_process([this] {
      runtime::OpenvinoRunner runner(
          [this] {
            onnx::LoadOptions options;
            options.lazy_weights = true;
            return model_.load(options);
          },
          openvino_args_.options());
      runner.activate();
      runtime::write_openvino_compiled_file(iter_artifact_, runner.compiled_file());
    });
    hash = runtime::fnv1a64_hash(runtime::read_openvino_compiled_file(iter_artifact_).compiled);
    auto outcome = checks_.run_check(index - 1);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (outcome.failed)
      log::error("FAILED | Build {} | compiled {} | exit code {} | {:.3f}s", index, hash, outcome.exit_code,
                 seconds);
    else
      log::finish("PASSED | Build {} | compiled {} | exit code {} | {:.3f}s", index, hash, outcome.exit_code,
                  seconds);
    checks_.artifact_sorter().sort(!outcome.failed, fmt::format("build{}", index));
    return {outcome.failed, outcome.exit_code};
  }

  ModelArgs model_;
  OpenvinoArgs openvino_args_;
  bool openvino_ = false;
  std::string until_;
  std::string iter_artifact_ = "parity_debug.ovc";
  bool no_remove_intermediate_ = false;
  CheckArgs checks_;
  ReplayArgs replay_;
};

PARITY_REGISTER_COMMAND(DebugBuildCommand);

}  // namespace
}  // namespace parity::cli
