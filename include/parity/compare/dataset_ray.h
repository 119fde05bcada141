// Samples of a dataset run on a Ray cluster (`parity run --dataset ... --ray [ADDRESS]`): a Python
// driver (Ray's API is Python's) connects to the cluster, or starts a local one with ray.init(),
// and starts actors; each actor starts one parity worker (dataset_worker_pool.h's protocol), so its
// runners are activated once, and runs batches of sample indices through it. The driver relays
// each sample's record to this process as one JSON line, and this process merges them as the
// local pool's do. Actors directly, not Ray Data's map_batches: the records are already a stream
// this process merges, and Ray Data would add pyarrow and pandas (ray[data]) for no gain; an
// actor that ends is restarted by Ray (max_restarts) and its batch run again (max_task_retries),
// and a batch's records come back only when the whole batch is done, so each sample is counted
// once.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parity/compare/dataset_validation.h"

namespace parity::compare {

struct RayOptions {
  std::string address;  // empty: ray.init() starts a local cluster; else HOST:PORT or "auto"
  std::string python;   // the interpreter that has `ray`
  // The parity worker each actor starts (the program and its arguments; PARITY_DATASET_WORKER is
  // set for it), and the folder it starts in (relative paths in the arguments).
  std::string program;
  std::vector<std::string> arguments;
  std::string folder;
  std::size_t actors = 0;       // 0: one per CPU of the cluster
  std::size_t batch_size = 8;   // samples per task
  // How long an actor's worker may take over one sample; past it the worker is killed (with the
  // programs it started) and restarted, and the sample recorded as failed. nullopt: no limit.
  std::optional<std::chrono::milliseconds> sample_timeout;
};

// Runs samples [0, samples) on Ray; `on_record` as for run_worker_pool. Throws InvalidInputError
// before any actor is started for an address that is not HOST:PORT or cannot be reached, or when
// Python has no `ray`; Error when the driver fails.
void run_on_ray(const RayOptions& options, std::size_t samples,
                const std::function<bool(const SampleRecord&)>& on_record);

}  // namespace parity::compare
