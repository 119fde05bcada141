// Finding and loading OpenVINO's library and the backend module (the order is documented in
// parity/runtime/openvino/openvino_runner.h). Both stay loaded for the process: OpenVINO's threads and
// plugins do not survive dlclose.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "openvino_backend.h"
#include "openvino_containment.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/core/process.h"
#include "parity/core/python_interpreter.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::runtime {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLibraryDirVariable = "PARITY_OPENVINO_LIBRARY_DIR";
constexpr const char* kModuleVariable = "PARITY_OPENVINO_MODULE";
constexpr const char* kPythonVariable = kPythonEnvironmentVariable;
constexpr const char* kModuleName = "libparity_openvino.so";

struct Attempt {
  std::string where;
  std::string outcome;
};

std::string describe(const std::vector<Attempt>& attempts) {
  std::vector<std::string> parts;
  for (const auto& attempt : attempts) parts.push_back(fmt::format("{} ({})", attempt.where, attempt.outcome));
  return fmt::format("{}", fmt::join(parts, "; "));
}

// libopenvino.so.<version> (highest first), else libopenvino.so, in `folder`.
std::optional<fs::path> openvino_library_in(const fs::path& folder) {
  std::error_code error;
  std::vector<fs::path> candidates;
  for (const auto& entry : fs::directory_iterator(folder, error)) {
    std::string name = entry.path().filename().string();
    if (name == "libopenvino.so" || name.rfind("libopenvino.so.", 0) == 0) candidates.push_back(entry.path());
  }
  if (candidates.empty()) return std::nullopt;
  std::sort(candidates.begin(), candidates.end(), [](const fs::path& a, const fs::path& b) {
    auto name_a = a.filename().string(), name_b = b.filename().string();
    return name_a.size() != name_b.size() ? name_a.size() > name_b.size() : name_a > name_b;
  });
  return candidates.front();
}

// openvino/libs of a virtual environment's interpreter, read from its site-packages.
std::optional<fs::path> libs_of_virtual_environment(const fs::path& interpreter, std::string& outcome) {
  auto site_packages = virtual_environment_site_packages(interpreter);
  if (!site_packages) {
    outcome = "not a virtual environment's Python";
    return std::nullopt;
  }
  for (const auto& folder : *site_packages)
    if (openvino_library_in(folder / "openvino" / "libs")) return folder / "openvino" / "libs";
  outcome = "its virtual environment has no openvino package";
  return std::nullopt;
}

// Candidate folders (or, for the system's path, a bare file name) with how each was found.
std::vector<std::pair<std::string, std::string>> library_candidates(std::vector<Attempt>& attempts) {
  std::vector<std::pair<std::string, std::string>> candidates;
  const char* explicit_dir = std::getenv(kLibraryDirVariable);
  if (explicit_dir && *explicit_dir) {
    // An explicit choice is the only place looked: silently running another OpenVINO would hide it.
    if (auto library = openvino_library_in(explicit_dir))
      candidates.emplace_back(library->string(), kLibraryDirVariable);
    else
      attempts.push_back({fmt::format("{} {}", kLibraryDirVariable, explicit_dir), "no libopenvino.so* there"});
    return candidates;
  }
  auto try_python = [&](const std::string& python, const std::string& where) {
    auto interpreter = find_program(python);
    if (!interpreter) {
      attempts.push_back({where, python.find('/') == std::string::npos ? fmt::format("no {} on PATH", python)
                                                                       : "no such executable file"});
      return false;
    }
    std::string outcome;
    if (auto libs = libs_of_virtual_environment(*interpreter, outcome)) {
      candidates.emplace_back(openvino_library_in(*libs)->string(),
                              fmt::format("{} at {}", where, interpreter->string()));
      return true;
    }
    attempts.push_back({fmt::format("{} at {}", where, interpreter->string()), outcome});
    return false;
  };
  visit_python_candidates([&](const PythonCandidate& candidate) {
    using Source = PythonCandidate::Source;
    if (candidate.source == Source::kSetupRecord && candidate.python.empty()) {
      attempts.push_back({fmt::format("the Python recorded by scripts/setup.sh in {}", candidate.record),
                          candidate.outcome});
      return true;
    }
    if (candidate.source == Source::kSetupRecord)
      return try_python(candidate.python,
                        fmt::format("the openvino Python package of the Python recorded by scripts/setup.sh in {}",
                                    candidate.record));
    return try_python(candidate.python,
                      fmt::format("the openvino Python package of {}{}", candidate.python,
                                  candidate.source == Source::kVariable ? fmt::format(" (${})", kPythonVariable) : ""));
  });
  candidates.emplace_back("libopenvino.so", "the system library path");
  return candidates;
}

[[noreturn]] void openvino_not_found(const std::vector<Attempt>& attempts) {
  raise<FileError>(
      "OpenVINO not found; looked in: {}. Point Parity at the folder holding libopenvino.so* with the {} "
      "environment variable, or install the openvino Python package (pip install openvino) in the virtual "
      "environment of the Python named by {} (default: python3 on PATH), or run scripts/setup.sh (its venv has it)",
      describe(attempts), kLibraryDirVariable, kPythonVariable);
}

fs::path executable_folder() {
  std::error_code error;
  fs::path executable = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : executable.parent_path();
}

OpenvinoBackendHandle load_now() {
  OpenvinoBackendHandle handle{nullptr, {}};
  std::vector<Attempt> attempts;
  bool loaded = false;
  for (const auto& [library, how] : library_candidates(attempts)) {
    ::dlerror();
    // The module's dependency on libopenvino.so.<version> is then met by this already loaded copy.
    if (::dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      bool system = library.find('/') == std::string::npos;
      handle.info.library_dir = system ? "" : fs::path(library).parent_path().string();
      handle.info.found_by = how;
      loaded = true;
      break;
    }
    const char* reason = ::dlerror();
    attempts.push_back({fmt::format("{} {}", how, library), fmt::format("dlopen failed: {}", reason ? reason : "?")});
  }
  if (!loaded) openvino_not_found(attempts);

  std::vector<Attempt> module_attempts;
  const char* module_variable = std::getenv(kModuleVariable);
  fs::path module = module_variable && *module_variable ? fs::path(module_variable) : executable_folder() / kModuleName;
  std::string how = module_variable && *module_variable ? kModuleVariable : "beside the executable";
  std::error_code error;
  if (!fs::is_regular_file(module, error))
    raise<FileError>("the OpenVINO backend module of Parity was not found; looked in: {} {} (no such file). It is "
                     "built with Parity when CMake finds OpenVINO (scripts/setup.sh installs it); set {} to its path",
                     how, module.string(), kModuleVariable);
  ::dlerror();
  void* module_handle = ::dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module_handle) {
    const char* reason = ::dlerror();
    raise<FileError>("the OpenVINO backend module {} ({}) could not be loaded with OpenVINO from {} (found via {}): {}",
                     module.string(), how,
                     handle.info.library_dir.empty() ? "the system library path" : handle.info.library_dir,
                     handle.info.found_by, reason ? reason : "unknown error");
  }
  using EntryPoint = openvino::Backend* (*)(std::string*);
  auto entry = reinterpret_cast<EntryPoint>(::dlsym(module_handle, "parity_openvino_backend"));
  if (!entry)
    raise<FileError>("{} is not Parity's OpenVINO backend module: no parity_openvino_backend symbol", module.string());
  std::string failure;
  handle.backend = entry(&failure);
  if (!handle.backend) raise<Error>("OpenVINO could not be initialized: {}", failure);
  if (handle.backend->interface_version() != openvino::kBackendInterfaceVersion)
    raise<FileError>("{} was built for another Parity (backend interface {}, this one {}): rebuild Parity",
                     module.string(), handle.backend->interface_version(), openvino::kBackendInterfaceVersion);
  handle.info.module_path = fs::absolute(module, error).string();
  handle.info.version = handle.backend->openvino_version();
  handle.backend->set_log_function([](openvino::LogLevel level, const std::string& message) {
    switch (level) {
      case openvino::LogLevel::kVerbose:
        log::verbose("OpenVINO: {}", message);
        break;
      case openvino::LogLevel::kInfo:
        log::info("OpenVINO: {}", message);
        break;
      case openvino::LogLevel::kWarning:
        log::warning("OpenVINO: {}", message);
        break;
    }
  });
  log::verbose("Loaded OpenVINO {} from {} (found via {}); backend module {}", handle.info.version,
               handle.info.library_dir.empty() ? "the system library path" : handle.info.library_dir,
               handle.info.found_by, handle.info.module_path);
  return handle;
}

}  // namespace

OpenvinoBackendHandle load_openvino_backend() {
  static std::mutex mutex;
  static std::optional<OpenvinoBackendHandle> loaded;
  std::lock_guard lock(mutex);
  if (!loaded) {
    loaded = load_now();
    // Before anything in this process uses OpenVINO: the server's children start from here.
    start_containment_server(*loaded->backend);
  }
  return *loaded;
}

}  // namespace parity::runtime
