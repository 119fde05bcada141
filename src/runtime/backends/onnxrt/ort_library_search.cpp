// Folders, Python packages and the setup record for the ONNX Runtime library search.
#include "ort_library_search.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "ort_library_cache.h"
#include "parity/core/child_process.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"

extern char** environ;

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

bool is_executable_file(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

// `python` as an absolute path (symbolic links kept), looked up on PATH when it has no slash.
std::optional<fs::path> resolve_interpreter(const std::string& python, std::string& outcome) {
  if (python.find('/') != std::string::npos) {
    std::error_code error;
    fs::path interpreter = fs::absolute(python, error).lexically_normal();
    if (is_executable_file(interpreter)) return interpreter;
    outcome = fs::exists(interpreter, error) ? "not an executable file" : "no such file";
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string_view folders(path ? path : "");
  while (!folders.empty()) {
    auto colon = folders.find(':');
    std::string_view folder = folders.substr(0, colon);
    folders = colon == std::string_view::npos ? std::string_view() : folders.substr(colon + 1);
    if (folder.empty()) continue;
    std::error_code error;
    fs::path candidate = fs::absolute(fs::path(std::string(folder)) / python, error).lexically_normal();
    if (is_executable_file(candidate)) return candidate;
  }
  outcome = fmt::format("no {} on PATH", python);
  return std::nullopt;
}

// A virtual environment's interpreter answered from its site-packages, without starting it: a
// venv's own site-packages comes first on its sys.path, so that is where the import would go.
// nullopt when `interpreter` is not a venv's, something redirects imports, or its site-packages
// has no onnxruntime library (then the interpreter is asked: the venv may see the system's).
std::optional<PythonLibraryRecord> library_in_virtual_environment(const fs::path& interpreter) {
  if (std::getenv("PYTHONPATH") || std::getenv("PYTHONHOME")) return std::nullopt;
  fs::path root = interpreter.parent_path().parent_path();
  std::error_code error;
  if (!fs::is_regular_file(root / "pyvenv.cfg", error)) return std::nullopt;
  std::vector<fs::path> site_packages;
  for (const auto& entry : fs::directory_iterator(root / "lib", error))
    if (entry.path().filename().string().rfind("python3", 0) == 0)
      site_packages.push_back(entry.path() / "site-packages");
  std::sort(site_packages.begin(), site_packages.end());
  for (const auto& folder : site_packages) {
    if (auto library = library_in_folder(folder / "onnxruntime" / "capi"))
      return record_now(interpreter.string(), library->string(), "", {folder.string()});
  }
  return std::nullopt;
}

// Asks the interpreter where its onnxruntime package is. nullopt (with `outcome`) when it could not
// be asked; a record, found or not, otherwise.
std::optional<PythonLibraryRecord> ask_interpreter(const fs::path& interpreter, std::string& outcome) {
  // Stamped before it runs: an interpreter replaced meanwhile leaves a record that no longer matches.
  PythonLibraryRecord before = record_now(interpreter.string(), "", "unknown", {});
  auto output = run_python(interpreter, {"-c", kLocatePackageScript}, /*capture_errors=*/false, outcome);
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

std::optional<std::string> run_python(const fs::path& interpreter, const std::vector<std::string>& arguments,
                                      bool capture_errors, std::string& outcome) {
  int pipe_ends[2];
  if (::pipe2(pipe_ends, O_CLOEXEC) != 0) {
    outcome = fmt::format("could not start that Python: {}", std::strerror(errno));
    return std::nullopt;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (capture_errors) {
    posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDERR_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDOUT_FILENO);
  std::string program = interpreter.string();
  std::vector<std::string> owned_arguments = arguments;
  std::vector<char*> argv = {program.data()};
  for (auto& argument : owned_arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int spawned = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_ends[1]);
  if (spawned != 0) {
    ::close(pipe_ends[0]);
    outcome = fmt::format("could not start that Python: {}", std::strerror(spawned));
    return std::nullopt;
  }
  std::string output = read_to_end(pipe_ends[0]);
  ::close(pipe_ends[0]);
  const int status = wait_for_child(pid).value_or(0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    outcome = WIFEXITED(status) ? fmt::format("could not run that Python (exit status {})", WEXITSTATUS(status))
                                : "could not run that Python (killed by a signal)";
    if (capture_errors && !output.empty()) outcome += ":\n" + output;
    return std::nullopt;
  }
  return output;
}

std::vector<PythonSearchStep> search_onnxruntime_python() {
  std::vector<PythonSearchStep> steps;
  const char* python_variable = std::getenv(kPythonEnvironmentVariable);
  bool python_chosen = python_variable && *python_variable;
  std::string python = python_chosen ? python_variable : "python3";
  std::string chosen_by = python_chosen ? fmt::format(" (${})", kPythonEnvironmentVariable) : "";
  steps.push_back({fmt::format("the onnxruntime Python package of {}{}", python, chosen_by), python,
                   library_in_python_package(python)});
  if (steps.back().found.library || python_chosen) return steps;
  std::string outcome;
  auto record = setup_python_record();
  std::string record_name = record ? record->string() : "~/.cache/parity/setup-python";
  if (auto setup_python = recorded_setup_python(outcome)) {
    steps.push_back({fmt::format("the onnxruntime Python package of {} (recorded by scripts/setup.sh in {})",
                                 *setup_python, record_name),
                     *setup_python, library_in_python_package(*setup_python)});
  } else {
    PythonSearchStep step{fmt::format("the Python recorded by scripts/setup.sh in {}", record_name), "", {}};
    step.found.outcome = outcome;
    steps.push_back(std::move(step));
  }
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

}  // namespace parity::runtime::onnxrt
