// Where each Python interpreter's `onnxruntime` package keeps its libonnxruntime.so*, remembered
// across runs so that finding ONNX Runtime starts no Python process once an interpreter has been
// asked. One text file, ${XDG_CACHE_HOME:-$HOME/.cache}/parity/onnxruntime-library.cache, one
// record per interpreter. A record stays valid while nothing it was derived from has changed: the
// interpreter file (the one its path resolves to: modification time and size), $PYTHONPATH and
// $PYTHONHOME, every folder of the interpreter's sys.path (a package installed or removed changes
// its folder's modification time; a folder that appears counts too) and the library file itself.
// Written atomically (temp file, then rename); a file that does not parse is ignored as a whole
// and replaced at the next write. Private to the onnxrt backend.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace parity::runtime::onnxrt {

// A file's or folder's identity for invalidation: "<modification time in ns>:<size>", following
// symbolic links; "missing" when there is nothing at `path`.
std::string file_stamp(const std::filesystem::path& path);

// What one interpreter's onnxruntime package held when it was asked, and the stamps of everything
// that answer depends on.
struct PythonLibraryRecord {
  std::string interpreter;        // absolute, symbolic links kept (a venv's bin/python is a link)
  std::string interpreter_stamp;  // file_stamp(interpreter)
  std::string python_path;        // $PYTHONPATH at the time ("" when unset)
  std::string python_home;        // $PYTHONHOME at the time ("" when unset)
  std::string library;            // the library found; empty when none
  std::string library_stamp;      // file_stamp(library); empty when none
  std::string outcome;            // why there is no library ("that Python has no onnxruntime package")
  std::vector<std::pair<std::string, std::string>> watched_folders;  // (folder, file_stamp(folder))

  bool operator==(const PythonLibraryRecord&) const = default;
};

// A record for `interpreter` with every stamp and variable taken now.
PythonLibraryRecord record_now(const std::string& interpreter, const std::string& library, const std::string& outcome,
                               const std::vector<std::string>& watched_folders);

class LibraryCache {
 public:
  // At most this many records are kept; storing one more drops the oldest.
  static constexpr std::size_t kMaxRecords = 32;

  explicit LibraryCache(std::filesystem::path file) : file_(std::move(file)) {}

  // ${XDG_CACHE_HOME:-$HOME/.cache}/parity/onnxruntime-library.cache; nullopt when neither
  // variable is set (then nothing is remembered).
  static std::optional<LibraryCache> default_cache();

  const std::filesystem::path& file() const { return file_; }

  // The record for `interpreter` when the file has one and it is still valid (record_now with its
  // library, outcome and folders gives the same stamps); nullopt otherwise, never throws.
  std::optional<PythonLibraryRecord> find_valid(const std::string& interpreter) const;

  // Replaces the interpreter's record (adds it when new) and rewrites the file atomically, creating
  // its folder. Records that cannot be written as one line (a tab or newline in a path) are not
  // stored. Returns false, after logging why at verbose level, when the file cannot be written.
  bool store(const PythonLibraryRecord& record) const;

  // Every record in the file, oldest first; empty when it is missing or does not parse.
  std::vector<PythonLibraryRecord> read_all() const;

 private:
  std::filesystem::path file_;
};

}  // namespace parity::runtime::onnxrt
