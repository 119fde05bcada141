// --save-debug-replay and --load-debug-replay of the debug tools (Polygraphy's), for `debug reduce`,
// `debug repeat` and `debug build`: one replay format (parity/debug/replay.h).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "parity/debug/replay.h"

namespace parity::cli {

class ReplayArgs {
 public:
  // `checks` names what is recorded (e.g. "check", "iteration").
  void add_to(CLI::App& app, const std::string& checks);
  const std::string& save_path() const { return save_; }
  const std::string& load_path() const { return load_; }
  // The replay of `tool` (e.g. "debug repeat"): a loaded replay must be one of that tool
  // (FileError naming the file otherwise).
  debug::DebugReplay open(const std::string& tool) const;

 private:
  std::string save_ = "polygraphy_debug_replay.json", load_;  // Polygraphy's default name, Parity's format
};

}  // namespace parity::cli
