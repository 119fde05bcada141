// Bisection over prefixes: the shortest prefix of a sequence for which a check fails, used to name the
// node whose prefix of a graph crashes third-party code run in a child process.
#pragma once

namespace parity {

// The smallest n in [1, count] with fails(n), given fails(count) and that a prefix failing implies every
// longer one does; log2(count) calls of fails.
template <class Fails>
int shortest_failing_prefix(int count, Fails&& fails) {
  int low = 1, high = count;  // a prefix of `high` items fails; none shorter than `low` does
  while (low < high) {
    const int middle = low + (high - low) / 2;
    if (fails(middle)) high = middle;
    else low = middle + 1;
  }
  return high;
}

}  // namespace parity
