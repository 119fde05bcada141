// Per-path logging severities, as Polygraphy's `--verbosity LEVEL path:LEVEL ...` (its
// module_severity): a rule gives the severity of every logging call made in a folder or a file of
// Parity's source tree, the most specific rule wins, and calls no rule covers use the default.
//
// Paths: a logging call's path is its source file's path in Parity's tree (as its source location
// names it), with the leading `src/` or `include/parity/` dropped: `runtime/runner.cpp`,
// `runtime/backends/onnxrt/onnxrt_runner.cpp`, `core/logger.h`; the CLI's own files keep their folder,
// `tools/parity/commands/run.cpp`, and so do the Python bindings' (`python/src/bind_logger.cpp`)
// and the tests' (`tests/unit/test_logger.cpp`). A
// rule's path is written the same way (a `src/` or `include/parity/` prefix is accepted and
// dropped; `/` separates folders; repeated and trailing slashes are ignored) and covers the
// file or every file below the folder it names, matching whole names only (`runtime/back` covers
// nothing).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parity {

enum class Severity : int;

struct PathSeverity {
  std::string path;  // normalised: no `src/` or `include/parity/` prefix, no empty components
  Severity severity;
};

// Parses one value of `--verbosity`: "LEVEL" (a level alone: `path` is empty, the default
// severity) or "path:LEVEL" (split at the last ':'). Levels are Polygraphy's names, in any case.
// Throws InvalidInputError naming `argument` for an unknown level, an empty path ("...:LEVEL"
// with nothing before the ':') or a path that names no folder below the source tree (`src`).
PathSeverity parse_path_severity(std::string_view argument);

// The path under which a logging call in `source_file` (a source location's file name, absolute or
// relative to the build folder) is matched against rules; see above.
std::string source_rule_path(std::string_view source_file);

// A set of rules: for each normalised path its severity, the last rule given for a path winning.
class SeverityRules {
 public:
  SeverityRules() = default;
  // Rules with an empty path are refused (InvalidInputError): the default is the Logger's severity.
  explicit SeverityRules(const std::vector<PathSeverity>& rules);

  bool empty() const { return rules_.empty(); }
  // The rules in the order their paths were first given, paths normalised.
  const std::vector<PathSeverity>& rules() const { return rules_; }
  // The severity of the most specific rule covering `rule_path` (a source_rule_path), or nothing
  // when no rule covers it.
  std::optional<Severity> match(std::string_view rule_path) const;

 private:
  std::vector<PathSeverity> rules_;
  std::vector<std::vector<std::string>> components_;  // each rule's path split at '/'
};

}  // namespace parity
