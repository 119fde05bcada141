// Performance mode's concurrency (`parity run --perf --requests N`, compare/perf.h): several
// inference requests of one runner in flight at once, each restarted as soon as it completes,
// until a number of requests has completed or a time has passed. Backends that can run requests
// concurrently implement Runner::infer_concurrently with it: ONNX Runtime as concurrent Run calls
// on its one session from N threads (run_on_threads), OpenVINO as N asynchronous infer requests.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace parity::runtime {

struct ConcurrencyRequest {
  // Requests in flight at once; 0: the backend's own choice (OpenVINO's optimal number of infer
  // requests for the compiled model; one elsewhere).
  int requests = 0;
  // Requests to complete, counted over all of them; when `seconds` is set, requests are started
  // until that many seconds have passed instead (each request in flight then completes and counts).
  int count = 1;
  std::optional<double> seconds;
};

struct ConcurrentInference {
  int requests = 0;               // requests that were in flight at once
  std::vector<double> latencies;  // seconds from each request's start to its completion, one per completed request
  double wall_seconds = 0;        // from the first start to the last completion
  std::string how;                // what ran concurrently, in words, for the log and the report
  std::string unavailable;        // why the backend cannot run requests concurrently; empty when it did
};

// Runs `infer(request)` on `requests` threads at once (request = 0 .. requests-1, the thread's
// index), each thread starting its next inference as soon as one completes, until `count`
// inferences have started, or, with `seconds`, until that many seconds have passed (at least one
// inference per thread). The first exception thrown by an inference is rethrown here after every
// thread has stopped.
ConcurrentInference run_on_threads(int requests, const ConcurrencyRequest& request,
                                   const std::function<void(std::size_t request)>& infer);

}  // namespace parity::runtime
