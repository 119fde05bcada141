// Helpers shared by the data loader and NumpyRandomState unit tests (test_data_loader.cpp,
// test_numpy_random_state.cpp): the Python peer (numpy and Polygraphy, from PARITY_PYTHON) and a
// bit-for-bit tensor comparison.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "test_support.h"
#include "parity/core/half.h"
#include "parity/core/tensor.h"

namespace parity::runtime::testing {

using testing_support::TempDir;
using testing_support::read_bytes;

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

// The interpreter from PARITY_PYTHON, checked to import numpy and Polygraphy's DataLoader.
// Records a test failure (never a skip) and returns nullopt when it is unusable.
inline std::optional<std::string> peer_python() {
  const char* env = std::getenv("PARITY_PYTHON");
  if (!env || !*env) {
    ADD_FAILURE() << "PARITY_PYTHON is not set; the peer tests need a Python with numpy and "
                     "polygraphy (ctest sets it; by hand use "
                     "PARITY_PYTHON=/work/main/.venv/bin/python)";
    return std::nullopt;
  }
  const std::string command =
      shell_quote(env) +
      " -c 'import numpy; from polygraphy.comparator import DataLoader; "
      "from polygraphy.common import TensorMetadata' >/dev/null 2>&1";
  const int rc = std::system(command.c_str());
  if (rc != 0) {
    ADD_FAILURE() << "PARITY_PYTHON=" << env
                  << " cannot import numpy and polygraphy (from polygraphy.comparator import "
                     "DataLoader); the peer tests need both";
    return std::nullopt;
  }
  return std::string(env);
}

// Writes `script` to dir/name and runs it there. Records a failure with its output on error.
inline bool run_python(const std::string& python, const TempDir& dir, const std::string& name,
                const std::string& script) {
  {
    std::ofstream out(dir / name);
    out << script;
  }
  const std::string command = fmt::format("cd {} && {} {} > python.log 2>&1",
                                          shell_quote(dir.path().string()), shell_quote(python),
                                          shell_quote(name));
  const int rc = std::system(command.c_str());
  if (rc != 0) {
    ADD_FAILURE() << name << " failed (status " << rc << "):\n" << read_bytes(dir / "python.log");
    return false;
  }
  return true;
}

// Index of the first element whose bytes differ, or -1.
inline int64_t first_difference(const TensorView& a, const TensorView& b) {
  const std::size_t width = storage_bytes(a.dtype(), 1);
  const auto* pa = static_cast<const unsigned char*>(a.raw());
  const auto* pb = static_cast<const unsigned char*>(b.raw());
  for (int64_t i = 0; i < a.size(); ++i)
    if (std::memcmp(pa + i * width, pb + i * width, width) != 0) return i;
  return -1;
}

inline std::string element_string(const TensorView& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return fmt::format("{}", t.data<float>()[i]);
    case DType::kFloat64: return fmt::format("{}", t.data<double>()[i]);
    case DType::kFloat16:
      return fmt::format("{} (0x{:04x})", float16_bits_to_float(t.data<uint16_t>()[i]), t.data<uint16_t>()[i]);
    case DType::kInt8: return fmt::format("{}", t.data<int8_t>()[i]);
    case DType::kInt16: return fmt::format("{}", t.data<int16_t>()[i]);
    case DType::kInt32: return fmt::format("{}", t.data<int32_t>()[i]);
    case DType::kInt64: return fmt::format("{}", t.data<int64_t>()[i]);
    case DType::kUInt8: return fmt::format("{}", t.data<uint8_t>()[i]);
    case DType::kUInt16: return fmt::format("{}", t.data<uint16_t>()[i]);
    case DType::kUInt32: return fmt::format("{}", t.data<uint32_t>()[i]);
    case DType::kUInt64: return fmt::format("{}", t.data<uint64_t>()[i]);
    case DType::kBool: return fmt::format("{}", t.data<bool>()[i]);
    default: return "?";
  }
}

// EXPECTs `actual` to equal `expected` bit for bit (dtype, shape, bytes).
inline void expect_identical(const TensorView& expected, const TensorView& actual, const std::string& what) {
  ASSERT_EQ(dtype_name(expected.dtype()), dtype_name(actual.dtype())) << what;
  ASSERT_EQ(shape_to_string(expected.shape()), shape_to_string(actual.shape())) << what;
  const int64_t diff = first_difference(expected, actual);
  EXPECT_EQ(diff, -1) << what << ": first difference at flat index " << diff << ": numpy "
                      << (diff >= 0 ? element_string(expected, diff) : "") << ", Parity "
                      << (diff >= 0 ? element_string(actual, diff) : "");
}

}  // namespace parity::runtime::testing
