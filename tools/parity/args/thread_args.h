// The --threads flag group of the commands that compute (run, convert --report-error, surgeon
// sanitize's constant folding): the one thread setting of the comparisons' thread pool and the
// reference kernels' BLAS.
#pragma once

#include <CLI/CLI.hpp>

namespace parity::cli {

class ThreadArgs {
 public:
  void add_to(CLI::App& app);
  // Applies --threads (parity::set_compute_threads) when it was given; call once after parsing.
  void apply() const;

 private:
  int threads_ = 0;  // 0: not given (the hardware concurrency)
};

}  // namespace parity::cli
