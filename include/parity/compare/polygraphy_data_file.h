// Loading a Polygraphy data file of either kind, as `polygraphy data to-input` and `polygraphy
// inspect data` do (json.load_json): a RunResults file (--save-outputs) or an inputs file
// (--save-inputs: a list of {name: array} feed dicts; a single feed dict is taken as one iteration).
#pragma once

#include <filesystem>
#include <vector>

#include "parity/compare/accuracy.h"
#include "parity/core/array_io.h"

namespace parity::compare {

struct PolygraphyData {
  bool is_run_results = false;
  RunResults results;                // when is_run_results
  std::vector<NamedTensors> inputs;  // otherwise
};

// Throws FileError / InvalidInputError naming `path`.
PolygraphyData load_polygraphy_data(const std::filesystem::path& path);

}  // namespace parity::compare
