// `parity`: runs deep-learning models on several backends, compares them, and finds where and
// why they disagree. Commands live in commands/, one per file, and register themselves.
#include <map>
#include <memory>

#include <CLI/CLI.hpp>

#include "args/logging_args.h"
#include "command.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/log_file_status.h"
#include "parity/core/logger.h"

namespace parity::cli {

std::vector<CommandFactory>& command_factories() {
  static std::vector<CommandFactory> factories;
  return factories;
}

namespace {

// The one-line description of each command group in `parity --help` (Polygraphy's, in Parity's words).
const std::map<std::string, std::string>& group_descriptions() {
  static const std::map<std::string, std::string> descriptions = {
      {"check ", "Check and validate various aspects of a model (lint)"},
      {"data ", "Manipulate input and output data made by other Parity commands (to-input)"},
      {"debug ", "Debug model issues: failing builds, flaky runs, precision, reduce a model to a failing subgraph"},
      {"inspect ", "View information about models, data files and what a backend supports"},
      {"surgeon ", "Modify ONNX models: extract, sanitize, insert, prune, strip or reconstruct weights"},
      {"template ", "Generate template files (an ONNX-GraphSurgeon script)"},
  };
  return descriptions;
}

struct Registered {
  std::unique_ptr<Command> command;
  CLI::App* app;
  std::unique_ptr<LoggingArgs> logging;
};

int run_main(int argc, char** argv) {
  CLI::App app{"Parity: run a model on several backends, compare their outputs, find where they diverge"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "parity " PARITY_VERSION_STRING);
  // "inspect " -> its App, and the logging options given there (`parity inspect -v model ...`).
  std::map<std::string, CLI::App*> groups;
  std::map<std::string, std::unique_ptr<LoggingArgs>> group_logging;
  std::vector<Registered> commands;
  for (const auto& factory : command_factories()) {
    Registered r{factory(), nullptr, std::make_unique<LoggingArgs>()};
    auto path = r.command->path();
    CLI::App* parent = &app;
    std::string key;
    for (std::size_t i = 0; i + 1 < path.size(); ++i) {
      key += path[i] + " ";
      auto& group = groups[key];
      if (!group) {
        auto description = group_descriptions().find(key);
        group = parent->add_subcommand(path[i],
                                       description == group_descriptions().end() ? "" : description->second);
        group->require_subcommand(1);
        group_logging[key] = std::make_unique<LoggingArgs>();
        group_logging[key]->add_to(*group);
      }
      parent = group;
    }
    r.app = parent->add_subcommand(path.back(), r.command->description());
    r.command->add_options(*r.app);
    r.logging->add_to(*r.app);
    commands.push_back(std::move(r));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    log::error("{}", e.what());
    log::error("Run with --help for usage");
    return 1;
  }
  for (auto& r : commands) {
    if (!r.app->parsed()) continue;
    std::string key;
    for (const auto& part : r.command->path()) {
      key += part + " ";
      if (auto it = group_logging.find(key); it != group_logging.end()) r.logging->merge_from(*it->second);
    }
    r.logging->apply();
    try {
      return r.command->run();
    } catch (const Error& e) {
      log::error("{}", e.what());
      return 1;
    }
  }
  return 1;
}

}  // namespace
}  // namespace parity::cli

namespace {

int run_reporting_errors(int argc, char** argv) {
  try {
    return parity::cli::run_main(argc, argv);
  } catch (const parity::Error& e) {
    parity::log::error("{}", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    parity::log::error("out of memory");
    return 1;
  } catch (const std::exception& e) {
    // The last resort: every error a user can cause is a parity::Error naming the file or node;
    // anything else reaching here is a bug in Parity (the fuzz test fails on such exceptions).
    parity::log::error("internal error: {}", e.what());
    return 1;
  } catch (...) {
    parity::log::error("internal error: an exception that is not a std::exception");
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  parity::remove_temp_files_on_signals();
  const int status = run_reporting_errors(argc, argv);
  if (auto failure = parity::log_file_failure()) {
    parity::log::error("cannot write the log file {}; the log is incomplete", *failure);
    return status == 0 ? 1 : status;
  }
  return status;
}
