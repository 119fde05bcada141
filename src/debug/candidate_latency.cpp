#include "parity/debug/candidate_latency.h"

#include <algorithm>
#include <vector>

#include "parity/core/error.h"
#include "parity/debug/quiet_below_verbose.h"

namespace parity::debug {

double median_latency(runtime::Runner& runner, const NamedTensors& feed, int runs) {
  if (runs < 1) raise<InvalidInputError>("median_latency: runs must be at least 1, got {}", runs);
  QuietBelowVerbose quiet;
  runtime::ActiveRunner active(runner);
  active->infer(feed);
  std::vector<double> seconds;
  for (int run = 0; run < runs; ++run) {
    active->infer(feed);
    seconds.push_back(active->last_inference_time());
  }
  std::nth_element(seconds.begin(), seconds.begin() + runs / 2, seconds.end());
  return seconds[runs / 2];
}

}  // namespace parity::debug
