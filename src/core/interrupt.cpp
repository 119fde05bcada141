#include "parity/core/interrupt.h"

#include <atomic>

namespace parity {
namespace {

std::atomic<bool> requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

}  // namespace

void request_interrupt() noexcept { requested.store(true, std::memory_order_relaxed); }
void clear_interrupt() noexcept { requested.store(false, std::memory_order_relaxed); }
bool interrupt_requested() noexcept { return requested.load(std::memory_order_relaxed); }

}  // namespace parity
