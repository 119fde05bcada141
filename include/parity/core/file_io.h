// Whole-file reads with clear errors, and atomic writes (temp file in the same folder, then
// rename), so no command ever leaves a half-written output file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace parity {

// Reads a whole file. FileError names the path and the reason (missing, a directory, unreadable).
std::string read_file(const std::filesystem::path& path);
// The same, refusing more than `max_bytes` (a format's own limit, below the allocation limit) with
// "'<path>': <too_large>" — checked before reading a regular file, while reading anything else.
std::string read_file(const std::filesystem::path& path, uint64_t max_bytes, std::string_view too_large);

class Storage;

// Maps a whole file copy-on-write (reads never copy; writes stay private to this process).
// An empty file maps to an empty storage. With `padding`, at least that many zero bytes are
// readable past the end (for parsers that read ahead, such as simdjson), the pages are populated
// up front (a file about to be read whole) and the mapping is read-only.
std::shared_ptr<Storage> map_file(const std::filesystem::path& path, std::size_t padding = 0);

// The file a write to `path` lands in: `path` itself, or, through any chain of symbolic links, the
// path the last link names (which need not exist yet). A chain longer than the kernel follows
// (40 links) is refused as a loop (FileError).
std::filesystem::path follow_symlinks(const std::filesystem::path& path);

// Writes `path.parity-tmp-XXXX` beside `path`, then renames it over `path`. On any failure the
// temp file is removed and FileError is thrown; `path` is untouched. A symbolic link is followed:
// the temp file is written beside its target and renamed onto the target, so the link stays.
// A path that exists and is not a regular file (a device such as /dev/null, a FIFO) is written
// through, never replaced; such a write is not atomic.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

// Streaming version: write() as often as needed, then commit(). Small writes are gathered in a
// 1 MiB buffer so the file sees large ones; a write at least that large goes straight through.
// Destroyed without commit(), it removes the temp file. Symbolic links, devices and FIFOs are
// handled as write_file_atomic says.
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
  // Writes out what is buffered, syncs and closes the temp file, leaving it unrenamed: the
  // files of one save (a model and its external data) are all finished before any is committed,
  // so a write that fails (a full disk) leaves every old file as it was. No write() after it.
  void finish();
  // finish(), then renames the temp file over the path.
  void commit();

 private:
  void write_through(std::string_view bytes);
  void flush();

  std::filesystem::path path_, temp_;
  std::string buffer_;
  int fd_ = -1;
  bool committed_ = false;
  bool in_place_ = false;  // a device or FIFO, written through: no temp file
  int listed_slot_ = -1;   // the temp file's entry in the table remove_temp_files_on_signals reads
};

// Temp files left by a signal. Every AtomicFileWriter's temp file is listed, from its creation
// until it is renamed or removed, in a fixed table a signal handler may read. After this call,
// SIGINT, SIGTERM and SIGHUP (those not ignored when it is made) remove the listed temp files of
// this process and then end it as the signal would have (its default action, re-raised), so an
// interrupted save leaves neither a half-written output nor a `*.parity-tmp-*` file. A process
// forked from this one removes nothing of its parent's. The CLI calls it first thing; the Python
// module does not (Python's own SIGINT handler raises KeyboardInterrupt, which unwinds the
// writers, and they remove their temp files).
void remove_temp_files_on_signals();

}  // namespace parity
