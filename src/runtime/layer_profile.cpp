#include "parity/runtime/layer_profile.h"

#include <algorithm>
#include <numeric>

namespace parity::runtime {

double median_of(std::vector<double> samples) {
  if (samples.empty()) return 0;
  const std::size_t middle = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(middle), samples.end());
  if (samples.size() % 2) return samples[middle];
  const double upper = samples[middle];
  return (*std::max_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(middle)) + upper) / 2;
}

double mean_of(const std::vector<double>& samples) {
  if (samples.empty()) return 0;
  return std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
}

}  // namespace parity::runtime
