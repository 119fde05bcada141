#include "parity/debug/precision_search.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace parity::debug {
namespace {

struct IterationLimitReached {};

int ceil_log2(std::size_t n) { return n <= 1 ? 0 : static_cast<int>(std::ceil(std::log2(static_cast<double>(n)))); }

class Search {
 public:
  Search(std::size_t node_count, const CandidateCheck& check, const PrecisionSearchOptions& options,
         const std::function<void(const PrecisionSearchStep&)>& on_step)
      : count_(node_count), check_(check), options_(options), on_step_(on_step) {
    // The order the search walks: positions from the start (forward) or from the end (reverse).
    for (std::size_t i = 0; i < count_; ++i)
      order_.push_back(options_.direction == SearchDirection::kForward ? i : count_ - 1 - i);
    // Keep none, keep all, the boundary, and (narrowing) one more bisection for a second node.
    const int boundary = options_.mode == SearchMode::kBisect ? ceil_log2(count_) : static_cast<int>(count_);
    estimated_ = 2 + boundary + (options_.narrow ? 1 + boundary : 0);
  }

  PrecisionSearchResult run() {
    PrecisionSearchResult result;
    try {
      result.none_kept = evaluate({}, "keep none");
      if (result.none_kept.passed) {
        result.outcome = PrecisionSearchResult::Outcome::kNothingToKeep;
        result.final_verdict = result.none_kept;
      } else if (!evaluate(prefix(count_), "keep all").passed) {
        result.outcome = PrecisionSearchResult::Outcome::kFailsWithAllKept;
      } else if (result.none_kept.error) {
        result.outcome = PrecisionSearchResult::Outcome::kCannotRunReduced;
      } else {
        std::size_t boundary = find_boundary();
        if (options_.narrow) narrow(boundary);
        result.outcome = PrecisionSearchResult::Outcome::kFound;
      }
    } catch (const IterationLimitReached&) {
      result.outcome = PrecisionSearchResult::Outcome::kIterationLimit;
    }
    if (result.outcome == PrecisionSearchResult::Outcome::kFound ||
        result.outcome == PrecisionSearchResult::Outcome::kIterationLimit) {
      result.kept.assign(best_.begin(), best_.end());
      result.final_verdict = best_verdict_;
    }
    result.iterations = iterations_;
    return result;
  }

 private:
  std::set<std::size_t> prefix(std::size_t length, std::set<std::size_t> with = {}) const {
    for (std::size_t i = 0; i < length; ++i) with.insert(order_[i]);
    return with;
  }

  CandidateVerdict evaluate(const std::set<std::size_t>& kept, const char* phase) {
    if (options_.max_iterations > 0 && iterations_ >= options_.max_iterations) throw IterationLimitReached{};
    ++iterations_;
    estimated_ = std::max(estimated_, iterations_);
    last_verdict_ = check_(std::vector<std::size_t>(kept.begin(), kept.end()));
    if (last_verdict_.passed && (!has_best_ || kept.size() <= best_.size())) {
      has_best_ = true;
      best_ = kept;
      best_verdict_ = last_verdict_;
    }
    if (on_step_) on_step_({iterations_, estimated_, phase, kept.size(), last_verdict_});
    return last_verdict_;
  }

  // The shortest passing prefix's length (keeping the whole order passes, keeping none fails).
  std::size_t find_boundary() {
    if (options_.mode == SearchMode::kLinear) {
      for (std::size_t length = 1; length < count_; ++length)
        if (evaluate(prefix(length), "boundary").passed) return length;
      return count_;
    }
    std::size_t failing = 0, passing = count_;
    while (passing - failing > 1) {
      std::size_t middle = failing + (passing - failing) / 2;
      if (evaluate(prefix(middle), "boundary").passed) passing = middle;
      else failing = middle;
    }
    return passing;
  }

  // Narrows the passing prefix of `boundary` nodes, whose last node is needed.
  void narrow(std::size_t boundary) {
    std::set<std::size_t> needed{order_[boundary - 1]};
    if (options_.mode == SearchMode::kLinear) {
      std::set<std::size_t> kept = prefix(boundary);
      for (std::size_t i = boundary - 1; i-- > 0;) {
        std::set<std::size_t> without = kept;
        without.erase(order_[i]);
        if (evaluate(without, "narrow").passed) kept = std::move(without);
      }
      return;
    }
    // Invariant: `needed` with the first `limit` nodes of the order passes.
    std::size_t limit = boundary - 1;
    while (limit > 0) {
      if (evaluate(needed, "narrow").passed) return;
      estimated_ = std::max(estimated_, iterations_ + ceil_log2(limit) + 1);
      std::size_t failing = 0, passing = limit;
      while (passing - failing > 1) {
        std::size_t middle = failing + (passing - failing) / 2;
        if (evaluate(prefix(middle, needed), "narrow").passed) passing = middle;
        else failing = middle;
      }
      needed.insert(order_[passing - 1]);
      limit = passing - 1;
    }
    // `needed` is the whole remaining prefix: it passes by the invariant (evaluated when limit
    // reached 0 through a passing bisection step, or it is the boundary prefix itself).
    if (needed.size() < best_.size()) evaluate(needed, "narrow");
  }

  std::size_t count_;
  const CandidateCheck& check_;
  const PrecisionSearchOptions& options_;
  const std::function<void(const PrecisionSearchStep&)>& on_step_;
  std::vector<std::size_t> order_;
  int iterations_ = 0;
  int estimated_ = 0;
  CandidateVerdict last_verdict_;
  bool has_best_ = false;
  std::set<std::size_t> best_;  // the smallest passing set checked
  CandidateVerdict best_verdict_;
};

}  // namespace

PrecisionSearchResult search_precision(std::size_t node_count, const CandidateCheck& check,
                                       const PrecisionSearchOptions& options,
                                       const std::function<void(const PrecisionSearchStep&)>& on_step) {
  return Search(node_count, check, options, on_step).run();
}

}  // namespace parity::debug
