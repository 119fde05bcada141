// The small POSIX pieces the places that still start their own processes share (waiting for a
// child, reading a pipe to its end); process.h starts processes.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace parity {

// waitpid(child), retried when a signal interrupts it: the child's wait status, or nullopt when
// waitpid failed (errno says why).
std::optional<int> wait_for_child(pid_t child);

// Reads `fd` until its end (or an error other than an interruption) and returns what it read.
std::string read_to_end(int fd);

}  // namespace parity
