#include "parity/core/severity_rules.h"

#include <array>
#include <cstddef>

#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity {
namespace {

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> components;
  while (!path.empty()) {
    std::size_t slash = path.find_first_of("/\\");
    std::string_view component = path.substr(0, slash);
    if (!component.empty() && component != "." && component != "..") components.emplace_back(component);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return components;
}

std::string join_path(const std::vector<std::string>& components) {
  std::string path;
  for (const auto& component : components) {
    if (!path.empty()) path += '/';
    path += component;
  }
  return path;
}

// Drops the `src/` or `include/parity/` that starts a path written in the source tree.
std::vector<std::string> without_library_prefix(std::vector<std::string> components) {
  if (!components.empty() && components[0] == "src")
    components.erase(components.begin());
  else if (components.size() >= 2 && components[0] == "include" && components[1] == "parity")
    components.erase(components.begin(), components.begin() + 2);
  return components;
}

}  // namespace

PathSeverity parse_path_severity(std::string_view argument) {
  std::size_t colon = argument.rfind(':');
  std::string_view level = colon == std::string_view::npos ? argument : argument.substr(colon + 1);
  if (colon == std::string_view::npos) return {"", severity_from_name(level)};

  std::string_view path = argument.substr(0, colon);
  if (path.empty())
    raise<InvalidInputError>("'{}': empty path before ':' (write the level alone, '{}', to set the default)",
                             argument, level);
  Severity severity{};
  try {
    severity = severity_from_name(level);
  } catch (InvalidInputError& error) {
    error.add_context(fmt::format("'{}'", argument));
    throw;
  }
  std::string normalised = join_path(without_library_prefix(split_path(path)));
  if (normalised.empty())
    raise<InvalidInputError>(
        "'{}': the path '{}' names no folder or file below the source tree (write the level alone, '{}', to set "
        "the default)",
        argument, path, level);
  return {normalised, severity};
}

std::string source_rule_path(std::string_view source_file) {
  // The tree's top folders, found as whole path components. The one that ends last in the path
  // wins (a checkout under some other `src/` or `tests/` folder still works); on a tie (`src/` in
  // `python/src/`) the longer one.
  struct Root {
    std::string_view folder;  // as it appears in the path, with its trailing '/'
    std::size_t dropped;      // how many leading characters of it the rule path drops
  };
  static constexpr std::array<Root, 5> kRoots = {{
      {"python/src/", 0},
      {"include/parity/", 15},
      {"tools/parity/", 0},
      {"tests/", 0},
      {"src/", 4},
  }};
  std::string path(source_file);
  for (char& c : path)
    if (c == '\\') c = '/';
  std::size_t best_start = std::string::npos;
  std::size_t best_end = 0;
  for (const auto& root : kRoots) {
    std::size_t at = path.rfind(root.folder);
    while (at != std::string::npos && at != 0 && path[at - 1] != '/') at = path.rfind(root.folder, at - 1);
    if (at == std::string::npos || at + root.folder.size() <= best_end) continue;
    best_end = at + root.folder.size();
    best_start = at + root.dropped;
  }
  std::string_view relative(path);
  if (best_start != std::string::npos) relative.remove_prefix(best_start);
  return join_path(split_path(relative));
}

SeverityRules::SeverityRules(const std::vector<PathSeverity>& rules) {
  for (const auto& rule : rules) {
    std::vector<std::string> components = without_library_prefix(split_path(rule.path));
    if (components.empty())
      raise<InvalidInputError>("a per-path severity needs a path below the source tree (got '{}')", rule.path);
    std::string path = join_path(components);
    bool replaced = false;
    for (auto& existing : rules_)
      if (existing.path == path) {
        existing.severity = rule.severity;
        replaced = true;
      }
    if (replaced) continue;
    rules_.push_back({std::move(path), rule.severity});
    components_.push_back(std::move(components));
  }
}

std::optional<Severity> SeverityRules::match(std::string_view rule_path) const {
  std::vector<std::string> components = split_path(rule_path);
  std::optional<Severity> best;
  std::size_t best_length = 0;
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    const auto& rule = components_[i];
    if (rule.size() > components.size() || rule.size() <= best_length) continue;
    bool covers = true;
    for (std::size_t c = 0; c < rule.size() && covers; ++c) covers = rule[c] == components[c];
    if (!covers) continue;
    best = rules_[i].severity;
    best_length = rule.size();
  }
  return best;
}

}  // namespace parity
