// Helpers shared by the array-file unit tests (test_array_io_*.cpp): files and tensors built by
// hand, error expectations, and the Python peer (numpy and Polygraphy, from PARITY_PYTHON).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "test_support.h"
#include "parity/core/array_io.h"
#include "parity/core/tensor.h"

namespace parity::array_io_testing {

namespace fs = std::filesystem;
using testing_support::TempDir;
using testing_support::read_bytes;
using namespace std::string_literals;

inline void write_bytes(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

inline std::string tensor_bytes(const Tensor& t) {
  return std::string(static_cast<const char*>(t.raw()), t.byte_size());
}

// Expects `fn` to throw exactly E (or a subclass) with every needle in its message.
template <typename E, typename Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& needles, const std::string& label) {
  try {
    fn();
    ADD_FAILURE() << label << ": no exception was thrown";
  } catch (const E& e) {
    std::string message = e.what();
    for (const auto& needle : needles)
      EXPECT_NE(message.find(needle), std::string::npos)
          << label << ": message \"" << message << "\" does not mention \"" << needle << "\"";
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << ": wrong exception type; message: " << e.what();
  }
}

template <typename T, typename Fn>
Tensor make_tensor(DType dtype, Shape shape, Fn fn) {
  Tensor t = Tensor::zeros(dtype, std::move(shape));
  auto values = t.mutable_span<T>();
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(fn(static_cast<int64_t>(i)));
  return t;
}

inline Tensor make_strings(Shape shape, const std::vector<std::string>& values) {
  Tensor t = Tensor::zeros(DType::kString, std::move(shape));
  auto out = t.mutable_span<std::string>();
  EXPECT_EQ(out.size(), values.size());
  for (std::size_t i = 0; i < out.size() && i < values.size(); ++i) out[i] = values[i];
  return t;
}

// Deterministic contents for any numpy-representable dtype (bit patterns, so NaNs may occur).
inline Tensor sample_tensor(DType dtype, const Shape& shape) {
  Tensor t = Tensor::zeros(dtype, shape);
  if (dtype == DType::kString) {
    const char* pool[] = {"", "a", "h\xc3\xa9llo", "xyz\xf0\x9f\x98\x80", "tab\there", "nul\0mid"};
    auto s = t.mutable_span<std::string>();
    for (std::size_t i = 0; i < s.size(); ++i)
      s[i] = i % 6 == 5 ? std::string("nul\0mid", 7) : std::string(pool[i % 6]) + std::to_string(i % 4);
    return t;
  }
  auto* bytes = static_cast<unsigned char*>(t.mutable_raw());
  if (dtype == DType::kBool) {
    for (int64_t i = 0; i < t.size(); ++i) bytes[i] = i % 3 == 0;
    return t;
  }
  for (std::size_t k = 0; k < t.byte_size(); ++k) bytes[k] = static_cast<unsigned char>(k * 37 + 11);
  return t;
}

// Header text padded with spaces and '\n' so that the whole prefix is a multiple of `align`.
inline std::string npy_file(const std::string& dict, std::string_view data, int major = 1, std::size_t align = 64) {
  std::size_t prefix = 8 + (major == 1 ? 2 : 4);
  std::string header = dict;
  while ((prefix + header.size() + 1) % align != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  for (std::size_t k = 0; k < (major == 1 ? 2u : 4u); ++k)
    out.push_back(static_cast<char>((header.size() >> (8 * k)) & 0xFF));
  out += header;
  out.append(data);
  return out;
}

template <typename T>
std::string le_bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// Each element's bytes reversed (big-endian file data from native values).
template <typename T>
std::string be_bytes(const std::vector<T>& values, std::size_t unit = sizeof(T)) {
  std::string bytes = le_bytes(values);
  for (std::size_t i = 0; i + unit <= bytes.size(); i += unit)
    std::reverse(bytes.begin() + i, bytes.begin() + i + unit);
  return bytes;
}

// --- the Python peer ---

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? "'\\''"s : std::string(1, c);
  return out + "'";
}

struct PythonResult {
  int status = -1;
  std::string output;
};

inline PythonResult run_python(const std::string& python, const fs::path& dir, const std::string& script,
                        const std::vector<std::string>& args = {}) {
  static int counter = 0;
  fs::path file = dir / ("snippet_" + std::to_string(counter++) + ".py");
  write_bytes(file, script);
  std::string command = shell_quote(python) + " " + shell_quote(file.string());
  for (const auto& arg : args) command += " " + shell_quote(arg);
  command += " 2>&1";
  PythonResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  std::size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The interpreter from PARITY_PYTHON, checked to have numpy and Polygraphy. Records a test failure
// and returns "" when it is missing: peer tests never skip silently.
inline std::string require_python() {
  const char* env = std::getenv("PARITY_PYTHON");
  if (!env || !*env) {
    ADD_FAILURE() << "PARITY_PYTHON is not set; the peer tests need a Python with numpy and polygraphy "
                     "(ctest sets it; by hand use PARITY_PYTHON=/work/main/.venv/bin/python)";
    return "";
  }
  static std::string checked;
  if (checked == env) return checked;
  TempDir dir{"parity-array-io"};
  PythonResult r = run_python(env, dir.path(), "import numpy, polygraphy.json\nprint('ok')\n");
  if (r.status != 0 || r.output.find("ok") == std::string::npos) {
    ADD_FAILURE() << "PARITY_PYTHON=" << env << " cannot import numpy and polygraphy.json (exit "
                  << r.status << "):\n" << r.output;
    return "";
  }
  checked = env;
  return checked;
}

#define REQUIRE_PYTHON(var)            \
  const std::string var = require_python(); \
  if (var.empty()) return

// Runs a peer script that must exit 0.
inline void expect_python_ok(const std::string& python, const fs::path& dir, const std::string& script,
                      const std::vector<std::string>& args, const std::string& label) {
  PythonResult r = run_python(python, dir, script, args);
  EXPECT_EQ(r.status, 0) << label << " failed:\n" << r.output;
}

inline void expect_same_arrays(const NamedTensors& a, const NamedTensors& b, const std::string& label) {
  ASSERT_EQ(a.size(), b.size()) << label;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first) << label;
    EXPECT_TRUE(identical(a[i].second, b[i].second)) << label << ": " << a[i].first;
  }
}

}  // namespace parity::array_io_testing
