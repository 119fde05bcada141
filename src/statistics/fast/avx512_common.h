// What the AVX-512 kernels of statistics share (private): the target their functions are built for
// and the mask of a vector's lanes that hold values. Included by the kernels' .cpp files only.
#pragma once

// GCC 12's AVX-512 intrinsic headers build results from _mm512_undefined_*() and then warn about them.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>

#define PARITY_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl")))

namespace parity::statistics::detail::kernels {

// The lanes of a 16-float vector that hold values when `remaining` values are left.
PARITY_AVX512 inline __mmask16 tail_mask(int64_t remaining) {
  return remaining >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << remaining) - 1u);
}

}  // namespace parity::statistics::detail::kernels
