// run_on_threads: N threads inferring at once, for backends whose run may be called from several
// threads (runtime/concurrent_inference.h).
#include "parity/runtime/concurrent_inference.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <latch>
#include <mutex>
#include <thread>

namespace parity::runtime {

ConcurrentInference run_on_threads(int requests, const ConcurrencyRequest& request,
                                   const std::function<void(std::size_t request)>& infer) {
  using Clock = std::chrono::steady_clock;
  ConcurrentInference result;
  result.requests = requests;
  std::atomic<int> started = 0;
  std::atomic<bool> failed = false;
  std::exception_ptr error;
  std::mutex mutex;
  std::vector<std::vector<double>> latencies(static_cast<std::size_t>(requests));
  // Every thread is started before the clock is: starting threads is not part of the wall time.
  std::latch ready(requests + 1);
  Clock::time_point start, deadline;
  auto worker = [&](std::size_t index) {
    ready.arrive_and_wait();
    auto& mine = latencies[index];
    for (;;) {
      if (failed) return;
      if (request.seconds) {
        if (!mine.empty() && Clock::now() >= deadline) return;
      } else if (started.fetch_add(1) >= request.count) {
        return;
      }
      const auto before = Clock::now();
      try {
        infer(index);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!error) error = std::current_exception();
        failed = true;
        return;
      }
      mine.push_back(std::chrono::duration<double>(Clock::now() - before).count());
    }
  };
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < requests; ++i) threads.emplace_back(worker, static_cast<std::size_t>(i));
    start = Clock::now();
    deadline = request.seconds ? start + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(*request.seconds))
                               : Clock::time_point::max();
    ready.arrive_and_wait();
  }
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (error) std::rethrow_exception(error);
  for (auto& mine : latencies) result.latencies.insert(result.latencies.end(), mine.begin(), mine.end());
  return result;
}

}  // namespace parity::runtime
