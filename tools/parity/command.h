// A `parity` command: one class per file in commands/, registered with PARITY_REGISTER_COMMAND.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace parity::cli {

class Command {
 public:
  virtual ~Command() = default;
  // Words after `parity`, e.g. {"inspect", "model"}.
  virtual std::vector<std::string> path() const = 0;
  virtual std::string description() const = 0;
  // Declares the command's options (argument groups add theirs here too).
  virtual void add_options(CLI::App& app) = 0;
  // Runs after parsing; returns the process exit code. Throws parity::Error on bad input.
  virtual int run() = 0;
};

using CommandFactory = std::function<std::unique_ptr<Command>()>;
std::vector<CommandFactory>& command_factories();

struct CommandRegistrar {
  explicit CommandRegistrar(CommandFactory factory) { command_factories().push_back(std::move(factory)); }
};

#define PARITY_REGISTER_COMMAND(Class) \
  static const ::parity::cli::CommandRegistrar kRegistrar##Class([] { return std::make_unique<Class>(); })

}  // namespace parity::cli
