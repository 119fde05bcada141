#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "parity/core/thread_pool.h"

namespace parity {
namespace {

TEST(ThreadPool, RunsEveryTaskOnce) {
  ThreadPool pool(4);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::atomic<int>> calls(37);
    pool.parallel_for(37, [&](int i) { calls[static_cast<std::size_t>(i)]++; });
    for (const auto& c : calls) EXPECT_EQ(c.load(), 1);
  }
}

TEST(ThreadPool, UsesSeveralThreads) {
  ThreadPool pool(3);
  std::mutex mutex;
  std::set<std::thread::id> seen;
  std::atomic<int> arrived{0};
  // Each task waits until three tasks have started, so three threads must run them.
  pool.parallel_for(3, [&](int) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      seen.insert(std::this_thread::get_id());
    }
    arrived++;
    while (arrived.load() < 3) std::this_thread::yield();
  });
  EXPECT_EQ(seen.size(), 3u);
}

TEST(ThreadPool, RethrowsTheFirstFailureAfterEveryTaskRan) {
  ThreadPool pool(4);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.parallel_for(8,
                                 [&](int i) {
                                   ran++;
                                   if (i == 5) throw std::runtime_error("task 5");
                                 }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 8);
  // The pool still works afterwards.
  std::atomic<int> after{0};
  pool.parallel_for(4, [&](int) { after++; });
  EXPECT_EQ(after.load(), 4);
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.parallel_for(2, [&](int) { pool.parallel_for(3, [&](int) { inner++; }); });
  EXPECT_EQ(inner.load(), 6);
}

TEST(ThreadPool, ComputeThreadsSettingResizesThePoolAndTellsListeners) {
  // The listener outlives the test (listeners stay registered): it owns what it records.
  auto told_shared = std::make_shared<std::vector<int>>();
  on_compute_threads_change([told_shared](int threads) { told_shared->push_back(threads); });
  const std::vector<int>& told = *told_shared;
  set_compute_threads(3);
  EXPECT_EQ(compute_threads(), 3);
  EXPECT_EQ(compute_thread_pool().threads(), 3);
  set_compute_threads(0);  // back to the default
  EXPECT_EQ(compute_threads(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  EXPECT_EQ(compute_thread_pool().threads(), compute_threads());
  ASSERT_GE(told.size(), 2u);
  EXPECT_EQ(told[told.size() - 2], 3);
  EXPECT_EQ(told.back(), compute_threads());
}

}  // namespace
}  // namespace parity
