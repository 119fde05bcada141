#include "parity/debug/artifacts.h"

#include <filesystem>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::debug {

namespace fs = std::filesystem;

void ArtifactSorter::sort(bool passed, const std::string& suffix) const {
  for (const auto& artifact : artifacts_) {
    fs::path source(artifact);
    fs::path destination = fs::path(directory_) / (passed ? "good" : "bad") /
                           fmt::format("{}_{}{}", source.stem().string(), suffix, source.extension().string());
    std::error_code error;
    if (!fs::exists(source, error)) {
      log::error("Artifact {} does not exist after {}, skipping", artifact, suffix);
      continue;
    }
    if (fs::exists(destination, error)) {
      log::error("Artifact destination {} already exists; not overwriting it", destination.string());
      continue;
    }
    fs::create_directories(destination.parent_path(), error);
    fs::rename(source, destination, error);
    if (error) {  // another file system
      error.clear();
      fs::copy_file(source, destination, error);
      if (!error) fs::remove(source, error);
    }
    if (error) raise<FileError>("cannot move artifact {} to {}: {}", artifact, destination.string(), error.message());
    log::info("Moved {} to {}", artifact, destination.string());
  }
}

}  // namespace parity::debug
