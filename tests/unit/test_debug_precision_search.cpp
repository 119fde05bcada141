// The precision search against a monotone oracle: a candidate passes when it keeps every needed
// node. The search must find exactly the needed nodes in every mode and direction, within about
// k*log2(N) checks in bisect mode, and report the outcomes it can reach.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "parity/debug/precision_search.h"

namespace parity::debug {
namespace {

struct Oracle {
  std::set<std::size_t> needed;
  int calls = 0;
  CandidateCheck check() {
    return [this](const std::vector<std::size_t>& kept) {
      ++calls;
      bool passed = std::all_of(needed.begin(), needed.end(),
                                [&](std::size_t n) { return std::binary_search(kept.begin(), kept.end(), n); });
      return CandidateVerdict{passed, passed ? "ok" : "overflow"};
    };
  }
};

std::vector<std::size_t> sorted(const std::set<std::size_t>& set) { return {set.begin(), set.end()}; }

TEST(PrecisionSearch, FindsExactlyTheNeededNodesInEveryModeAndDirection) {
  std::mt19937 random(7);
  for (SearchMode mode : {SearchMode::kBisect, SearchMode::kLinear}) {
    for (SearchDirection direction : {SearchDirection::kForward, SearchDirection::kReverse}) {
      for (int trial = 0; trial < 30; ++trial) {
        const std::size_t count = 1 + random() % 60;
        Oracle oracle;
        const std::size_t needed = 1 + random() % std::min<std::size_t>(4, count);
        while (oracle.needed.size() < needed) oracle.needed.insert(random() % count);
        PrecisionSearchOptions options{mode, direction};
        auto result = search_precision(count, oracle.check(), options);
        ASSERT_EQ(result.outcome, PrecisionSearchResult::Outcome::kFound);
        EXPECT_EQ(result.kept, sorted(oracle.needed)) << "count " << count << " trial " << trial;
        EXPECT_EQ(result.iterations, oracle.calls);
        EXPECT_TRUE(result.final_verdict.passed);
        EXPECT_FALSE(result.none_kept.passed);
      }
    }
  }
}

TEST(PrecisionSearch, BisectNeedsAboutKLog2NChecks) {
  const std::size_t count = 1024;
  for (std::size_t k : {1, 2, 3, 5}) {
    Oracle oracle;
    for (std::size_t i = 0; i < k; ++i) oracle.needed.insert(100 + 173 * i);
    auto result = search_precision(count, oracle.check());
    ASSERT_EQ(result.kept, sorted(oracle.needed));
    // keep none, keep all, then per needed node one bisection of at most log2(N) checks and one more.
    EXPECT_LE(result.iterations, 2 + static_cast<int>(k) * (10 + 1)) << k;
  }
}

TEST(PrecisionSearch, NothingToKeepStopsAfterOneCheck) {
  Oracle oracle;
  std::vector<PrecisionSearchStep> steps;
  auto result =
      search_precision(10, oracle.check(), {}, [&](const PrecisionSearchStep& step) { steps.push_back(step); });
  EXPECT_EQ(result.outcome, PrecisionSearchResult::Outcome::kNothingToKeep);
  EXPECT_TRUE(result.kept.empty());
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].phase, "keep none");
}

TEST(PrecisionSearch, ReducedModelThatCannotRunStopsAfterTwoChecks) {
  // Only the candidate keeping every node runs (a runner without kernels for the reduced type):
  // not a search over which nodes make it load.
  int calls = 0;
  auto result = search_precision(10, [&](const std::vector<std::size_t>& kept) {
    ++calls;
    if (kept.size() == 10) return CandidateVerdict{true, "matched"};
    return CandidateVerdict{false, "the candidate did not run", true};
  });
  EXPECT_EQ(result.outcome, PrecisionSearchResult::Outcome::kCannotRunReduced);
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(result.kept.empty());
  EXPECT_TRUE(result.none_kept.error);
}

TEST(PrecisionSearch, AlwaysFailingCheckStopsAfterTwoChecks) {
  int calls = 0;
  auto result = search_precision(10, [&](const std::vector<std::size_t>&) {
    ++calls;
    return CandidateVerdict{false, "broken"};
  });
  EXPECT_EQ(result.outcome, PrecisionSearchResult::Outcome::kFailsWithAllKept);
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(result.kept.empty());
}

TEST(PrecisionSearch, WithoutNarrowingKeepsTheWholePrefixOrSuffix) {
  Oracle oracle{{3, 7}};
  auto forward = search_precision(10, oracle.check(), {.narrow = false});
  EXPECT_EQ(forward.kept, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  auto reverse = search_precision(10, oracle.check(), {.direction = SearchDirection::kReverse, .narrow = false});
  EXPECT_EQ(reverse.kept, (std::vector<std::size_t>{3, 4, 5, 6, 7, 8, 9}));
}

TEST(PrecisionSearch, IterationLimitGivesTheSmallestPassingSetSoFar) {
  Oracle oracle{{5}};
  auto result = search_precision(100, oracle.check(), {.max_iterations = 3});
  EXPECT_EQ(result.outcome, PrecisionSearchResult::Outcome::kIterationLimit);
  EXPECT_EQ(oracle.calls, 3);
  // keep none, keep all (100), then the first bisection step: the first 50 pass.
  EXPECT_EQ(result.kept.size(), 50u);
  EXPECT_TRUE(std::binary_search(result.kept.begin(), result.kept.end(), 5u));
  EXPECT_TRUE(result.final_verdict.passed);
}

TEST(PrecisionSearch, IterationLimitBeforeAnyPassIsReported) {
  Oracle oracle{{5}};
  auto result = search_precision(100, oracle.check(), {.max_iterations = 1});
  EXPECT_EQ(result.outcome, PrecisionSearchResult::Outcome::kIterationLimit);
  EXPECT_TRUE(result.kept.empty());
  EXPECT_FALSE(result.final_verdict.passed);
}

}  // namespace
}  // namespace parity::debug
