// PyTorch's CPU generator (torch.Generator().manual_seed(seed)), replayed bit for bit without
// torch, for the data loader's "torch" backend module (data_loader.h). Rules, checked against
// torch 2.13 on CPU:
//   engine      MT19937 seeded with the low 32 bits of the seed (init_genrand)
//   random64    two draws, the first one in the high half
//   rand        float32: (draw & (2^24 - 1)) * 2^-24; float64: (random64 & (2^53 - 1)) * 2^-53;
//               float16 / bfloat16: the float32 value, rounded to nearest even; a value that
//               rounds up to 1 becomes 0, as in torch
//   randint     (draw % (high - low)) + low, with random64 when high - low >= 2^28, else one draw
// Every tensor is filled in C order, one element after another.
#pragma once

#include <cstdint>
#include <random>

#include "parity/core/tensor.h"

namespace parity::runtime {

class TorchRandomGenerator {
 public:
  explicit TorchRandomGenerator(uint64_t seed);

  uint32_t random();
  uint64_t random64();

  // torch.rand(shape, generator=g, dtype=...) into `tensor` (float32, float64, float16, bfloat16).
  void rand(Tensor& tensor);
  // torch.randint(low, high_exclusive, shape, generator=g, dtype=...) into `tensor` (an integer
  // dtype or bool). The caller checks that low < high_exclusive and that both fit the dtype.
  void randint(Tensor& tensor, int64_t low, int64_t high_exclusive);

 private:
  std::mt19937 engine_;
};

}  // namespace parity::runtime
