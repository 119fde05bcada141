// Helpers shared by the unit tests: a temporary folder removed on scope exit, the message of an
// expected exception, whole-file reads.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace parity::testing_support {

class TempDir {
 public:
  // A fresh folder under the system's temporary directory, named "<prefix>-XXXXXX".
  explicit TempDir(const std::string& prefix) {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// The message of the exception of type E that fn throws; a marker string when it throws none.
template <typename E, typename Fn>
std::string message_of_thrown(Fn&& fn) {
  try {
    fn();
  } catch (const E& error) {
    return error.what();
  }
  return "(nothing thrown)";
}

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace parity::testing_support
