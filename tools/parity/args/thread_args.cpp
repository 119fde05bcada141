#include "args/thread_args.h"

#include "parity/core/thread_pool.h"

namespace parity::cli {

void ThreadArgs::add_to(CLI::App& app) {
  app.add_option("--threads", threads_,
                 "Threads for computation: the comparisons' statistics and the reference runner's BLAS "
                 "(default: the number of hardware threads)")
      ->check(CLI::Range(1, 4096))
      ->group("Compute");
}

void ThreadArgs::apply() const {
  if (threads_ > 0) set_compute_threads(threads_);
}

}  // namespace parity::cli
