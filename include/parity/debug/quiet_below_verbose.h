// While alive, below --verbose, hides the log lines of what a debug tool runs for each candidate
// (the Comparator's blocks, runners' activation lines): the tool logs one line per candidate instead.
#pragma once

#include "parity/core/logger.h"

namespace parity::debug {

class QuietBelowVerbose {
 public:
  QuietBelowVerbose() : saved_(Logger::global().severity()) {
    if (saved_ >= Severity::kInfo) Logger::global().set_severity(Severity::kCritical);
  }
  ~QuietBelowVerbose() { Logger::global().set_severity(saved_); }
  QuietBelowVerbose(const QuietBelowVerbose&) = delete;
  QuietBelowVerbose& operator=(const QuietBelowVerbose&) = delete;

 private:
  Severity saved_;
};

}  // namespace parity::debug
