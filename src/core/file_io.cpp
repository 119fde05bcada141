#include "parity/core/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

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
  std::string bytes;
  bytes.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (true) {
    if (done == bytes.size()) bytes.resize(bytes.size() + 65536);  // grows for files stat cannot size
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
  MappedFile(void* data, std::size_t size) : data_(data), size_(size) {}
  ~MappedFile() override {
    if (size_) ::munmap(data_, size_);
  }
  std::byte* data() override { return static_cast<std::byte*>(data_); }
  std::size_t size() const override { return size_; }

 private:
  void* data_;
  std::size_t size_;
};

}  // namespace

std::shared_ptr<Storage> map_file(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) raise<FileError>("'{}': cannot open: {}", path.string(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    raise<FileError>("'{}': not a regular file", path.string());
  }
  auto size = static_cast<std::size_t>(st.st_size);
  void* data = nullptr;
  if (size) {
    data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      raise<FileError>("'{}': cannot map: {}", path.string(), std::strerror(err));
    }
  }
  ::close(fd);
  return std::make_shared<MappedFile>(data, size);
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

void AtomicFileWriter::write(std::string_view bytes) {
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
