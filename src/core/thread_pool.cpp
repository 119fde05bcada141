#include "parity/core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include "parity/core/error.h"

namespace parity {
namespace {

// True on a thread while it runs a pool task: a nested parallel_for then runs inline.
thread_local bool running_pool_task = false;

// Waits for `ready` by spinning for at most a few tens of microseconds; false if it did not come.
// Jobs come back to back (a comparison makes several passes, microseconds apart): a thread that
// spins a moment sees the next one at once, where sleeping costs a futex wake-up and a context
// switch each way.
template <typename Ready>
bool spin_until(const Ready& ready) {
  constexpr auto kSpin = std::chrono::microseconds(50);
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 1;; ++i) {
    if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) return false;
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::start_workers() {
  if (!workers_.empty()) return;
  workers_.reserve(static_cast<std::size_t>(threads_ - 1));
  for (int i = 0; i + 1 < threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    auto woken = [&] { return stopping_.load() || generation_.load() != seen; };
    spin_until(woken);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, woken);
      if (stopping_) return;
      seen = generation_;
    }
    run_tasks();
  }
}

void ThreadPool::run_tasks() {
  running_pool_task = true;
  for (;;) {
    const std::function<void(int)>* task = nullptr;
    int index = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (task_ == nullptr || next_task_ >= task_count_) break;
      task = task_;
      index = next_task_++;
    }
    try {
      (*task)(index);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!failure_) failure_ = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (++finished_tasks_ == task_count_) done_.notify_all();
  }
  running_pool_task = false;
}

void ThreadPool::parallel_for(int task_count, const std::function<void(int)>& task) {
  if (task_count <= 0) return;
  std::unique_lock<std::mutex> submit(submit_mutex_, std::defer_lock);
  if (task_count == 1 || threads_ == 1 || running_pool_task || !submit.try_lock()) {
    // Inline, in order; the first failure is rethrown after every task ran, as on the pool.
    std::exception_ptr failure;
    for (int i = 0; i < task_count; ++i) {
      try {
        task(i);
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    }
    if (failure) std::rethrow_exception(failure);
    return;
  }
  start_workers();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    task_count_ = task_count;
    next_task_ = 0;
    finished_tasks_ = 0;
    failure_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  run_tasks();
  std::exception_ptr failure;
  auto finished = [&] { return finished_tasks_.load() == task_count; };
  spin_until(finished);
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, finished);
    task_ = nullptr;
    failure = std::exchange(failure_, nullptr);
  }
  if (failure) std::rethrow_exception(failure);
}

// ------------------------------------------------------------------------------------------------
// The process's compute setting
// ------------------------------------------------------------------------------------------------
namespace {

struct ComputeSettings {
  std::mutex mutex;
  int threads = 0;  // 0: the hardware concurrency
  std::unique_ptr<ThreadPool> pool;
  std::vector<std::function<void(int)>> listeners;
};

ComputeSettings& settings() {
  static ComputeSettings instance;
  return instance;
}

int resolved_threads(const ComputeSettings& s) {
  // Asked once: glibc reads /sys/devices/system/cpu/online on every call, and the statistics ask
  // on every comparison.
  static const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return s.threads > 0 ? s.threads : hardware;
}

}  // namespace

int compute_threads() {
  ComputeSettings& s = settings();
  std::lock_guard<std::mutex> lock(s.mutex);
  return resolved_threads(s);
}

int backend_thread_limit() { return 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

void check_backend_threads(std::string_view option, int64_t threads) {
  if (threads < 0 || threads > backend_thread_limit())
    raise<InvalidInputError>("{} must be between 0 (the backend's default) and {} (4 times this machine's {} "
                             "hardware threads), got {}",
                             option, backend_thread_limit(), backend_thread_limit() / 4, threads);
}

void set_compute_threads(int threads) {
  ComputeSettings& s = settings();
  std::vector<std::function<void(int)>> listeners;
  int resolved = 0;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.threads = std::max(0, threads);
    resolved = resolved_threads(s);
    if (s.pool && s.pool->threads() != resolved) s.pool.reset();
    listeners = s.listeners;
  }
  for (const auto& listener : listeners) listener(resolved);
}

ThreadPool& compute_thread_pool() {
  ComputeSettings& s = settings();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.pool) s.pool = std::make_unique<ThreadPool>(resolved_threads(s));
  return *s.pool;
}

void on_compute_threads_change(std::function<void(int)> fn) {
  ComputeSettings& s = settings();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.threads > 0) fn(s.threads);
  s.listeners.push_back(std::move(fn));
}

}  // namespace parity
