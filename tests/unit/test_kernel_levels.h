// A fixture for tests that run once per statistics kernel level (test_statistics.cpp,
// test_pair_statistics_fast.cpp): the portable kernels always, the AVX-512 ones where the CPU
// has them (elsewhere that instance is skipped with the reason printed).
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "../../src/statistics/fast/float_kernels.h"

namespace parity::statistics::detail::kernels {

class KernelLevelTest : public ::testing::TestWithParam<Level> {
 protected:
  void SetUp() override {
    force_level(GetParam());
    if (level() != GetParam()) GTEST_SKIP() << "this CPU has no AVX-512: only the portable kernels run here";
  }
  void TearDown() override { force_level(Level::kAvx512); }
};

inline auto both_levels() { return ::testing::Values(Level::kPortable, Level::kAvx512); }

inline std::string level_name(const ::testing::TestParamInfo<Level>& info) {
  return info.param == Level::kAvx512 ? "Avx512" : "Portable";
}

}  // namespace parity::statistics::detail::kernels
