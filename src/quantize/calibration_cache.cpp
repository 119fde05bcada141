#include "parity/quantize/calibration_cache.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <cstdint>
#include <sstream>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/file_io.h"

namespace parity::quantize {
namespace {

constexpr std::string_view kWrittenVersion = "8601";

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  return text;
}

bool is_hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

std::optional<CalibrationAlgo> algo_of_cache_name(std::string_view name) {
  for (auto algo : {CalibrationAlgo::kEntropy, CalibrationAlgo::kMinMax, CalibrationAlgo::kPercentile})
    if (name == calibration_algo_cache_name(algo)) return algo;
  return std::nullopt;
}

}  // namespace

std::string scale_to_hex(float scale) { return fmt::format("{:08x}", std::bit_cast<uint32_t>(scale)); }

CalibrationCache read_calibration_cache(const std::filesystem::path& path, CalibrationAlgo expected) {
  const std::string text = read_file(path);
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  CalibrationCache cache;
  cache.algo = expected;
  bool header = false;
  while (std::getline(lines, line)) {
    ++number;
    const std::string_view content = trim(line);
    if (content.empty()) continue;
    if (!header) {
      // TRT-<version>-<algorithm>
      const auto dash = content.find('-', 4);
      if (!content.starts_with("TRT-") || dash == std::string_view::npos)
        raise<InvalidInputError>("calibration cache {}:{}: expected a header 'TRT-<version>-<algorithm>', got '{}'",
                                 path.string(), number, content);
      const std::string_view name = content.substr(dash + 1);
      const auto algo = algo_of_cache_name(name);
      if (!algo)
        raise<InvalidInputError>("calibration cache {}:{}: algorithm '{}' is none Parity calibrates with "
                                 "(EntropyCalibration2, MinMaxCalibration, PercentileCalibration)",
                                 path.string(), number, name);
      if (*algo != expected)
        raise<InvalidInputError>("calibration cache {}:{}: written by {} (--calibration-algo {}), but "
                                 "--calibration-algo {} asks for {}; delete the cache to recalibrate, or pass "
                                 "--calibration-algo {}",
                                 path.string(), number, name, calibration_algo_flag_name(*algo),
                                 calibration_algo_flag_name(expected), calibration_algo_cache_name(expected),
                                 calibration_algo_flag_name(*algo));
      header = true;
      continue;
    }
    const auto colon = content.rfind(':');
    const std::string_view name = colon == std::string_view::npos ? std::string_view{} : trim(content.substr(0, colon));
    const std::string_view hex = colon == std::string_view::npos ? std::string_view{} : trim(content.substr(colon + 1));
    if (name.empty() || hex.size() != 8 || !std::all_of(hex.begin(), hex.end(), is_hex_digit))
      raise<InvalidInputError>("calibration cache {}:{}: expected '<tensor>: <8 hex digits of the float32 scale>', "
                               "got '{}'",
                               path.string(), number, content);
    const auto bits = static_cast<uint32_t>(std::stoul(std::string(hex), nullptr, 16));
    const float scale = std::bit_cast<float>(bits);
    if (!std::isfinite(scale) || scale <= 0)
      raise<InvalidInputError>("calibration cache {}:{}: the scale of '{}' is {} (must be finite and positive)",
                               path.string(), number, name, scale);
    cache.scales[std::string(name)] = scale;
  }
  if (!header) raise<InvalidInputError>("calibration cache {} is empty (no 'TRT-<version>-<algorithm>' header)", path.string());
  return cache;
}

void write_calibration_cache(const std::filesystem::path& path, const CalibrationCache& cache) {
  std::string text = fmt::format("TRT-{}-{}\n", kWrittenVersion, calibration_algo_cache_name(cache.algo));
  for (const auto& [name, scale] : cache.scales) text += fmt::format("{}: {}\n", name, scale_to_hex(scale));
  write_file_atomic(path, text);
}

}  // namespace parity::quantize
