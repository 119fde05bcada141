// Stopping a computation from a signal handler: the handler requests it, the computation checks
// between steps (the reference interpreter: before each node, so also between a Loop's
// iterations) and throws InterruptedError. The Python module requests it on Ctrl-C while
// Runner.infer runs (python/src/bind_runtime.cpp), so KeyboardInterrupt stops a long inference.
//
// A computation that cannot check (a backend's inference inside its library) is stopped through
// the backend's own cancel call: an InterruptWatch, alive while it runs, makes that call from a
// watcher thread when an interrupt is requested. Watches act only once enable_interrupt_watches()
// was called (the Python module does; the CLI, whose Ctrl-C ends the process, does not), so they
// cost nothing otherwise.
#pragma once

#include <functional>

#include "parity/core/error.h"

namespace parity {

// A computation stopped on request (Ctrl-C).
class InterruptedError : public Error {
  using Error::Error;
};

void request_interrupt() noexcept;  // async-signal-safe: one store to a lock-free atomic
void clear_interrupt() noexcept;
bool interrupt_requested() noexcept;

void enable_interrupt_watches();
bool interrupt_watches_enabled() noexcept;

// While alive (and watches are enabled), calls `stop` once, from a watcher thread that looks every
// 20 ms, when an interrupt is requested. `stop` runs under the watch list's lock: it must be quick
// and must not create or end watches. The destructor waits for a `stop` call in progress.
class InterruptWatch {
 public:
  explicit InterruptWatch(std::function<void()> stop);
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

 private:
  std::function<void()> stop_;
  bool fired_ = false;
  bool listed_ = false;
  friend struct InterruptWatcher;
};

}  // namespace parity
