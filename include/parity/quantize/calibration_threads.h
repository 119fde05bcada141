// How calibration uses the cores: several runners (sessions) of the model, each running the
// inferences of its share of the stacks on a few intra-op threads, instead of one runner spreading
// each inference over every core. Small stacks of convolutions and matrix products scale badly over
// intra-op threads (they wait for each other at the end of every parallel section), while separate
// inferences do not wait at all; the statistics are folded in batch order whatever the split
// (calibrator.h), so the scales do not depend on it.
#pragma once

#include <cstddef>

namespace parity::quantize {

struct CalibrationThreads {
  int workers = 1;           // runners, one thread each running its inferences
  int intra_op_threads = 0;  // threads of each inference; 0: the backend's default (one worker)
};

// One worker per core, each inference on one thread, as far as memory allows: each worker's session
// holds its own copy of the model (`model_bytes`), and the copies may take up to a quarter of
// `available_bytes` (0: unknown, no bound). Fewer workers than cores share the cores out evenly
// (cores / workers intra-op threads each); one worker keeps the backend's default threads.
CalibrationThreads calibration_threads(int cores, std::size_t model_bytes, std::size_t available_bytes);

// The same for this machine: std::thread::hardware_concurrency() cores and MemAvailable of
// /proc/meminfo (no bound where it cannot be read).
CalibrationThreads calibration_threads_here(std::size_t model_bytes);

}  // namespace parity::quantize
