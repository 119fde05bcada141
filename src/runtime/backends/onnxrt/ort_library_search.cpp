// Folders, Python packages and the setup record for the ONNX Runtime library search.
#include "ort_library_search.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "ort_library_cache.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/core/process.h"
#include "parity/core/python_interpreter.h"

namespace parity::runtime::onnxrt {
namespace {

namespace fs = std::filesystem;

// Locates the package without importing it (an import takes a second) and prints its folder (an
// empty line when there is none), then every folder an install could change the answer through:
// sys.path (without the script's own folder, which `-c` puts first) and the user site-packages.
constexpr const char* kLocatePackageScript =
    "import importlib.util, site, sys\n"
    "sys.path[:] = [p for p in sys.path if p]\n"
    "spec = importlib.util.find_spec('onnxruntime')\n"
    "print(spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else '')\n"
    "folders = list(sys.path)\n"
    "if site.ENABLE_USER_SITE: folders.append(site.getusersitepackages())\n"
    "print('\\n'.join(folders))\n";

// `python` as an absolute path (symbolic links kept), looked up on PATH when it has no slash.
std::optional<fs::path> resolve_interpreter(const std::string& python, std::string& outcome) {
  if (auto interpreter = find_program(python)) return interpreter;
  if (python.find('/') == std::string::npos) {
    outcome = fmt::format("no {} on PATH", python);
  } else {
    std::error_code error;
    outcome =
        fs::exists(fs::absolute(python, error).lexically_normal(), error) ? "not an executable file" : "no such file";
  }
  return std::nullopt;
}

// A virtual environment's interpreter answered from its site-packages, without starting it: a
// venv's own site-packages comes first on its sys.path, so that is where the import would go.
// nullopt when `interpreter` is not a venv's, something redirects imports, or its site-packages
// has no onnxruntime library (then the interpreter is asked: the venv may see the system's).
std::optional<PythonLibraryRecord> library_in_virtual_environment(const fs::path& interpreter) {
  if (std::getenv("PYTHONPATH") || std::getenv("PYTHONHOME")) return std::nullopt;
  auto site_packages = virtual_environment_site_packages(interpreter);
  if (!site_packages) return std::nullopt;
  for (const auto& folder : *site_packages) {
    if (auto library = library_in_folder(folder / "onnxruntime" / "capi"))
      return record_now(interpreter.string(), library->string(), "", {folder.string()});
  }
  return std::nullopt;
}

// Runs `interpreter arguments...` with no shell between, stdin and stderr on /dev/null; returns its
// standard output, or nullopt with `outcome` set when it could not be started or exited with an error.
std::optional<std::string> run_python(const fs::path& interpreter, const std::vector<std::string>& arguments,
                                      std::string& outcome) {
  ProcessSpec spec;
  spec.program = interpreter.string();
  spec.arguments = arguments;
  spec.standard_input = ProcessStream::null();
  spec.standard_output = ProcessStream::pipe();
  spec.standard_error = ProcessStream::null();
  ProcessResult result;
  try {
    result = run_process(spec);
  } catch (const ProcessStartError& error) {
    outcome = fmt::format("could not start that Python: {}", std::strerror(error.error_number()));
    return std::nullopt;
  }
  if (!result.end.succeeded()) {
    outcome = result.end.signal == 0
                  ? fmt::format("could not run that Python (exit status {})", result.end.exit_status)
                  : "could not run that Python (killed by a signal)";
    return std::nullopt;
  }
  return result.standard_output;
}

// Asks the interpreter where its onnxruntime package is. nullopt (with `outcome`) when it could not
// be asked; a record, found or not, otherwise.
std::optional<PythonLibraryRecord> ask_interpreter(const fs::path& interpreter, std::string& outcome) {
  // Stamped before it runs: an interpreter replaced meanwhile leaves a record that no longer matches.
  PythonLibraryRecord before = record_now(interpreter.string(), "", "unknown", {});
  auto output = run_python(interpreter, {"-c", kLocatePackageScript}, outcome);
  if (!output) return std::nullopt;
  std::vector<std::string> lines;
  std::string_view rest(*output);
  while (!rest.empty()) {
    auto end = rest.find('\n');
    std::string line(rest.substr(0, end));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  }
  if (lines.empty()) {
    outcome = "could not run that Python (it printed nothing)";
    return std::nullopt;
  }
  std::string package = lines.front();
  std::vector<std::string> folders;
  for (std::size_t i = 1; i < lines.size(); ++i)
    if (!lines[i].empty() && std::find(folders.begin(), folders.end(), lines[i]) == folders.end())
      folders.push_back(lines[i]);
  std::string library, reason;
  if (package.empty()) {
    reason = "that Python has no onnxruntime package";
  } else if (auto found = library_in_folder(fs::path(package) / "capi")) {
    library = found->string();
  } else {
    reason = fmt::format("its onnxruntime package at {} has no libonnxruntime.so* in capi/", package);
    folders.push_back((fs::path(package) / "capi").string());
  }
  PythonLibraryRecord record = record_now(interpreter.string(), library, reason, folders);
  record.interpreter_stamp = before.interpreter_stamp;
  return record;
}

}  // namespace

std::vector<PythonSearchStep> search_onnxruntime_python() {
  std::vector<PythonSearchStep> steps;
  visit_python_candidates([&](const PythonCandidate& candidate) {
    using Source = PythonCandidate::Source;
    if (candidate.source == Source::kSetupRecord && candidate.python.empty()) {
      PythonSearchStep step{fmt::format("the Python recorded by scripts/setup.sh in {}", candidate.record), "", {}};
      step.found.outcome = candidate.outcome;
      steps.push_back(std::move(step));
      return true;
    }
    std::string where = fmt::format("the onnxruntime Python package of {}", candidate.python);
    if (candidate.source == Source::kVariable) where += fmt::format(" (${})", kPythonEnvironmentVariable);
    if (candidate.source == Source::kSetupRecord)
      where += fmt::format(" (recorded by scripts/setup.sh in {})", candidate.record);
    steps.push_back({where, candidate.python, library_in_python_package(candidate.python)});
    return steps.back().found.library.has_value();
  });
  return steps;
}

std::optional<fs::path> library_in_folder(const fs::path& folder) {
  std::error_code error;
  std::vector<fs::path> candidates;
  for (const auto& entry : fs::directory_iterator(folder, error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("libonnxruntime.so", 0) == 0 && name.find("providers") == std::string::npos)
      candidates.push_back(entry.path());
  }
  if (candidates.empty()) return std::nullopt;
  // Longest name first picks the fully versioned file over the bare .so symlink.
  std::sort(candidates.begin(), candidates.end(), [](const fs::path& a, const fs::path& b) {
    auto name_a = a.filename().string(), name_b = b.filename().string();
    return name_a.size() != name_b.size() ? name_a.size() > name_b.size() : name_a > name_b;
  });
  return candidates.front();
}

PythonPackageLibrary library_in_python_package(const std::string& python) {
  PythonPackageLibrary result;
  auto interpreter = resolve_interpreter(python, result.outcome);
  if (!interpreter) return result;
  result.interpreter = interpreter->string();
  auto cache = LibraryCache::default_cache();
  auto answer = [&](const PythonLibraryRecord& record) {
    if (!record.library.empty()) result.library = fs::path(record.library);
    result.outcome = record.outcome;
    return result;
  };
  if (cache) {
    if (auto record = cache->find_valid(result.interpreter)) {
      result.from_cache = true;
      log::extra_verbose("ONNX Runtime library of {}: {} (remembered in {})", result.interpreter,
                         record->library.empty() ? record->outcome : record->library, cache->file().string());
      return answer(*record);
    }
  }
  auto record = library_in_virtual_environment(*interpreter);
  if (!record) record = ask_interpreter(*interpreter, result.outcome);
  if (!record) return result;  // not remembered: the interpreter could not be asked this time
  if (cache) cache->store(*record);
  return answer(*record);
}

}  // namespace parity::runtime::onnxrt
