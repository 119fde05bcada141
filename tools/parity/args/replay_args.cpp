#include "args/replay_args.h"

#include "parity/core/error.h"

namespace parity::cli {

void ReplayArgs::add_to(CLI::App& app, const std::string& checks) {
  const char* group = "Artifact Sorting";
  app.add_option("--save-debug-replay", save_,
                 "Where to write the outcome of every " + checks +
                     " so far, for --load-debug-replay (default polygraphy_debug_replay.json, Polygraphy's name; the "
                     "format is Parity's)")
      ->group(group);
  app.add_option("--load-debug-replay", load_,
                 "A replay written by --save-debug-replay: its outcomes are used instead of running those " + checks +
                     "s again (resumes an interrupted run)")
      ->group(group);
}

debug::DebugReplay ReplayArgs::open(const std::string& tool) const {
  debug::DebugReplay replay(load_, save_, {{"tool", tool}}, {"tool"});
  const auto& loaded = replay.loaded_field("tool");
  if (!loaded.is_null() && loaded != tool)
    raise<FileError>("{}: a replay of {}, not of {}", load_,
                     loaded.is_string() ? loaded.get<std::string>() : loaded.dump(), tool);
  return replay;
}

}  // namespace parity::cli
