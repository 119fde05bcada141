// run_on_threads (runtime/concurrent_inference.h): the number of inferences, the threads they run
// on, every thread in flight at once, and a failing inference's error.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "parity/runtime/concurrent_inference.h"

namespace parity::runtime {
namespace {

TEST(RunOnThreads, RunsCountInferencesOverAllThreads) {
  std::atomic<int> calls = 0;
  std::mutex mutex;
  std::set<std::size_t> indices;
  ConcurrencyRequest request;
  request.count = 25;
  ConcurrentInference result = run_on_threads(4, request, [&](std::size_t index) {
    ++calls;
    std::lock_guard lock(mutex);
    indices.insert(index);
  });
  EXPECT_EQ(calls, 25);
  EXPECT_EQ(result.requests, 4);
  EXPECT_EQ(result.latencies.size(), 25u);
  for (std::size_t index : indices) EXPECT_LT(index, 4u);
}

TEST(RunOnThreads, EveryThreadIsInFlightAtOnce) {
  // Each inference of the first round waits until all three threads are inside one: run one after
  // another, this would never finish (the wait is bounded so a failure ends the test).
  std::mutex mutex;
  std::condition_variable arrived;
  int inside = 0, most = 0;
  ConcurrencyRequest request;
  request.count = 3;
  run_on_threads(3, request, [&](std::size_t) {
    std::unique_lock lock(mutex);
    most = std::max(most, ++inside);
    arrived.notify_all();
    arrived.wait_for(lock, std::chrono::seconds(10), [&] { return most == 3; });
    --inside;
  });
  EXPECT_EQ(most, 3);
}

TEST(RunOnThreads, SecondsRunsEveryThreadAtLeastOnce) {
  std::atomic<int> calls = 0;
  ConcurrencyRequest request;
  request.seconds = 0.01;
  ConcurrentInference result = run_on_threads(3, request, [&](std::size_t) { ++calls; });
  EXPECT_GE(calls, 3);
  EXPECT_EQ(result.latencies.size(), static_cast<std::size_t>(calls.load()));
}

TEST(RunOnThreads, RethrowsTheFirstError) {
  ConcurrencyRequest request;
  request.count = 10;
  EXPECT_THROW(run_on_threads(2, request, [&](std::size_t) { throw std::runtime_error("inference failed"); }),
               std::runtime_error);
}

}  // namespace
}  // namespace parity::runtime
