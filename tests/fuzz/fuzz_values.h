// Values for the structured fuzzer (tests/fuzz): a seeded source of the extreme values that valid
// files and models can still carry (int64 limits, zero and negative sizes, NaN and infinities, long
// names, deep nesting), mixed with ordinary small ones so that most cases get past the first check.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace parity::fuzz {

class FuzzValues {
 public:
  explicit FuzzValues(uint64_t seed) : rng_(seed) {}

  uint64_t next() { return rng_(); }
  // Uniform in [0, n) (0 when n is 0).
  uint64_t below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  // True with probability 1/n.
  bool one_in(uint64_t n) { return below(n) == 0; }
  template <typename T>
  T pick(std::initializer_list<T> values) {
    return *(values.begin() + below(values.size()));
  }
  template <typename T>
  const T& pick(const std::vector<T>& values) {
    return values[below(values.size())];
  }

  // An integer: small (-3..3) half of the time, else an extreme (int64/int32 limits, powers of two
  // around them, -1, 0).
  int64_t integer();
  // A size or dimension: 0..3 mostly; sometimes 0, negative, or huge.
  int64_t dim();
  // A small real size (0..3) for data that is actually allocated.
  int64_t small_dim() { return static_cast<int64_t>(below(4)); }
  double real();  // NaN, infinities, -0, denormals, float limits, small values
  // A name: short most of the time; sometimes empty, 4,096+ characters long, or with quotes,
  // line breaks, NUL, non-ASCII or invalid UTF-8 bytes.
  std::string name();
  // Up to `max` random bytes.
  std::string bytes(std::size_t max);

 private:
  std::mt19937_64 rng_;
};

}  // namespace parity::fuzz
