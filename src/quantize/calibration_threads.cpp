#include "parity/quantize/calibration_threads.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace parity::quantize {

CalibrationThreads calibration_threads(int cores, std::size_t model_bytes, std::size_t available_bytes) {
  cores = std::max(cores, 1);
  int workers = cores;
  if (available_bytes > 0 && model_bytes > 0) {
    const std::size_t copies = available_bytes / 4 / model_bytes;
    workers = static_cast<int>(std::clamp<std::size_t>(copies, 1, static_cast<std::size_t>(cores)));
  }
  if (workers == 1) return {1, 0};
  return {workers, cores / workers};
}

namespace {

// MemAvailable of /proc/meminfo in bytes; 0 where it cannot be read.
std::size_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    std::size_t kilobytes = 0;
    if (fields >> key >> kilobytes && key == "MemAvailable:") return kilobytes * 1024;
  }
  return 0;
}

}  // namespace

CalibrationThreads calibration_threads_here(std::size_t model_bytes) {
  return calibration_threads(static_cast<int>(std::thread::hardware_concurrency()), model_bytes,
                             available_memory_bytes());
}

}  // namespace parity::quantize
