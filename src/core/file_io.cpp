#include "parity/core/file_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "parity/core/allocation_limit.h"
#include "parity/core/error.h"
#include "parity/core/tensor.h"

namespace parity {
namespace fs = std::filesystem;

std::string read_file(const fs::path& path) { return read_file(path, UINT64_MAX, {}); }

std::string read_file(const fs::path& path, uint64_t max_bytes, std::string_view too_large) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) raise<FileError>("'{}': no such file", path.string());
  if (fs::is_directory(status)) raise<FileError>("'{}': is a directory, expected a file", path.string());
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) raise<FileError>("'{}': cannot open: {}", path.string(), std::strerror(errno));
  struct stat st {};
  ::fstat(fd, &st);
  // A regular file's size is checked before it is read; anything else (a pipe, /dev/zero) is read
  // while it gives data, up to the allocation limit.
  const bool regular = S_ISREG(st.st_mode);
  const std::string what = regular ? fmt::format("'{}'", path.string())
                                   : fmt::format("'{}' (not a regular file, read until it ends)", path.string());
  auto check = [&](uint64_t bytes) {
    try {
      if (bytes > max_bytes) raise<ResourceLimitError>("{}: {}", what, too_large);
      check_allocation(bytes, what);
    } catch (...) {
      ::close(fd);
      throw;
    }
  };
  if (regular) check(static_cast<uint64_t>(st.st_size));
  std::string bytes;
  bytes.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (true) {
    if (done == bytes.size()) {  // grows (doubling, up to the limit) for files stat cannot size
      const uint64_t limit = std::min(allocation_limit(), max_bytes);
      if (bytes.size() >= limit) check(static_cast<uint64_t>(bytes.size()) + 1);
      bytes.resize(static_cast<std::size_t>(std::min<uint64_t>(limit, std::max<uint64_t>(65536, bytes.size() * 2))));
    }
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      raise<FileError>("'{}': read failed: {}", path.string(), std::strerror(err));
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

namespace {

class MappedFile final : public Storage {
 public:
  MappedFile(void* data, std::size_t size, std::size_t mapped) : data_(data), size_(size), mapped_(mapped) {}
  ~MappedFile() override {
    if (mapped_) ::munmap(data_, mapped_);
  }
  std::byte* data() override { return static_cast<std::byte*>(data_); }
  std::size_t size() const override { return size_; }

 private:
  void* data_;
  std::size_t size_, mapped_;
};

}  // namespace

std::shared_ptr<Storage> map_file(const fs::path& path, std::size_t padding) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) raise<FileError>("'{}': cannot open: {}", path.string(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    raise<FileError>("'{}': not a regular file", path.string());
  }
  auto size = static_cast<std::size_t>(st.st_size);
  void* data = nullptr;
  std::size_t mapped = 0;
  auto fail = [&](const char* doing) {
    int err = errno;
    if (data && data != MAP_FAILED && mapped) ::munmap(data, mapped);
    ::close(fd);
    raise<FileError>("'{}': cannot {}: {}", path.string(), doing, std::strerror(err));
  };
  if (padding) {
    // Read-only zero pages for the whole padded length, then the file over their start (the tail
    // of the file's last page reads as zeros too). Read-only: populating a writable private
    // mapping would copy every page.
    auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    mapped = (size + padding + page - 1) / page * page;
    data = ::mmap(nullptr, mapped, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) fail("reserve memory to map it");
    if (size && ::mmap(data, size, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0) == MAP_FAILED)
      fail("map");
  } else if (size) {
    mapped = size;
    data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) fail("map");
  }
  ::close(fd);
  return std::make_shared<MappedFile>(data, size, mapped);
}

namespace {

// The live temp files: each slot holds a heap copy of a path (owned by the slot) or null. Slots
// are claimed and released with atomic exchanges, and the handler only reads them, so it needs
// no lock. A save with more live temp files than slots (a file per tensor of a large model)
// leaves the rest unlisted: a signal may leave those behind.
constexpr std::size_t kTempFileSlots = 4096;
std::array<std::atomic<char*>, kTempFileSlots> temp_file_slots{};
std::atomic<pid_t> temp_file_owner{0};  // the process whose handler removes them

int list_temp_file(const fs::path& path) {
  char* copy = ::strdup(path.c_str());
  if (!copy) return -1;
  for (std::size_t i = 0; i < kTempFileSlots; ++i) {
    char* empty = nullptr;
    if (temp_file_slots[i].compare_exchange_strong(empty, copy)) return static_cast<int>(i);
  }
  std::free(copy);
  return -1;
}

void unlist_temp_file(int slot) {
  if (slot >= 0) std::free(temp_file_slots[static_cast<std::size_t>(slot)].exchange(nullptr));
}

void remove_temp_files_and_reraise(int signal_number) {
  if (::getpid() == temp_file_owner.load())
    for (auto& slot : temp_file_slots)
      if (const char* path = slot.load()) ::unlink(path);
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

}  // namespace

void remove_temp_files_on_signals() {
  temp_file_owner = ::getpid();
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction current {};
    if (::sigaction(signal_number, nullptr, &current) != 0 || current.sa_handler == SIG_IGN) continue;
    struct sigaction action {};
    action.sa_handler = remove_temp_files_and_reraise;
    sigemptyset(&action.sa_mask);
    ::sigaction(signal_number, &action, nullptr);
  }
}

fs::path follow_symlinks(const fs::path& path) {
  fs::path current = path;
  for (int links = 0; links <= 40; ++links) {
    struct stat st {};
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return current;
    std::error_code ec;
    fs::path target = fs::read_symlink(current, ec);
    if (ec) raise<FileError>("'{}': cannot read the symbolic link: {}", current.string(), ec.message());
    current = target.is_absolute() ? target : current.parent_path() / target;
  }
  raise<FileError>("'{}': too many levels of symbolic links", path.string());
}

AtomicFileWriter::AtomicFileWriter(fs::path path) : path_(follow_symlinks(path)) {
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) raise<FileError>("'{}': is a directory, expected a file", path.string());
    // A device, FIFO or socket is written to as it is: replacing it would swap a system file
    // such as /dev/null for a regular one, or leave a FIFO's reader waiting.
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) raise<FileError>("'{}': cannot open for writing: {}", path.string(), std::strerror(errno));
    in_place_ = true;
    return;
  }
  std::random_device random;
  for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    temp_ = path_;
    temp_ += fmt::format(".parity-tmp-{:08x}", random());
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ >= 0) listed_slot_ = list_temp_file(temp_);
  if (fd_ < 0)
    raise<FileError>("'{}': cannot create a file there: {}", path_.string(), std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !in_place_) ::unlink(temp_.c_str());
  unlist_temp_file(listed_slot_);
}

namespace {
constexpr std::size_t kWriteBuffer = 1 << 20;
}

void AtomicFileWriter::write(std::string_view bytes) {
  if (bytes.size() >= kWriteBuffer) {
    flush();
    write_through(bytes);
    return;
  }
  if (buffer_.capacity() < kWriteBuffer) buffer_.reserve(kWriteBuffer);
  if (buffer_.size() + bytes.size() > kWriteBuffer) flush();
  buffer_.append(bytes);
}

void AtomicFileWriter::flush() {
  if (buffer_.empty()) return;
  write_through(buffer_);
  buffer_.clear();
}

void AtomicFileWriter::write_through(std::string_view bytes) {
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      raise<FileError>("'{}': write failed: {}", path_.string(), std::strerror(errno));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void AtomicFileWriter::finish() {
  if (fd_ < 0) return;
  flush();
  if (::fsync(fd_) != 0 && errno != EINVAL)
    raise<FileError>("'{}': fsync failed: {}", path_.string(), std::strerror(errno));
  int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0 && errno != EINTR)
    raise<FileError>("'{}': write failed: {}", path_.string(), std::strerror(errno));
}

void AtomicFileWriter::commit() {
  if (committed_) return;
  finish();
  if (!in_place_ && ::rename(temp_.c_str(), path_.c_str()) != 0)
    raise<FileError>("'{}': cannot move the finished file into place: {}", path_.string(), std::strerror(errno));
  committed_ = true;
  unlist_temp_file(listed_slot_);
  listed_slot_ = -1;
}

void write_file_atomic(const fs::path& path, std::string_view bytes) {
  AtomicFileWriter writer(path);
  writer.write(bytes);
  writer.commit();
}

}  // namespace parity
