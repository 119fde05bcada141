// Runs a function in a forked child process and waits for it: what it does to process-wide state
// (e.g. OpenVINO's counters that name the nodes of every model built) does not reach the caller
// or the next call.
#pragma once

#include <functional>

namespace parity::debug {

// Forks, runs `work` in the child and waits (parity::run_in_child_process). A parity::Error or std::exception thrown in
// the child is thrown again here as an Error of the same message (InvalidInputError for a parity::Error subclass,
// InternalError otherwise); a child killed by a signal gives InternalError. Call it before the caller starts threads of
// its own: only the calling thread exists in the child.
void run_in_child_process(const std::function<void()>& work);

}  // namespace parity::debug
