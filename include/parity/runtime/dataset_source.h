// A dataset that can be split: every sample is loaded by its index, so any process can load any
// share of it (the local workers of `parity run --workers`, Ray actors). Two forms:
//   - a folder of `.npz` files, one sample each (input name -> array), in the order of their file
//     names (byte order);
//   - a Python script defining `num_samples()` and `load(i)`, which returns the feed of sample i
//     as a dict of input name -> array (numpy arrays, torch tensors, or anything numpy.asarray
//     takes); it runs in a Python worker (python_worker.h) started once per source.
// Polygraphy's --data-loader-script generators are one stream and stay as they are
// (tools/parity/args/python_scripts.h). docs/dataset-validation.md describes both forms.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "parity/core/array_io.h"

namespace parity::runtime {

class DatasetSource {
 public:
  virtual ~DatasetSource() = default;
  virtual std::size_t size() const = 0;
  // The feed of sample `index` (< size()). Throws InvalidInputError naming the sample when it
  // cannot be loaded.
  virtual NamedTensors load(std::size_t index) = 0;
  // "folder data/ (2000 .npz files)" or "script load.py"
  virtual std::string describe() const = 0;
};

// `spec` is a folder (of .npz files) or a `.py` file. Throws FileError for a path that does not
// exist, InvalidInputError for a folder without .npz files, a script without num_samples/load, or
// num_samples() that is not a non-negative integer. `python` runs the script.
std::unique_ptr<DatasetSource> open_dataset(const std::string& spec, const std::string& python);

}  // namespace parity::runtime
