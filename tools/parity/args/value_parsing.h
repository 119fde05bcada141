// Parsing of Polygraphy-style command-line values shared by commands: numbers, "[<name>:]<value>"
// per-output lists, "[d0,d1,...]" shapes and "<name>:[...]" arguments.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parity/compare/compare_func.h"

namespace parity::cli {

// The process's command line, as Polygraphy prints it in "RUNNING | Command: ...".
std::string command_line();

// Polygraphy's frame around a command that passes or fails (run, debug precision): "RUNNING |
// Command: ...", then `body`, then "PASSED | Runtime: Xs | Command: ..." and 0, or "FAILED | ..." and 1.
int run_with_verdict(const std::function<bool()>& body);

// A number ("inf" and "-inf" accepted); InvalidInputError naming `flag` otherwise.
double parse_double(const std::string& text, const std::string& flag);
int64_t parse_int(const std::string& text, const std::string& flag);

// Polygraphy's "[<name>:]<value>" lists: the last colon splits the name from the value. One value
// without a name applies to every output; named values use "" as the default for the others.
template <typename T, typename Parse>
compare::PerOutput<T> per_output(const std::vector<std::string>& args, T fallback, Parse parse) {
  if (args.empty()) return compare::PerOutput<T>(fallback);
  std::vector<std::pair<std::string, T>> entries;
  bool any_named = false;
  for (const auto& arg : args) {
    auto colon = arg.rfind(':');
    if (colon == std::string::npos) {
      entries.emplace_back("", parse(arg));
    } else {
      entries.emplace_back(arg.substr(0, colon), parse(arg.substr(colon + 1)));
      any_named = true;
    }
  }
  if (!any_named && entries.size() == 1) return compare::PerOutput<T>(entries.back().second);
  return compare::PerOutput<T>::per_name(std::move(entries));
}

// "[1,3,224,224]" -> dims; non-numeric dims (symbols) and negatives mark a dynamic dim (-1).
std::vector<int64_t> parse_dims(std::string_view text, const std::string& what);

// "name:[1,2]" -> (name, "[1,2]"), splitting at the ':' before the bracket; "[1,2]" -> ("", ...)
// unless a name is required.
std::pair<std::string, std::string> split_named_bracket(const std::string& arg, bool name_required,
                                                        const std::string& flag);

// ".npz", ".json"... in lower case ("" without a dot).
std::string file_extension(const std::string& path);

}  // namespace parity::cli
