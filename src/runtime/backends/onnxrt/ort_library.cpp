// dlopen wrapper for the ONNX Runtime shared library: where to look, loading, the API table, the
// process-wide OrtEnv (logging routed to Parity's logger) and OrtStatus -> Parity errors.
#include "ort_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::runtime::onnxrt {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLibraryEnvironmentVariable = "PARITY_ORT_LIBRARY";
constexpr const char* kPythonEnvironmentVariable = "PARITY_PYTHON";

// One place that was tried and why it did not work out.
struct Attempt {
  std::string where;
  std::string outcome;
};

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// `libonnxruntime.so.<version>` (highest version first), else `libonnxruntime.so`, in `folder`.
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
    auto na = a.filename().string(), nb = b.filename().string();
    return na.size() != nb.size() ? na.size() > nb.size() : na > nb;
  });
  return candidates.front();
}

// Asks a Python interpreter where its `onnxruntime` package lives (without importing it, which
// would be slow) and returns the library in that package's capi/ folder. Cached per interpreter.
std::optional<fs::path> library_in_python_package(const std::string& python, std::string& outcome) {
  static std::mutex mutex;
  static std::map<std::string, std::pair<std::optional<fs::path>, std::string>> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(python); it != cache.end()) {
    outcome = it->second.second;
    return it->second.first;
  }
  // Fast path, no process started: `python` is a virtual environment's interpreter (a
  // pyvenv.cfg beside its bin/ folder) and nothing redirects imports (PYTHONPATH, PYTHONHOME).
  // A venv's own site-packages comes first on its sys.path, so that is where the import would go.
  if (!std::getenv("PYTHONPATH") && !std::getenv("PYTHONHOME")) {
    fs::path interpreter;
    std::error_code error;
    if (python.find('/') != std::string::npos) {
      interpreter = python;
    } else if (const char* path = std::getenv("PATH")) {
      std::string_view dirs(path);
      while (!dirs.empty() && interpreter.empty()) {
        auto colon = dirs.find(':');
        fs::path candidate = fs::path(std::string(dirs.substr(0, colon))) / python;
        if (fs::is_regular_file(candidate, error) && ::access(candidate.c_str(), X_OK) == 0) interpreter = candidate;
        dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
      }
    }
    fs::path root = interpreter.parent_path().parent_path();
    if (!interpreter.empty() && fs::is_regular_file(root / "pyvenv.cfg", error)) {
      for (const auto& entry : fs::directory_iterator(root / "lib", error)) {
        if (entry.path().filename().string().rfind("python3", 0) != 0) continue;
        fs::path capi = entry.path() / "site-packages" / "onnxruntime" / "capi";
        if (auto library = library_in_folder(capi)) {
          cache[python] = {library, ""};
          return library;
        }
      }
    }
  }
  std::string command =
      shell_quote(python) +
      " -c \"import importlib.util as u; s = u.find_spec('onnxruntime'); "
      "print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')\""
      " 2>/dev/null";
  std::optional<fs::path> found;
  std::string package_dir;
  if (std::FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe)) package_dir += buffer;
    int status = ::pclose(pipe);
    while (!package_dir.empty() && (package_dir.back() == '\n' || package_dir.back() == '\r'))
      package_dir.pop_back();
    if (status != 0) {
      outcome = "could not run that Python";
    } else if (package_dir.empty()) {
      outcome = "that Python has no onnxruntime package";
    } else if (auto library = library_in_folder(fs::path(package_dir) / "capi")) {
      found = library;
    } else {
      outcome = fmt::format("its onnxruntime package at {} has no libonnxruntime.so* in capi/",
                            package_dir);
    }
  } else {
    outcome = "could not start that Python";
  }
  cache[python] = {found, outcome};
  return found;
}

const char* error_code_name(OrtErrorCode code) {
  switch (code) {
    case ORT_OK:
      return "OK";
    case ORT_FAIL:
      return "FAIL";
    case ORT_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case ORT_NO_SUCHFILE:
      return "NO_SUCHFILE";
    case ORT_NO_MODEL:
      return "NO_MODEL";
    case ORT_ENGINE_ERROR:
      return "ENGINE_ERROR";
    case ORT_RUNTIME_EXCEPTION:
      return "RUNTIME_EXCEPTION";
    case ORT_INVALID_PROTOBUF:
      return "INVALID_PROTOBUF";
    case ORT_MODEL_LOADED:
      return "MODEL_LOADED";
    case ORT_NOT_IMPLEMENTED:
      return "NOT_IMPLEMENTED";
    case ORT_INVALID_GRAPH:
      return "INVALID_GRAPH";
    case ORT_EP_FAIL:
      return "EP_FAIL";
  }
  return "UNKNOWN";
}

// ONNX Runtime's log messages, through Parity's logger (which is not thread-safe: serialize).
void ORT_API_CALL forward_log(void*, OrtLoggingLevel severity, const char* category,
                              const char* logid, const char* code_location, const char* message) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  Severity parity_severity = Severity::kInfo;
  switch (severity) {
    case ORT_LOGGING_LEVEL_VERBOSE:
      parity_severity = Severity::kSuperVerbose;
      break;
    case ORT_LOGGING_LEVEL_INFO:
      parity_severity = Severity::kExtraVerbose;
      break;
    case ORT_LOGGING_LEVEL_WARNING:
      parity_severity = Severity::kWarning;
      break;
    // Errors come back as statuses too, and Parity raises them with ONNX Runtime's text: logging
    // them as [E] as well would print every error twice.
    case ORT_LOGGING_LEVEL_ERROR:
      parity_severity = Severity::kVerbose;
      break;
    case ORT_LOGGING_LEVEL_FATAL:
      parity_severity = Severity::kCritical;
      break;
  }
  auto& logger = Logger::global();
  if (!logger.enabled(parity_severity)) return;
  if (logger.enabled(Severity::kExtraVerbose))
    logger.log(parity_severity,
               fmt::format("ONNX Runtime ({}): {}", code_location ? code_location : "", message));
  else
    logger.log(parity_severity, fmt::format("ONNX Runtime: {}", message));
}

OrtLoggingLevel ort_log_level() {
  auto& logger = Logger::global();
  if (logger.enabled(Severity::kSuperVerbose)) return ORT_LOGGING_LEVEL_VERBOSE;
  if (logger.enabled(Severity::kExtraVerbose)) return ORT_LOGGING_LEVEL_INFO;
  return ORT_LOGGING_LEVEL_WARNING;
}

std::string describe_attempts(const std::vector<Attempt>& attempts) {
  std::vector<std::string> parts;
  for (const auto& attempt : attempts)
    parts.push_back(fmt::format("{} ({})", attempt.where, attempt.outcome));
  return fmt::format("{}", fmt::join(parts, "; "));
}

[[noreturn]] void not_found(const std::vector<Attempt>& attempts) {
  raise<FileError>(
      "ONNX Runtime library not found; looked in: {}. Point Parity at a libonnxruntime.so with "
      "--ort-library PATH or the {} environment variable, or install the onnxruntime Python "
      "package "
      "(pip install onnxruntime) in the Python named by {} (default: python3 on PATH)",
      describe_attempts(attempts), kLibraryEnvironmentVariable, kPythonEnvironmentVariable);
}

}  // namespace

void Library::check(OrtStatus* status, std::string_view what) const {
  if (!status) return;
  OrtErrorCode code = api_->GetErrorCode(status);
  std::string message = api_->GetErrorMessage(status);
  api_->ReleaseStatus(status);
  std::string text =
      fmt::format("ONNX Runtime error while {}: [{}] {}", what, error_code_name(code), message);
  switch (code) {
    case ORT_INVALID_ARGUMENT:
    case ORT_NO_SUCHFILE:
    case ORT_NO_MODEL:
    case ORT_INVALID_PROTOBUF:
    case ORT_INVALID_GRAPH:
      throw InvalidInputError(text);
    case ORT_NOT_IMPLEMENTED:
      throw UnsupportedError(text);
    default:
      throw Error(text);
  }
}

LibraryPtr Library::load(const std::string& explicit_path) {
  static std::mutex mutex;
  static std::map<std::string, LibraryPtr> loaded;  // by the path asked for; kept for the process
  std::lock_guard lock(mutex);

  // 1. Where to look.
  std::vector<Attempt> attempts;
  std::vector<std::pair<std::string, std::string>>
      candidates;  // (dlopen argument, how it was found)
  auto add_file_or_folder = [&](const std::string& given, const std::string& how) -> bool {
    fs::path path(given);
    std::error_code error;
    if (fs::is_directory(path, error)) {
      if (auto library = library_in_folder(path)) {
        candidates.emplace_back(library->string(), how);
        return true;
      }
      attempts.push_back({fmt::format("{} {}", how, given), "folder without libonnxruntime.so*"});
      return false;
    }
    if (!fs::exists(path, error)) {
      attempts.push_back({fmt::format("{} {}", how, given), "no such file"});
      return false;
    }
    candidates.emplace_back(fs::absolute(path, error).string(), how);
    return true;
  };
  const char* from_environment = std::getenv(kLibraryEnvironmentVariable);
  if (!explicit_path.empty()) {
    // An explicit choice is the only place looked: silently running another library would hide it.
    if (!add_file_or_folder(explicit_path, "--ort-library")) not_found(attempts);
  } else if (from_environment && *from_environment) {
    if (!add_file_or_folder(from_environment, kLibraryEnvironmentVariable)) not_found(attempts);
  } else {
    const char* python_variable = std::getenv(kPythonEnvironmentVariable);
    std::string python = python_variable && *python_variable ? python_variable : "python3";
    std::string outcome;
    std::string where = fmt::format("the onnxruntime Python package of {}{}", python,
                                    python_variable && *python_variable
                                        ? fmt::format(" (${})", kPythonEnvironmentVariable)
                                        : "");
    if (auto library = library_in_python_package(python, outcome)) {
      candidates.emplace_back(library->string(), where);
    } else {
      attempts.push_back({where, outcome});
#ifdef PARITY_SETUP_PYTHON
      // The virtual environment scripts/setup.sh made for this build (it holds the pinned
      // onnxruntime), so a built `parity` finds ONNX Runtime without the venv on PATH.
      if (!(python_variable && *python_variable)) {
        std::string setup_python = PARITY_SETUP_PYTHON, setup_outcome;
        std::string setup_where = fmt::format("the onnxruntime Python package of {} (the build's setup)", setup_python);
        if (auto library = library_in_python_package(setup_python, setup_outcome))
          candidates.emplace_back(library->string(), setup_where);
        else
          attempts.push_back({setup_where, setup_outcome});
      }
#endif
    }
    candidates.emplace_back("libonnxruntime.so.1", "the system library path");
    candidates.emplace_back("libonnxruntime.so", "the system library path");
  }

  // 2. Load the first that works.
  for (const auto& [argument, how] : candidates) {
    if (auto it = loaded.find(argument); it != loaded.end()) return it->second;
    ::dlerror();
    void* handle = ::dlopen(argument.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* reason = ::dlerror();
      bool system = argument.find('/') == std::string::npos;
      attempts.push_back(
          {system ? fmt::format("{} ({})", how, argument) : fmt::format("{} {}", how, argument),
           system ? "not found"
                  : fmt::format("dlopen failed: {}", reason ? reason : "unknown error")});
      continue;
    }
    using GetApiBase = const OrtApiBase* (*)();
    auto get_api_base = reinterpret_cast<GetApiBase>(::dlsym(handle, "OrtGetApiBase"));
    if (!get_api_base) {
      attempts.push_back({fmt::format("{} {}", how, argument),
                          "not an ONNX Runtime library: no OrtGetApiBase symbol"});
      continue;  // never dlclose: a half-initialized library is safer left mapped
    }
    Dl_info info{};
    std::string real_path = ::dladdr(reinterpret_cast<void*>(get_api_base), &info) && info.dli_fname
                                ? fs::weakly_canonical(fs::absolute(info.dli_fname)).string()
                                : argument;
    if (auto it = loaded.find(real_path); it != loaded.end()) {
      loaded[argument] = it->second;
      return it->second;
    }
    const OrtApiBase* base = get_api_base();
    std::string version = base->GetVersionString();
    const OrtApi* api = base->GetApi(ORT_API_VERSION);
    if (!api)
      raise<UnsupportedError>(
          "ONNX Runtime {} at {} does not provide C API version {}, which Parity was built against "
          "(headers of ONNX Runtime 1.{}); use a newer library (--ort-library PATH or {})",
          version, argument, ORT_API_VERSION, ORT_API_VERSION, kLibraryEnvironmentVariable);

    std::shared_ptr<Library> library(new Library());
    library->api_ = api;
    library->version_ = version;
    library->found_by_ = how;
    library->path_ = real_path;
    library->check(api->CreateEnvWithCustomLogger(forward_log, nullptr, ort_log_level(), "parity",
                                                  &library->env_),
                   "creating its environment");
    library->check(
        api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &library->cpu_memory_info_),
        "describing CPU memory");
    library->check(api->GetAllocatorWithDefaultOptions(&library->allocator_),
                   "getting its default allocator");
    char** providers = nullptr;
    int provider_count = 0;
    library->check(api->GetAvailableProviders(&providers, &provider_count),
                   "listing its execution providers");
    for (int i = 0; i < provider_count; ++i) library->providers_.emplace_back(providers[i]);
    library->check(api->ReleaseAvailableProviders(providers, provider_count),
                   "releasing the provider list");
    log::verbose("Loaded ONNX Runtime {} from {} (found via {}; C API version {}; providers: {})",
                 version, library->path_, how, ORT_API_VERSION,
                 fmt::join(library->providers_, ", "));
    // The env and library stay for the process: ONNX Runtime's threads and static state do not
    // survive dlclose, and OrtEnv is a process-wide singleton inside the library.
    loaded[argument] = library;
    loaded[real_path] = library;
    return library;
  }
  not_found(attempts);
}

}  // namespace parity::runtime::onnxrt
