// Stopping a computation from a signal handler: the handler requests it, the computation checks
// between steps (the reference interpreter: before each node, so also between a Loop's
// iterations) and throws InterruptedError. The Python module requests it on Ctrl-C while
// Runner.infer runs (python/src/bind_runtime.cpp), so KeyboardInterrupt stops a long inference.
#pragma once

#include "parity/core/error.h"

namespace parity {

// A computation stopped on request (Ctrl-C).
class InterruptedError : public Error {
  using Error::Error;
};

void request_interrupt() noexcept;  // async-signal-safe: one store to a lock-free atomic
void clear_interrupt() noexcept;
bool interrupt_requested() noexcept;

}  // namespace parity
