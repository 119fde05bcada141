// Machine resources seen by the reference kernels: memory for the default element limit, and
// the BLAS thread count (which follows parity::set_compute_threads).
#include <unistd.h>

#include <cblas.h>

#include "parity/core/thread_pool.h"
#include "parity/ops/kernel.h"

namespace parity::ops {

int64_t physical_memory_bytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return int64_t{1} << 34;
  return static_cast<int64_t>(pages) * page_size;
}

namespace {

// Registered when the reference kernels are linked in: this file is, through
// physical_memory_bytes (ExecutionLimits' default).
const bool kBlasFollowsComputeThreads = [] {
  on_compute_threads_change([](int threads) { openblas_set_num_threads(threads); });
  return true;
}();

}  // namespace

}  // namespace parity::ops
