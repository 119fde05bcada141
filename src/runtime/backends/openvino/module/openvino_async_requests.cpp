// OpenvinoCompiledModel::run_async: performance mode's concurrency on OpenVINO, as benchmark_app
// runs it. N infer requests of their own (N: the request's number, else the compiled model's
// ov::optimal_number_of_infer_requests), each with its input tensors set once (wrapping the
// caller's bytes) and one untimed inference of its own (its allocations), then started with
// start_async; each completion callback records the request's latency and starts it again until
// `count` requests have started (or `seconds` have passed).
#include <algorithm>
#include <chrono>
#include <condition_variable>
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
  std::mutex mutex;
  std::condition_variable all_done;
  int started = 0, in_flight = 0;
  std::exception_ptr error;
  std::vector<Clock::time_point> started_at(infer_requests.size());
  const auto start = Clock::now();
  const auto deadline = request.seconds > 0 ? start + std::chrono::duration_cast<Clock::duration>(
                                                          std::chrono::duration<double>(request.seconds))
                                            : Clock::time_point::max();
  for (std::size_t i = 0; i < infer_requests.size(); ++i) {
    infer_requests[i].set_callback([&, i](std::exception_ptr failure) {
      const auto now = Clock::now();
      std::unique_lock lock(mutex);
      if (failure) {
        if (!error) error = failure;
      } else {
        result.latencies.push_back(std::chrono::duration<double>(now - started_at[i]).count());
      }
      const bool again = !error && (request.seconds > 0 ? now < deadline : started < request.count);
      if (!again) {
        --in_flight;
        all_done.notify_all();
        return;
      }
      ++started;
      started_at[i] = Clock::now();
      lock.unlock();
      try {
        infer_requests[i].start_async();
      } catch (...) {
        lock.lock();
        if (!error) error = std::current_exception();
        --in_flight;
        all_done.notify_all();
      }
    });
  }
  {
    std::lock_guard lock(mutex);
    started = in_flight = requests;
  }
  // Request i's callback runs only after its start_async, so started_at[i] is written first.
  for (std::size_t i = 0; i < infer_requests.size(); ++i) {
    started_at[i] = Clock::now();
    try {
      infer_requests[i].start_async();
    } catch (...) {
      // This request and those after it never start; those started stop at their completion.
      std::lock_guard lock(mutex);
      if (!error) error = std::current_exception();
      in_flight -= static_cast<int>(infer_requests.size() - i);
      break;
    }
  }
  {
    std::unique_lock lock(mutex);
    all_done.wait(lock, [&] { return in_flight == 0; });
  }
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
