#include "parity/core/interrupt.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace parity {
namespace {

std::atomic<bool> requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");
std::atomic<bool> watches_enabled{false};

}  // namespace

// The watches alive, and the one thread that looks at the request for them. It is started by the
// first watch and never ended (nor freed: it may run while static objects are destroyed at exit).
struct InterruptWatcher {
  std::mutex mutex;
  std::condition_variable some_watch;
  std::vector<InterruptWatch*> watches;

  static InterruptWatcher& instance() {
    static InterruptWatcher* watcher = [] {
      auto* w = new InterruptWatcher;
      std::thread([w] { w->loop(); }).detach();
      return w;
    }();
    return *watcher;
  }

  void loop() {
    std::unique_lock lock(mutex);
    for (;;) {
      some_watch.wait(lock, [&] { return !watches.empty(); });
      some_watch.wait_for(lock, std::chrono::milliseconds(20));
      if (!interrupt_requested()) continue;
      for (InterruptWatch* watch : watches) {
        if (watch->fired_) continue;
        watch->fired_ = true;
        try {
          watch->stop_();
        } catch (...) {
          // A stop that fails leaves the computation to end on its own; the watcher goes on.
        }
      }
    }
  }
};

void request_interrupt() noexcept { requested.store(true, std::memory_order_relaxed); }
void clear_interrupt() noexcept { requested.store(false, std::memory_order_relaxed); }
bool interrupt_requested() noexcept { return requested.load(std::memory_order_relaxed); }

void enable_interrupt_watches() { watches_enabled.store(true); }
bool interrupt_watches_enabled() noexcept { return watches_enabled.load(std::memory_order_relaxed); }

InterruptWatch::InterruptWatch(std::function<void()> stop) : stop_(std::move(stop)) {
  if (!interrupt_watches_enabled()) return;
  InterruptWatcher& watcher = InterruptWatcher::instance();
  {
    std::lock_guard lock(watcher.mutex);
    watcher.watches.push_back(this);
    listed_ = true;
  }
  watcher.some_watch.notify_one();
}

InterruptWatch::~InterruptWatch() {
  if (!listed_) return;
  InterruptWatcher& watcher = InterruptWatcher::instance();
  std::lock_guard lock(watcher.mutex);
  watcher.watches.erase(std::find(watcher.watches.begin(), watcher.watches.end(), this));
}

}  // namespace parity
