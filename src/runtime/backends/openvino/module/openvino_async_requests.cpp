// OpenvinoCompiledModel::run_async: performance mode's concurrency on OpenVINO, as benchmark_app
// runs it. N infer requests of their own (N: the request's number, else the compiled model's
// ov::optimal_number_of_infer_requests), each with its input tensors set once (wrapping the
// caller's bytes) and one untimed inference of its own (its allocations), then started with
// start_async; each completion callback records the request's latency and hands the request back to
// the calling thread, which starts it again until `count` requests have started (or `seconds` have
// passed), as benchmark_app's loop over its AsyncInferQueue does.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>

#include "openvino_compiled_model.h"

namespace parity::runtime::openvino {

AsyncRunResult OpenvinoCompiledModel::run_async(const std::vector<std::vector<InputBuffer>>& inputs,
                                                const AsyncRunRequest& request) {
  using Clock = std::chrono::steady_clock;
  if (inputs.empty()) throw BackendFailure(BackendFailure::Kind::kInvalidInput, "run_async needs at least one feed");
  AsyncRunResult result;
  result.optimal = request.requests <= 0;
  int requests = result.optimal ? static_cast<int>(compiled_.get_property(ov::optimal_number_of_infer_requests))
                                : request.requests;
  if (request.seconds <= 0) requests = std::min(requests, request.count);
  requests = std::max(requests, 1);
  result.requests = requests;

  std::vector<ov::InferRequest> infer_requests;
  for (int i = 0; i < requests; ++i) {
    infer_requests.push_back(compiled_.create_infer_request());
    set_inputs(infer_requests.back(), inputs[static_cast<std::size_t>(i) % inputs.size()]);
    infer_requests.back().infer();  // untimed: a request's first inference allocates its memory
  }
  // A completion callback only records the request's latency and hands the request back; this thread
  // starts it again. (Started from its own callback, on the stream thread that completed it, a
  // request is queued on that same stream: the requests gathered on one stream and the others sat
  // idle.)
  std::mutex mutex;
  std::condition_variable completed;
  std::deque<std::size_t> idle;
  int started = 0, in_flight = 0;
  std::exception_ptr error;
  std::vector<Clock::time_point> started_at(infer_requests.size());
  for (std::size_t i = 0; i < infer_requests.size(); ++i) {
    infer_requests[i].set_callback([&, i](std::exception_ptr failure) {
      const auto now = Clock::now();
      std::lock_guard lock(mutex);
      if (failure) {
        if (!error) error = failure;
      } else {
        result.latencies.push_back(std::chrono::duration<double>(now - started_at[i]).count());
      }
      idle.push_back(i);
      completed.notify_one();
    });
  }
  const auto start = Clock::now();
  const auto deadline = request.seconds > 0 ? start + std::chrono::duration_cast<Clock::duration>(
                                                          std::chrono::duration<double>(request.seconds))
                                            : Clock::time_point::max();
  std::unique_lock lock(mutex);
  // Starts request i (the lock held on entry and on return); a failure to start is kept as `error`.
  const auto start_request = [&](std::size_t i) {
    ++started;
    ++in_flight;
    started_at[i] = Clock::now();
    lock.unlock();
    try {
      infer_requests[i].start_async();
      lock.lock();
    } catch (...) {
      lock.lock();
      if (!error) error = std::current_exception();
      --in_flight;
    }
  };
  for (std::size_t i = 0; i < infer_requests.size() && !error; ++i) start_request(i);
  while (in_flight > 0) {
    completed.wait(lock, [&] { return !idle.empty(); });
    while (!idle.empty()) {
      const std::size_t i = idle.front();
      idle.pop_front();
      --in_flight;
      const bool again = !error && (request.seconds > 0 ? Clock::now() < deadline : started < request.count);
      if (again) start_request(i);
    }
  }
  lock.unlock();
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& infer_request : infer_requests) {
    try {
      infer_request.wait();
    } catch (const std::exception&) {
      // Its failure reached the callback, which kept it as `error`.
    }
    infer_request.set_callback([](std::exception_ptr) {});
  }
  if (error) std::rethrow_exception(error);
  return result;
}

}  // namespace parity::runtime::openvino
