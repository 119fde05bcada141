// RunResults files in Polygraphy's format (`--save-outputs` / `--load-outputs`,
// polygraphy/comparator/struct.py and polygraphy/json/serde.py):
//
//   {"lst": [[runner_name, [IterationResult, ...]], ...], "polygraphy_class": "RunResults"}
//   IterationResult: {"outputs": {name: {"values": {"array": base64 npy, "polygraphy_class":
//                    "ndarray"}, "polygraphy_class": "LazyArray"}}, "runtime": seconds | null,
//                    "runner_name": str, "polygraphy_class": "IterationResult"}
//
// Written with Python's json.dumps(indent=4) layout, streamed (no whole-file buffer) and atomically
// (temp file + rename). Reading accepts the legacy "__polygraphy_encoded_<Class>" markers and the
// "LazyNumpyArray" alias, and a LazyArray's "values" may also be a bare ndarray object.
// Beyond Polygraphy, load_run_results also reads an .npz archive (told by its leading bytes) as one
// runner, named after the file, with one iteration whose outputs are the archive's arrays.
#pragma once

#include <filesystem>

#include "parity/compare/accuracy.h"

namespace parity::compare {

// Throws FileError (cannot write) or InvalidInputError (a name that is not valid UTF-8, a dtype
// numpy cannot hold); the destination is untouched on failure.
void save_run_results(const std::filesystem::path& path, const RunResults& results);

// Throws FileError (cannot read) or InvalidInputError naming the file and the place in it.
RunResults load_run_results(const std::filesystem::path& path);

}  // namespace parity::compare
