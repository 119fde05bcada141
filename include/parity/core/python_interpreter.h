// Which Python interpreter Parity uses, and what can be read about one without starting it: the
// order Pythons are looked at ($PARITY_PYTHON, else python3 on PATH, then the one scripts/setup.sh
// recorded), the setup record, and a virtual environment's site-packages. Starting one is
// process.h's (a program) or runtime/python_worker.h's (a long-lived worker).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace parity {

// The environment variable naming the Python Parity uses.
inline constexpr const char* kPythonEnvironmentVariable = "PARITY_PYTHON";

// $PARITY_PYTHON when set and not empty, else "python3" (a name looked up on PATH).
std::string configured_python();

// The file in which scripts/setup.sh records the interpreter of the virtual environment it made:
// ${XDG_CACHE_HOME:-$HOME/.cache}/parity/setup-python (one line, an absolute path); nullopt when
// neither variable is set.
std::optional<std::filesystem::path> setup_python_record();

// The interpreter recorded in setup_python_record(); nullopt with `outcome` saying why when there is
// no record or it names no executable file.
std::optional<std::string> recorded_setup_python(std::string& outcome);

// One Python to look at, as visit_python_candidates gives them.
struct PythonCandidate {
  enum class Source { kVariable, kPath, kSetupRecord };
  Source source = Source::kPath;
  std::string python;   // as named: a path, or a name looked up on PATH; empty when the record names none
  std::string record;   // kSetupRecord: the record's file (~/.cache/parity/setup-python when unknown)
  std::string outcome;  // kSetupRecord without `python`: why the record names none
};

// The Pythons in the order Parity looks at them: $PARITY_PYTHON when set (and then only it), else
// python3 on PATH, then the interpreter scripts/setup.sh recorded (read only when reached). Stops
// when `visit` returns true.
void visit_python_candidates(const std::function<bool(const PythonCandidate&)>& visit);

// The site-packages folders (lib/python3*/site-packages, sorted) of a virtual environment's
// interpreter, read without starting it; nullopt when `interpreter` is not a virtual
// environment's (no pyvenv.cfg beside its bin/).
std::optional<std::vector<std::filesystem::path>> virtual_environment_site_packages(
    const std::filesystem::path& interpreter);

}  // namespace parity
