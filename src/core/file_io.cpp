#include "parity/core/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "parity/core/allocation_limit.h"
#include "parity/core/error.h"
#include "parity/core/tensor.h"

namespace parity {
namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
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
      const uint64_t limit = allocation_limit();
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

AtomicFileWriter::AtomicFileWriter(fs::path path) : path_(std::move(path)) {
  std::random_device random;
  for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    temp_ = path_;
    temp_ += fmt::format(".parity-tmp-{:08x}", random());
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0)
    raise<FileError>("'{}': cannot create a file there: {}", path_.string(), std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
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

void AtomicFileWriter::commit() {
  if (committed_) return;
  flush();
  if (::fsync(fd_) != 0 && errno != EINVAL)
    raise<FileError>("'{}': fsync failed: {}", path_.string(), std::strerror(errno));
  ::close(fd_);
  fd_ = -1;
  if (::rename(temp_.c_str(), path_.c_str()) != 0)
    raise<FileError>("'{}': cannot move the finished file into place: {}", path_.string(), std::strerror(errno));
  committed_ = true;
}

void write_file_atomic(const fs::path& path, std::string_view bytes) {
  AtomicFileWriter writer(path);
  writer.write(bytes);
  writer.commit();
}

}  // namespace parity
