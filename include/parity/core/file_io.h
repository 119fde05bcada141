// Whole-file reads with clear errors, and atomic writes (temp file in the same folder, then
// rename), so no command ever leaves a half-written output file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace parity {

// Reads a whole file. FileError names the path and the reason (missing, a directory, unreadable).
std::string read_file(const std::filesystem::path& path);

class Storage;

// Maps a whole file copy-on-write (reads never copy; writes stay private to this process).
// An empty file maps to an empty storage. With `padding`, at least that many zero bytes are
// readable past the end (for parsers that read ahead, such as simdjson), the pages are populated
// up front (a file about to be read whole) and the mapping is read-only.
std::shared_ptr<Storage> map_file(const std::filesystem::path& path, std::size_t padding = 0);

// Writes `path.parity-tmp-XXXX` beside `path`, then renames it over `path`. On any failure the
// temp file is removed and FileError is thrown; `path` is untouched.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

// Streaming version: write() as often as needed, then commit(). Small writes are gathered in a
// 1 MiB buffer so the file sees large ones; a write at least that large goes straight through.
// Destroyed without commit(), it removes the temp file.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::string_view bytes);
  void write(const void* data, std::size_t size) {
    write(std::string_view(static_cast<const char*>(data), size));
  }
  void commit();
  const std::filesystem::path& temp_path() const { return temp_; }

 private:
  void write_through(std::string_view bytes);
  void flush();

  std::filesystem::path path_, temp_;
  std::string buffer_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace parity
