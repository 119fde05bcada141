// The general pair-statistics kernel for first outputs that work in int64 and uint64, against every
// work type of the second (pair_statistics_kernel.h).
#include "pair_statistics_kernel.h"

namespace parity::statistics::detail {

template PairStatistics general_pair_statistics_first<int64_t>(
    const TensorView&, const TensorView&, const Shape&, const PairStatisticsRequest&);
template std::vector<int64_t> mismatch_indices_first<int64_t>(
    const TensorView&, const TensorView&, const PairStatisticsRequest&, int64_t);
template PairStatistics general_pair_statistics_first<uint64_t>(
    const TensorView&, const TensorView&, const Shape&, const PairStatisticsRequest&);
template std::vector<int64_t> mismatch_indices_first<uint64_t>(
    const TensorView&, const TensorView&, const PairStatisticsRequest&, int64_t);

}  // namespace parity::statistics::detail
