// `parity debug build`: compile the model with OpenVINO again and again (Polygraphy's debug build),
// saving each compiled model (a .ovc file, as `convert --openvino` writes) to --iter-artifact and
// running the --check command on it, until it passes, fails or N times; --artifacts sorted into
// good/bad. Each build runs in a child process. OpenVINO's CPU compilation is deterministic across
// processes (byte-identical exports of the same model and options): when a build's compiled bytes
// equal an earlier build's, the command says so and stops, as further builds would only repeat it.
// Each build's outcome and hash go to --save-debug-replay; --load-debug-replay takes recorded builds
// instead of building and checking them again.
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
#include "parity/debug/repeated_check.h"
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
    debug::RepeatedCheck check;
    check.noun = "Build";
    check.key = "build";
    check.artifact_prefix = "build";
    check.command = checks_.command().to_string();
    check.run_check = [this](int iteration) { return checks_.run_check(iteration); };
    check.sorter = checks_.artifact_sorter();
    check.prepare = [this](int) { return nlohmann::json{{"hash", build()}}; };
    check.read_fields = [&replay](const nlohmann::json& step, const std::string& key) {
      if (!step.contains("hash") || !step["hash"].is_string())
        raise<FileError>("{}: the replay's step '{}' has no 'hash' of the compiled model",
                         replay.load_path().string(), key);
      return nlohmann::json{{"hash", step["hash"]}};
    };
    check.describe = [](const nlohmann::json& fields) {
      return fmt::format("compiled {} | ", fields["hash"].get<std::string>());
    };
    check.stop = [&first_build_of_hash](int index, const nlohmann::json& fields) {
      const auto hash = fields["hash"].get<std::string>();
      auto [seen, inserted] = first_build_of_hash.emplace(hash, index);
      if (inserted) return false;
      log::info("Build {} is byte-identical to build {} ({}): OpenVINO's compilation is deterministic for this "
                "model and these options, so further builds would give the same compiled model; stopping",
                index, seen->second, hash);
      return true;
    };
    const auto summary = debug::repeat_check(until, replay, check);
    if (!no_remove_intermediate_) {
      std::error_code error;
      std::filesystem::remove(iter_artifact_, error);
    }
    debug::log_repeat_summary(summary, until_, "build", "builds",
                              fmt::format(", {} distinct compiled model(s)", first_build_of_hash.size()));
    return 0;
  }

 private:
  // Compiles the model in a child process, written to --iter-artifact; returns its hash.
  std::string build() {
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
    return runtime::fnv1a64_hash(runtime::read_openvino_compiled_file(iter_artifact_).compiled);
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
