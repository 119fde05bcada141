// The search of `debug precision`: which nodes, in a topological order, must stay in higher
// precision for a check to pass. The algorithm knows nothing of models or runners: it asks a
// CandidateCheck about sets of node positions and assumes that keeping more nodes never makes a
// passing candidate fail (the monotonicity Polygraphy's `debug precision` assumes too).
//
//   1. Keep nothing: a pass means nothing needs to be kept. Keep everything: a failure means no
//      keep list can help (the check is broken, or the error does not come from precision). When
//      the candidate keeping nothing could not run at all (CandidateVerdict::error) but the one
//      keeping everything passes, the runner cannot run the reduced-precision model: that is the
//      answer, not a search over which nodes make it load.
//   2. The boundary: the shortest prefix (forward) or suffix (reverse) of the order that passes,
//      by bisection (about log2 N checks) or linearly (one node more each time).
//   3. Narrowing (unless disabled): the prefix's last node is needed (one node fewer fails).
//      Bisect mode then keeps the needed nodes found so far and bisects again over the nodes
//      before the last one found, until the needed nodes pass alone: about k*log2(N) checks for k
//      needed nodes. Linear mode drops the prefix's nodes one at a time, from the boundary back,
//      keeping each only if the check fails without it.
// The answer is a set from which no node found needed can be dropped alone (under monotonicity).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace parity::debug {

enum class SearchMode { kBisect, kLinear };
enum class SearchDirection { kForward, kReverse };

struct CandidateVerdict {
  bool passed = false;
  std::string detail;  // e.g. "max abs error 3.1e+04 (output 'y')"; shown in progress lines
  bool error = false;  // the candidate could not be run or checked at all (detail says why)
};

// Checks a candidate keeping the nodes at these positions (ascending) in higher precision.
using CandidateCheck = std::function<CandidateVerdict(const std::vector<std::size_t>& kept)>;

struct PrecisionSearchOptions {
  SearchMode mode = SearchMode::kBisect;
  SearchDirection direction = SearchDirection::kForward;
  bool narrow = true;       // step 3
  int max_iterations = 0;   // 0: no limit; otherwise the search stops with the best passing set so far
};

struct PrecisionSearchStep {
  int iteration = 0;            // 1-based
  int estimated_iterations = 0; // the estimate when this step ran
  std::string phase;            // "keep none", "keep all", "boundary", "narrow"
  std::size_t kept_count = 0;
  CandidateVerdict verdict;
};

struct PrecisionSearchResult {
  enum class Outcome {
    kNothingToKeep,     // keeping nothing passes
    kFound,             // `kept` passes
    kFailsWithAllKept,  // keeping every node fails: nothing to find
    kIterationLimit,    // stopped at max_iterations: `kept` passes but may be larger than needed
    kCannotRunReduced,  // keeping nothing could not run (none_kept.error), keeping everything passes
  };
  Outcome outcome = Outcome::kFound;
  std::vector<std::size_t> kept;  // ascending positions; empty unless kFound/kIterationLimit
  int iterations = 0;
  CandidateVerdict none_kept;     // the check with nothing kept (the error before)
  CandidateVerdict final_verdict; // the check with `kept` (the error after)
};

// Searches over positions 0..node_count-1 (a topological order); `on_step` sees every check.
PrecisionSearchResult search_precision(std::size_t node_count, const CandidateCheck& check,
                                       const PrecisionSearchOptions& options = {},
                                       const std::function<void(const PrecisionSearchStep&)>& on_step = {});

}  // namespace parity::debug
