// TensorRT's calibration cache, as text: a header line `TRT-<version>-<algorithm>` (e.g.
// TRT-8601-EntropyCalibration2), then one line per tensor, `<name>: <scale>`, the scale (amax /
// 127) as the 8 hex digits of its float32 bits, most significant first (3c010a14). Parity writes
// the version 8601 and reads any; the algorithm must be the one asked for.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "parity/quantize/calibration_algorithm.h"

namespace parity::quantize {

struct CalibrationCache {
  CalibrationAlgo algo = CalibrationAlgo::kEntropy;
  std::map<std::string, float> scales;  // tensor name -> scale
};

// Throws InvalidInputError naming the file and line for a header of another algorithm than
// `expected` or of no known one, and for a line that is not `<name>: <8 hex digits>`.
CalibrationCache read_calibration_cache(const std::filesystem::path& path, CalibrationAlgo expected);
// Writes atomically.
void write_calibration_cache(const std::filesystem::path& path, const CalibrationCache& cache);

// "3c010a14" for a float32 scale.
std::string scale_to_hex(float scale);

}  // namespace parity::quantize
