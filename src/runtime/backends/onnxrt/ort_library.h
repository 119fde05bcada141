// The ONNX Runtime shared library, loaded with dlopen at activation (never linked), its C API
// table at the API version of the headers Parity was compiled against, and the process's one
// OrtEnv. Private to the onnxrt backend.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <onnxruntime_c_api.h>

namespace parity::runtime::onnxrt {

class Library {
 public:
  // Finds and loads the library (see onnxrt_runner.h for the search order). A library is loaded
  // once per process and path and never unloaded (ONNX Runtime does not support being unloaded).
  // Throws FileError, with every place it looked and how to point Parity at a library, when none
  // is found; UnsupportedError when the library is older than the headers' API version.
  static std::shared_ptr<const Library> load(const std::string& explicit_path);

  const OrtApi& api() const { return *api_; }
  OrtEnv* env() const { return env_; }
  const OrtMemoryInfo* cpu_memory_info() const { return cpu_memory_info_; }
  OrtAllocator* default_allocator() const { return allocator_; }
  const std::string& path() const { return path_; }
  const std::string& version() const { return version_; }
  const std::string& found_by() const { return found_by_; }
  const std::vector<std::string>& available_providers() const { return providers_; }

  // Throws the Parity error matching `status`'s code with ONNX Runtime's own text, after `what`
  // ("creating the session" gives "ONNX Runtime error while creating the session: [CODE] text");
  // releases the status. No-op on nullptr (success).
  void check(OrtStatus* status, std::string_view what) const;

  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library() = default;

 private:
  Library() = default;
  const OrtApi* api_ = nullptr;
  OrtEnv* env_ = nullptr;
  OrtMemoryInfo* cpu_memory_info_ = nullptr;
  OrtAllocator* allocator_ = nullptr;
  std::string path_, version_, found_by_;
  std::vector<std::string> providers_;
};

using LibraryPtr = std::shared_ptr<const Library>;

}  // namespace parity::runtime::onnxrt
