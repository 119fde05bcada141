// A backend's part of the command line of the commands that run models (RunnerArgs): the help of
// the flag that selects it (--<name>), its option group and their checks, how it makes a runner
// from them, and what it adds to a `--gen-script` script. Each backend's is in args/<name>_args.*
// and listed once in args/backend_args.cpp, in the registry's order (parity/runtime/backend_registry.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "parity/runtime/backend_registry.h"
#include "parity/runtime/loader.h"
#include "parity/runtime/runner.h"

namespace parity::cli {

class GeneratedScript;

class BackendArgs {
 public:
  virtual ~BackendArgs() = default;
  // Its registry entry (name, label, capabilities).
  virtual const runtime::BackendDescriptor& descriptor() const = 0;
  // The help of --<name>.
  virtual std::string flag_help() const = 0;
  // Adds its option group.
  virtual void add_runner_options(CLI::App& app) = 0;
  // Checks the values (before anything runs); `runners`: how many times --<name> was given;
  // `hybrid`: whether the run is hybrid (--fallback).
  virtual void parse_runner_options(int runners, bool hybrid) = 0;
  // Called before RunnerArgs makes the runners, or writes their script lines, in command-line order
  // (a command may make them more than once: debug reduce makes them for every candidate).
  virtual void start_runners() const {}
  // A runner loading its model through `model` when it activates; `compiled_file`: a compiled
  // model file to run instead (given only to a backend that runs compiled files).
  virtual std::unique_ptr<runtime::Runner> make_runner(const runtime::ModelLoader& model,
                                                       const std::string& compiled_file) const = 0;

  // --gen-script. Whether its runner reads the model through the script's ONNX loader (OnnxFromPath)
  // rather than from the model's path.
  virtual bool script_reads_onnx_loader() const { return true; }
  // Its imports and "# Loaders" lines: `onnx_model` is what runners read the model from (the
  // loader's variable, or the path's literal when `onnx_loader` is false); `runners`: how many
  // --<name> were given. Flags the Python API cannot express are refused through `script`.
  virtual void add_script_loaders(GeneratedScript& script, const std::string& onnx_model, bool onnx_loader,
                                  int runners, std::vector<std::string>& loaders) const;
  // Its imports and its line of the runners list ("    RefRunner(load_onnx),").
  virtual std::string add_script_runner(GeneratedScript& script, const std::string& onnx_model) const = 0;
  // Its name in the script's summary ("the reference interpreter").
  virtual std::string script_name() const = 0;
};

// One argument group of each backend, in the registry's order.
std::vector<std::unique_ptr<BackendArgs>> make_backend_args();

}  // namespace parity::cli
