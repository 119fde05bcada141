// Whether the log file (--log-file) took every line. A write that fails (disk full, a device
// that refuses data) closes the file, records why, and is reported by the command's caller as an
// error: a truncated log is not a successful run.
#pragma once

#include <optional>
#include <string>

namespace parity {

// "'<path>': <strerror>" once a write to the log file failed; nullopt while every write succeeded.
std::optional<std::string> log_file_failure();

}  // namespace parity
