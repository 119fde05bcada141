// Samples of a dataset run in worker processes on this machine (`parity run --workers N`), and the
// worker's side of it. A worker is a program (parity itself, in worker mode) that activates its
// runners once, writes a "ready" line, then reads sample indices from its standard input, one a
// line, and writes each sample's record (SampleRecord::to_json) as one line on its standard output.
// The driver keeps one sample in flight per worker, so a worker that ends (killed, crashed) is
// restarted and the sample it held is sent again; a record is counted only once it has arrived
// whole, so every sample is counted exactly once. With a sample timeout, a worker that gives no
// record in time (hung, not dead) is killed with the programs it started (its process group) and
// restarted, and the sample is recorded as failed.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>

#include "parity/compare/dataset_validation.h"
#include "parity/core/process.h"
#include "parity/runtime/dataset_source.h"

namespace parity::compare {

struct WorkerPoolOptions {
  ProcessSpec worker;  // its standard streams are the pool's: input and output pipes, standard error a file
  std::size_t workers = 1;
  // How long a worker may take over one sample (from the index sent to the record read); nullopt:
  // no limit.
  std::optional<std::chrono::milliseconds> sample_timeout;
};

// Runs samples [0, samples) over the workers; `on_record` gets each record, one call at a time,
// in the order they arrive, and returns false to stop the run (the workers still running are
// ended). A sample on which a worker ends twice gets a record with `error` saying so, as does a
// sample past the sample timeout (not run again: a sample that hangs once would hang again). Each
// worker's standard error goes to a file of its own, read back when the worker ends: the last
// "[E]" line it logged is in the warning (a worker that ended mid-run) or the Error thrown (a
// worker that ended before it was ready: its runners could not be made or activated). Also
// throws what `on_record` threw.
void run_worker_pool(const WorkerPoolOptions& options, std::size_t samples,
                     const std::function<bool(const SampleRecord&)>& on_record);

// The worker's side: "ready" on `records`, then one record per index read from `requests`, until
// the requests end. A sample that cannot be loaded is a record with `error` set.
void serve_samples(runtime::DatasetSource& dataset, SampleValidator& validator, int requests, int records);

}  // namespace parity::compare
