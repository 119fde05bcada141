// A tensor's calibration statistics, gathered batch by batch in bounded memory: the largest |x|
// (min-max calibration) and a histogram of |x| with a fixed number of equal bins over [0, range)
// (percentile and entropy calibration).
//
// The range is set by the first batch with a non-zero value (its largest |x|, so that batch's
// histogram is numpy's np.histogram(|x|, kBins, range=(0, max))). A later batch reaching past it
// doubles the range, adding each pair of neighbouring bins into one, until it fits: the memory is
// kBins counters per tensor whatever the number of batches, and the histogram is always exact for
// its bins (a value on the top edge, kept in the last bin as numpy does, moves to the bin starting
// there when the range doubles). Zeros seen before any non-zero value wait in a counter and go into bin 0. NaN and
// infinities are counted apart and left out of the statistics.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace parity::quantize {

class AbsHistogram {
 public:
  static constexpr int kBins = 2048;

  void add(std::span<const float> values);
  // Only the count and the largest |x| (min-max calibration needs no bins): bins() stays empty.
  void add_max_only(std::span<const float> values);

  // Values added (finite ones), and non-finite values left out.
  int64_t count() const { return count_; }
  int64_t non_finite() const { return non_finite_; }
  // The largest |x| added (0 before any non-zero value).
  double max_abs() const { return max_abs_; }
  // The histogram's top edge (0 while every value was zero: then `bins()` is empty).
  double range() const { return range_; }
  double bin_width() const { return range_ / kBins; }
  // kBins counts (bin i holds |x| in [i*width, (i+1)*width); the last one also its top edge), or
  // empty while every value was zero.
  const std::vector<int64_t>& bins() const { return bins_; }

 private:
  void grow_to(double max_abs);

  std::vector<int64_t> bins_;
  int64_t count_ = 0;
  int64_t zeros_before_range_ = 0;
  int64_t at_range_ = 0;  // values equal to range_ (in the last bin; bin kBins / 2 once it doubles)
  int64_t non_finite_ = 0;
  double max_abs_ = 0;
  double range_ = 0;
};

// The largest finite |x| of `values` and how many of them are finite: with AVX-512 where the CPU
// has it (min-max calibration reads every calibrated activation of every batch through this).
std::pair<double, int64_t> finite_max_abs(std::span<const float> values);

namespace detail {
// The two ways finite_max_abs() goes, for tests: portable C++, and AVX-512F (call it only when
// finite_max_abs_avx512_available()).
std::pair<double, int64_t> finite_max_abs_portable(std::span<const float> values);
bool finite_max_abs_avx512_available();
std::pair<double, int64_t> finite_max_abs_avx512(std::span<const float> values);
}  // namespace detail

}  // namespace parity::quantize
