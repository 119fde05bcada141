// Machine resources seen by the reference kernels: memory for the default element limit, and
// the BLAS thread count.
#include <unistd.h>

#include <cblas.h>

#include "parity/ops/kernel.h"

namespace parity::ops {

int64_t physical_memory_bytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return int64_t{1} << 34;
  return static_cast<int64_t>(pages) * page_size;
}

void set_compute_threads(int threads) {
  if (threads > 0) openblas_set_num_threads(threads);
}

}  // namespace parity::ops
