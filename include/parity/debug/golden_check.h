// The check `debug precision` applies to each candidate: the candidate runner's outputs against
// golden outputs (a float32 reference run made once, or loaded), judged as `run` judges
// (compare::Judge: the run loop, postprocessing, comparison function, optional --validate), on the
// same feeds every time.
#pragma once

#include <vector>

#include "parity/compare/comparator.h"
#include "parity/debug/precision_search.h"

namespace parity::debug {

struct GoldenCheckOptions {
  compare::CompareFunc compare_func = compare::simple();
  compare::PostprocessRules postprocess;
  bool validate = false;  // also fail on NaN/Inf in the candidate's outputs (like run --validate)
  bool fail_fast = false;  // stop comparing a candidate at its first mismatching iteration
  int warm_up = 0;
};

class GoldenCheck {
 public:
  // `golden`: one runner's results, one iteration per feed; `feeds`: the inputs they were made from.
  GoldenCheck(compare::RunnerResults golden, std::vector<NamedTensors> feeds, GoldenCheckOptions options);

  // Runs `candidate` (activating and deactivating it) on the feeds and compares. The Comparator's
  // log lines are shown at --verbose only (the search prints one line per candidate).
  CandidateVerdict check(runtime::Runner& candidate) const;

  const std::vector<NamedTensors>& feeds() const { return feeds_; }

 private:
  compare::RunnerResults golden_;
  std::vector<NamedTensors> feeds_;
  GoldenCheckOptions options_;
};

// "max abs error 3.1e+04, max rel error 0.98 (output 'y')" over every output and iteration of a
// pair compared with `simple`; for other comparison functions, the outputs that mismatched.
std::string describe_error(const compare::PairResult& pair);

}  // namespace parity::debug
