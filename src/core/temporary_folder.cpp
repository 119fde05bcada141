#include "parity/core/temporary_folder.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>

#include "parity/core/error.h"

namespace parity {

namespace fs = std::filesystem;

TemporaryFolder::TemporaryFolder(const std::string& prefix, const std::string& purpose) {
  std::error_code error;
  fs::path base = fs::temp_directory_path(error);
  if (error) raise<FileError>("cannot create a temporary folder for {}: {}", purpose, error.message());
  std::string pattern = (base / (prefix + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    raise<FileError>("cannot create a temporary folder for {} in {}: {}", purpose, base.string(),
                     std::strerror(errno));
  path_ = pattern;
}

TemporaryFolder::~TemporaryFolder() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

}  // namespace parity
