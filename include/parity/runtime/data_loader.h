// Polygraphy's default data loader (comparator/data_loader.py), reproduced bit for bit without
// numpy: its values come from NumpyRandomState (numpy_random_state.h), and DataLoader applies
// Polygraphy's rules for value ranges, dynamic dims, --input-shapes overrides and shape-tensor
// inputs.
//
// For iteration i the loader seeds a fresh RandomState(seed + i) and draws every input, in
// metadata order, from that one stream:
//   floats  random_sample(shape) * (max - min) + min, computed in double, then cast (float16
//           rounds directly from double, as numpy does)
//   ints    randint(int(min), int(max) + 1, shape, dtype)  (inclusive; int() truncates)
//   bool    randint(bool(min), bool(max) + 1, shape, bool)
// bfloat16 (numpy has none, so Polygraphy cannot generate it) is produced like ml_dtypes'
// astype(bfloat16) from float64: rounded to float32 first, then to bfloat16 (ties to even).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "parity/core/array_io.h"
#include "parity/core/tensor_metadata.h"
#include "parity/runtime/numpy_random_state.h"

namespace parity::runtime {

struct DataLoaderOptions {
  uint32_t seed = 1;    // Polygraphy's DEFAULT_SEED
  int iterations = 1;
  // --val-range: input name (exact, no wildcards) -> [min, max]; the key "" is the default for
  // inputs not listed. Empty: [0, 1] for every input. A later duplicate key wins.
  std::vector<std::pair<std::string, std::pair<double, double>>> val_ranges;
  // --input-shapes: name or fnmatch pattern -> shape. When several keys match one input the
  // last one wins. A negative dim marks the given shape as dynamic (it is then ignored, with a
  // warning, as Polygraphy does).
  std::vector<std::pair<std::string, std::vector<int64_t>>> input_shapes;
  // --data-loader-backend-module: "numpy" (NumpyRandomState) or "torch" (TorchRandomGenerator,
  // seeded with seed + iteration; floats come from torch.rand, which ignores the value range, as
  // in Polygraphy; an undefined dtype is generated as float32; a bool input is refused, since
  // Polygraphy's torch.randint call fails on it).
  std::string backend_module = "numpy";
};

class DataLoader {
 public:
  // Throws InvalidInputError for a negative iteration count, a backend module other than "numpy"
  // and "torch" (Polygraphy's message), or a value range with min > max
  // (naming the range's key; "" is reported as the default range).
  explicit DataLoader(DataLoaderOptions options = {});

  int iterations() const { return options_.iterations; }
  const DataLoaderOptions& options() const { return options_; }

  // The feed for `iteration` (0 <= iteration < iterations()), one tensor per input of
  // `metadata`, in its order. Dynamic dims take their min bound, else their max bound, else 1
  // ("Will generate data of shape: ..." is logged once per input and shape). A 1-D integer input
  // with static shape [k] whose exact name has an --input-shapes entry of length k receives
  // those k numbers as its values (TensorRT shape tensors), drawing nothing. An input of
  // undefined dtype is generated as float64 (numpy's astype(None)), or int64 for a shape
  // tensor. Throws InvalidInputError naming the
  // input for: a dtype that cannot be generated (string, complex, float8, int4...), an exact-name
  // shape override of another rank or contradicting a static dim (a wildcard override that does
  // not fit only warns, like Polygraphy), an unknown rank without an override, an integer range
  // outside the dtype or min > max after int()/bool() conversion, and a seed + iteration beyond
  // 2^32 - 1. Unused --input-shapes / --val-range keys are warned about once per DataLoader.
  NamedTensors generate(const TensorMetadata& metadata, int iteration) const;

  // generate() for every iteration.
  std::vector<NamedTensors> generate_all(const TensorMetadata& metadata) const;

 private:
  struct LogState;
  DataLoaderOptions options_;
  std::shared_ptr<LogState> log_state_;
};

}  // namespace parity::runtime
