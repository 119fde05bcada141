// numpy's legacy np.random.RandomState, replayed bit for bit without numpy: MT19937 with
// init_genrand seeding, random_sample's 53-bit doubles and randint's masked rejection sampling
// with its buffered 8/16-bit and bool paths; and numpy's one-step float64 -> float16 cast. The
// default data loader (data_loader.h) draws its values from it.
#pragma once

#include <cstdint>
#include <span>

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

}  // namespace parity::runtime
