// Shared helpers for the compare-layer unit tests (test_compare*.cpp).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "parity/compare/compare_func.h"
#include "parity/core/half.h"
#include "parity/core/logger.h"
#include "parity/core/tensor.h"

namespace parity::compare::testing {

// Captures everything parity::Logger prints while alive (at `severity` and above).
class LogCapture {
 public:
  explicit LogCapture(Severity severity = Severity::kInfo) {
    stream_ = open_memstream(&buffer_, &size_);
    previous_ = Logger::global().severity();
    Logger::global().set_severity(severity);
    Logger::global().set_stream(stream_);
    reset_log_once();
  }
  ~LogCapture() {
    Logger::global().set_stream(stdout);
    Logger::global().set_severity(previous_);
    std::fclose(stream_);
    std::free(buffer_);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string text() {
    std::fflush(stream_);
    return std::string(buffer_, size_);
  }
  bool contains(const std::string& needle) { return text().find(needle) != std::string::npos; }

 private:
  std::FILE* stream_ = nullptr;
  char* buffer_ = nullptr;
  std::size_t size_ = 0;
  Severity previous_ = Severity::kInfo;
};

template <typename T>
Tensor make_tensor(DType dtype, Shape shape, std::initializer_list<T> values) {
  std::vector<T> v(values);
  return Tensor::from_bytes(dtype, std::move(shape), v.data(), v.size() * sizeof(T));
}

inline Tensor f32(Shape shape, std::initializer_list<float> values) {
  return make_tensor<float>(DType::kFloat32, std::move(shape), values);
}
inline Tensor f32(std::initializer_list<float> values) {
  return f32(Shape{static_cast<int64_t>(values.size())}, values);
}
inline Tensor f64(std::initializer_list<double> values) {
  return make_tensor<double>(DType::kFloat64, Shape{static_cast<int64_t>(values.size())}, values);
}
inline Tensor f16(std::initializer_list<float> values) {
  std::vector<uint16_t> bits;
  for (float v : values) bits.push_back(float_to_float16_bits(v));
  return Tensor::from_bytes(DType::kFloat16, Shape{static_cast<int64_t>(bits.size())}, bits.data(), bits.size() * 2);
}
inline Tensor boolean(std::initializer_list<bool> values) {
  std::vector<uint8_t> bytes;
  for (bool v : values) bytes.push_back(v ? 1 : 0);
  return Tensor::from_bytes(DType::kBool, Shape{static_cast<int64_t>(bytes.size())}, bytes.data(), bytes.size());
}
template <typename T>
Tensor ints(DType dtype, std::initializer_list<T> values) {
  return make_tensor<T>(dtype, Shape{static_cast<int64_t>(values.size())}, values);
}

inline IterationResult iteration(const std::string& runner, NamedTensors outputs) {
  IterationResult r;
  r.runner_name = runner;
  r.outputs = std::move(outputs);
  return r;
}

}  // namespace parity::compare::testing
