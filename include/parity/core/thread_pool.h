// One persistent pool of compute threads for the whole process, and the single setting that sizes
// it (and the BLAS library's threads): parity::set_compute_threads.
//
// Work is split by the caller into `task_count` independent tasks; parallel_for runs them on the
// pool's threads and on the calling thread, and returns when all are done. Threads are started
// once (lazily, on the first parallel call) and kept, so a call costs a wake-up, not a thread
// start. A call made from inside a task, or while another thread's call holds the pool, runs its
// tasks on the calling thread alone (no deadlock, no oversubscription).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

namespace parity {

class ThreadPool {
 public:
  // A pool that runs tasks on `threads` threads in all (the caller counts as one; at least 1).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }

  // Calls task(i) for every i in [0, task_count), concurrently; returns when every call has
  // returned. The first exception thrown by a task is rethrown here (after all tasks finished).
  void parallel_for(int task_count, const std::function<void(int)>& task);

 private:
  void start_workers();
  void worker_loop();
  // Takes tasks of the current job until none is left; records the first exception.
  void run_tasks();

  const int threads_;
  std::mutex submit_mutex_;  // one job at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  // The current job (guarded by mutex_; tasks are claimed under it too: tasks are coarse).
  const std::function<void(int)>* task_ = nullptr;
  int task_count_ = 0, next_task_ = 0;
  // Written under mutex_, read without it too: threads spin on them briefly before sleeping.
  std::atomic<int> finished_tasks_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  std::exception_ptr failure_;
};

// The number of threads compute work uses (the pool's size and the BLAS threads); defaults to the
// hardware concurrency.
int compute_threads();
// Sets it: the pool is rebuilt with `threads` threads (values below 1 mean the default) and every
// registered listener is told (the reference kernels set the BLAS threads that way). Call it
// between computations, not during one.
void set_compute_threads(int threads);
// The process's compute pool, sized by compute_threads().
ThreadPool& compute_thread_pool();
// The most threads a backend's thread-count option (ONNX Runtime's intra-/inter-op threads,
// OpenVINO's inference threads) may ask for: 4 times the hardware threads. More only slows a
// backend down (ONNX Runtime's workers spin), and in the thousands the backend's thread creation
// fails inside it, ending the process.
int backend_thread_limit();
// Refuses (InvalidInputError naming `option` and the allowed range) a thread count outside
// [0, backend_thread_limit()]; 0 means the backend's default.
void check_backend_threads(std::string_view option, int64_t threads);

// Registers fn(threads), called on every set_compute_threads (and at once when a setting was
// already made): how a layer that owns another thread pool (the BLAS library of the reference
// kernels) follows the setting. Until a setting is made, such pools keep their own defaults.
void on_compute_threads_change(std::function<void(int)> fn);

}  // namespace parity
