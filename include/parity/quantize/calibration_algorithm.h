// The calibration algorithms: each turns a tensor's AbsHistogram into the amax (the largest |x|
// int8 represents; the symmetric scale is amax / 127), docs/int8.md.
//   minmax      the largest |x| seen.
//   percentile  the top edge of the histogram bin where the cumulative count reaches P% of the
//               values (P = --percentile, default 99.99), at most the largest |x|.
//   entropy     TensorRT's EntropyCalibration2: for each candidate i of 128..2048 bins, the
//               reference distribution P is the first i bins with the rest of the histogram added
//               into bin i-1, the candidate Q is those i bins merged into 128 levels and spread
//               back evenly over each level's non-empty bins; the i whose KL(P || Q) is smallest
//               (the last of equal ones) gives amax = i * bin width. Bin 0 is counted as bin 1 (the
//               zeros a ReLU makes would otherwise weigh on every candidate alike).
#pragma once

#include <string>
#include <string_view>

#include "parity/quantize/abs_histogram.h"

namespace parity::quantize {

enum class CalibrationAlgo { kEntropy, kMinMax, kPercentile };

// "entropy", "minmax", "percentile" (the --calibration-algo values); throws InvalidInputError.
CalibrationAlgo parse_calibration_algo(std::string_view name);
std::string calibration_algo_flag_name(CalibrationAlgo algo);
// The algorithm's name in a TensorRT calibration cache header: EntropyCalibration2,
// MinMaxCalibration, PercentileCalibration (Parity's; TensorRT has no percentile calibrator).
std::string calibration_algo_cache_name(CalibrationAlgo algo);

struct CalibrationSettings {
  CalibrationAlgo algo = CalibrationAlgo::kEntropy;
  double percentile = 99.99;  // percentile only, in (0, 100]
};

// The amax of one tensor's statistics (0 when every value was zero).
double amax_from(const AbsHistogram& histogram, const CalibrationSettings& settings);

// The pieces, for tests and callers holding a histogram of their own.
double amax_percentile(const AbsHistogram& histogram, double percentile);
// `bins`: counts over [0, range) in equal bins (at least 128 of them).
double amax_entropy(const std::vector<int64_t>& bins, double range);

}  // namespace parity::quantize
