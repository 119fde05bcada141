// Polygraphy's default data loader (comparator/data_loader.py), reproduced bit for bit without
// numpy: NumpyRandomState replays numpy's legacy np.random.RandomState (MT19937 with
// init_genrand seeding, random_sample's 53-bit doubles and randint's masked rejection sampling
// with its buffered 8/16-bit and bool paths), and DataLoader applies Polygraphy's rules for
// value ranges, dynamic dims, --input-shapes overrides and shape-tensor inputs.
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
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "parity/core/array_io.h"
#include "parity/core/tensor_metadata.h"

namespace parity::runtime {

// numpy's legacy np.random.RandomState(seed) for an integer seed in [0, 2^32 - 1].
class NumpyRandomState {
 public:
  explicit NumpyRandomState(uint32_t seed);

  // One tempered MT19937 output.
  uint32_t next_uint32();
  // Two outputs, the first one in the high half (numpy's next_uint64 for MT19937).
  uint64_t next_uint64();

  // random_sample(): (a >> 5, b >> 6) of two draws combined into a double in [0, 1).
  double random_sample();
  // random_sample(size=n), C order.
  void random_sample(std::span<double> out);

  // randint(low, high + 1, size=out.size(), dtype=T): uniform values in [low, high], inclusive,
  // drawn exactly as numpy's RandomState.randint draws them. T is one of int8_t, int16_t,
  // int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, bool. Throws InvalidInputError when
  // low > high. A range of one value draws nothing.
  template <typename T>
  void randint_inclusive(T low, T high, std::span<T> out);

 private:
  void regenerate();
  uint32_t key_[624];
  int pos_ = 624;
};

// IEEE binary16 bits of `value`, rounded once from double (nearest, ties to even) as numpy's
// float64 -> float16 cast does; NaN keeps its top payload bits (never becomes infinity).
uint16_t double_to_float16_bits(double value);

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
};

class DataLoader {
 public:
  // Throws InvalidInputError for a negative iteration count or a value range with min > max
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
