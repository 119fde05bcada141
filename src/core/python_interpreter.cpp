// The Python search order, the setup record and virtual environments' site-packages.
#include "parity/core/python_interpreter.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/process.h"

namespace parity {

namespace fs = std::filesystem;

std::string configured_python() {
  const char* configured = std::getenv(kPythonEnvironmentVariable);
  return configured && *configured ? configured : "python3";
}

std::optional<fs::path> setup_python_record() {
  const char* cache_home = std::getenv("XDG_CACHE_HOME");
  if (cache_home && cache_home[0] == '/') return fs::path(cache_home) / "parity" / "setup-python";
  const char* home = std::getenv("HOME");
  if (!home || !*home) return std::nullopt;
  return fs::path(home) / ".cache" / "parity" / "setup-python";
}

std::optional<std::string> recorded_setup_python(std::string& outcome) {
  auto record = setup_python_record();
  if (!record) {
    outcome = "neither XDG_CACHE_HOME nor HOME is set";
    return std::nullopt;
  }
  std::error_code error;
  if (!fs::is_regular_file(*record, error)) {
    outcome = "no such file; scripts/setup.sh writes it";
    return std::nullopt;
  }
  std::string text;
  try {
    text = read_file(*record);
  } catch (const Error& read_error) {
    outcome = read_error.what();
    return std::nullopt;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  if (text.empty() || text.front() != '/' || text.find('\n') != std::string::npos) {
    outcome = "not an absolute path on one line; re-run scripts/setup.sh";
    return std::nullopt;
  }
  if (!is_executable_file(text)) {
    outcome = fmt::format("it names {}, which is not an executable file; re-run scripts/setup.sh", text);
    return std::nullopt;
  }
  return text;
}

void visit_python_candidates(const std::function<bool(const PythonCandidate&)>& visit) {
  const char* variable = std::getenv(kPythonEnvironmentVariable);
  if (variable && *variable) {
    visit({PythonCandidate::Source::kVariable, variable, "", ""});
    return;
  }
  if (visit({PythonCandidate::Source::kPath, "python3", "", ""})) return;
  PythonCandidate recorded{PythonCandidate::Source::kSetupRecord, "", "", ""};
  auto record = setup_python_record();
  recorded.record = record ? record->string() : "~/.cache/parity/setup-python";
  if (auto python = recorded_setup_python(recorded.outcome)) recorded.python = *python;
  visit(recorded);
}

std::optional<std::vector<fs::path>> virtual_environment_site_packages(const fs::path& interpreter) {
  fs::path root = interpreter.parent_path().parent_path();
  std::error_code error;
  if (!fs::is_regular_file(root / "pyvenv.cfg", error)) return std::nullopt;
  std::vector<fs::path> site_packages;
  for (const auto& entry : fs::directory_iterator(root / "lib", error))
    if (entry.path().filename().string().rfind("python3", 0) == 0)
      site_packages.push_back(entry.path() / "site-packages");
  std::sort(site_packages.begin(), site_packages.end());
  return site_packages;
}

}  // namespace parity
