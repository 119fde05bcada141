// dlopen wrapper for the ONNX Runtime shared library: where to look, loading, the API table, the
// process-wide OrtEnv (logging routed to Parity's logger) and OrtStatus -> Parity errors.
#include "ort_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <utility>

#include "ort_library_cache.h"
#include "ort_library_search.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/core/python_interpreter.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"

namespace parity::runtime::onnxrt {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLibraryEnvironmentVariable = "PARITY_ORT_LIBRARY";
constexpr const char* kDisableTelemetryVariable = "ORT_DISABLE_TELEMETRY";

// One place that was tried and why it did not work out.
struct Attempt {
  std::string where;
  std::string outcome;
};

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
// OnnxrtLogCapture's state: while `active`, warnings and errors go to `messages`, not the logger.
struct LogCaptureState {
  std::mutex mutex;
  bool active = false;
  std::vector<std::string> messages;
};
LogCaptureState& log_capture_state() {
  static LogCaptureState state;
  return state;
}

// Library::check's text: "ONNX Runtime error while <what>: [<CODE>] <message>".
constexpr std::string_view kStatusErrorPrefix = "ONNX Runtime error while ";

void ORT_API_CALL forward_log(void*, OrtLoggingLevel severity, const char* category,
                              const char* logid, const char* code_location, const char* message) {
  if (severity >= ORT_LOGGING_LEVEL_WARNING) {
    auto& capture = log_capture_state();
    std::lock_guard capture_lock(capture.mutex);
    if (capture.active) {
      capture.messages.emplace_back(message);
      return;
    }
  }
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
      "package (pip install onnxruntime) in the Python named by {} (default: python3 on PATH), or "
      "run scripts/setup.sh (its venv has it)",
      describe_attempts(attempts), kLibraryEnvironmentVariable, kPythonEnvironmentVariable);
}

}  // namespace

void Library::check(OrtStatus* status, std::string_view what) const {
  if (!status) return;
  OrtErrorCode code = api_->GetErrorCode(status);
  std::string message = api_->GetErrorMessage(status);
  api_->ReleaseStatus(status);
  std::string text = fmt::format("{}{}: [{}] {}", kStatusErrorPrefix, what, error_code_name(code), message);
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
    // 3. The onnxruntime package of the chosen Python, else of python3 on PATH; when that has none
    // and no Python was chosen, 4. the venv scripts/setup.sh made (it records its interpreter), so a
    // built `parity` finds ONNX Runtime from a plain shell. Both are answered from the cache once
    // asked: no Python process starts while the interpreter and its packages are unchanged.
    for (const auto& step : search_onnxruntime_python()) {
      const PythonPackageLibrary& found = step.found;
      std::string where = step.where;
      if (!found.interpreter.empty() && found.interpreter != step.python) where += " at " + found.interpreter;
      std::string remembered;
      if (auto cache = LibraryCache::default_cache(); cache && found.from_cache)
        remembered = fmt::format("as remembered in {}", cache->file().string());
      if (found.library)
        candidates.emplace_back(found.library->string(), remembered.empty() ? where : where + " (" + remembered + ")");
      else
        attempts.push_back({where, remembered.empty() ? found.outcome : found.outcome + ", " + remembered});
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
    // ONNX Runtime's telemetry (the 1DS SDK, started with the environment unless ORT_DISABLE_TELEMETRY=1) leaves an
    // empty /tmp/mat-debug-<pid>.log behind every process and keeps a store under ~/.cache/Microsoft. Off unless the
    // user set the variable.
    ::setenv(kDisableTelemetryVariable, "1", /*overwrite=*/0);
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

namespace parity::runtime {

std::optional<std::string> onnxrt_error_message(const Error& error) {
  const std::string& text = error.message();
  if (!text.starts_with(onnxrt::kStatusErrorPrefix)) return std::nullopt;
  auto code = text.find(": [", onnxrt::kStatusErrorPrefix.size());
  if (code == std::string::npos) return std::nullopt;
  auto code_end = text.find("] ", code);
  if (code_end == std::string::npos) return std::nullopt;
  return text.substr(code_end + 2);
}

OnnxrtLogCapture::OnnxrtLogCapture() {
  auto& state = onnxrt::log_capture_state();
  std::lock_guard lock(state.mutex);
  if (state.active) raise<InternalError>("an OnnxrtLogCapture is already active");
  state.active = true;
  state.messages.clear();
}

OnnxrtLogCapture::~OnnxrtLogCapture() {
  auto& state = onnxrt::log_capture_state();
  std::lock_guard lock(state.mutex);
  state.active = false;
  state.messages.clear();
}

std::vector<std::string> OnnxrtLogCapture::take() {
  auto& state = onnxrt::log_capture_state();
  std::lock_guard lock(state.mutex);
  return std::exchange(state.messages, {});
}

}  // namespace parity::runtime
