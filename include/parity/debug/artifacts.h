// Artifact sorting of the debug tools (Polygraphy's --artifacts/--artifacts-dir): after each check,
// the files named are moved into <dir>/good or <dir>/bad with the iteration in their name.
#pragma once

#include <string>
#include <vector>

namespace parity::debug {

class ArtifactSorter {
 public:
  ArtifactSorter(std::vector<std::string> artifacts, std::string directory)
      : artifacts_(std::move(artifacts)), directory_(std::move(directory)) {}

  // Moves each artifact to <directory>/(good|bad)/<stem>_<suffix><extension>. A missing artifact
  // or an existing destination is logged as an error and skipped; a move that fails throws
  // FileError.
  void sort(bool passed, const std::string& suffix) const;

 private:
  std::vector<std::string> artifacts_;
  std::string directory_;
};

}  // namespace parity::debug
