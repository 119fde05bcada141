// A folder of its own under the system's temporary folder ($TMPDIR, else /tmp), made with mkdtemp
// (mode 0700) and removed with everything in it when the object goes. For work handed to another
// process (a Python script, a runner's subprocess) through files.
#pragma once

#include <filesystem>
#include <string>

namespace parity {

class TemporaryFolder {
 public:
  // `prefix` starts the folder's name ("parity-subprocess" -> parity-subprocess-XXXXXX); `purpose`
  // ends the FileError raised when it cannot be made ("cannot create a temporary folder for <purpose>").
  TemporaryFolder(const std::string& prefix, const std::string& purpose);
  ~TemporaryFolder();
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace parity
