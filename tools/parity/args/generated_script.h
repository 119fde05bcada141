// The Python script `run --gen-script` writes: the same job through Parity's Python API, laid out
// as Polygraphy's generated scripts are (imports, "# Data Loader", "# Loaders", "# Runners",
// "# Runner Execution", ... "# Report Results"), so a user can edit it as a starting point.
// Each argument group adds its part (DataLoaderArgs::add_to_script, ...); flags the API cannot
// express are collected and refused as a whole, never dropped.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace parity::cli {

class GeneratedScript {
 public:
  // `from <module> import <name>` (name may be "X as Y"); imports are sorted as Polygraphy sorts them.
  void add_import(const std::string& module, const std::string& name);
  // A line of the "# This script ..." header comment.
  void add_summary(std::string line) { summary_.push_back(std::move(line)); }
  // Lines under "# <title>", in order; a second call with the same title appends to it.
  void add_section(const std::string& title, const std::vector<std::string>& lines);
  // Lines without a title (e.g. "success = True").
  void add_lines(const std::vector<std::string>& lines) { add_section("", lines); }
  // A flag the Python API cannot express.
  void cannot_express(const std::string& flag) { inexpressible_.insert(flag); }
  const std::set<std::string>& inexpressible() const { return inexpressible_; }

  // The whole script; `command`: the generating command line.
  std::string text(const std::string& command) const;

 private:
  std::map<std::string, std::set<std::string>> imports_;
  std::vector<std::string> summary_;
  std::vector<std::pair<std::string, std::vector<std::string>>> sections_;
  std::set<std::string> inexpressible_;
};

// Python literals, as Python's repr writes them.
std::string python_string(std::string_view text);
std::string python_float(double value);
std::string python_string_list(const std::vector<std::string>& items);
// Polygraphy's "[<name>:]<value>" flag values as a dict literal ({'': 0.001, 'out': 1}): the
// last ':' splits the name; `value` turns the value text into its literal.
template <typename Value>
std::string python_per_output_dict(const std::vector<std::string>& args, Value value) {
  std::string text = "{";
  for (std::size_t i = 0; i < args.size(); ++i) {
    auto colon = args[i].rfind(':');
    std::string name = colon == std::string::npos ? "" : args[i].substr(0, colon);
    std::string raw = colon == std::string::npos ? args[i] : args[i].substr(colon + 1);
    text += (i ? ", " : "") + python_string(name) + ": " + value(raw);
  }
  return text + "}";
}

}  // namespace parity::cli
