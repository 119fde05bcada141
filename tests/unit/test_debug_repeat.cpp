// debug::repeat's stopping rules and counts, debug::Until parsing, debug::run_in_child_process.
#include <gtest/gtest.h>

#include "parity/core/error.h"
#include "parity/debug/child_process.h"
#include "parity/debug/repeat.h"

namespace parity {
namespace {

TEST(DebugRepeat, UntilGoodBadCountAndStop) {
  // Fails on iterations 1 and 2, passes afterwards.
  auto flaky = [](int index) { return debug::IterationOutcome{index >= 3, index >= 3 ? "pass" : "fail"}; };
  auto good = debug::repeat(debug::Until::parse("good"), flaky);
  EXPECT_EQ(good.iterations, 3);
  EXPECT_EQ(good.passed, 1);
  EXPECT_EQ(good.labels.at("fail"), 2);
  EXPECT_EQ(debug::repeat(debug::Until::parse("bad"), flaky).iterations, 1);
  auto count = debug::repeat(debug::Until::parse("5"), flaky);
  EXPECT_EQ(count.iterations, 5);
  EXPECT_EQ(count.passed, 3);
  EXPECT_FALSE(count.stopped_at_limit);
  auto never = debug::repeat(debug::Until::parse("good"), [](int) { return debug::IterationOutcome{false, "f"}; }, 7);
  EXPECT_EQ(never.iterations, 7);
  EXPECT_TRUE(never.stopped_at_limit);
  auto stop = debug::repeat(debug::Until::parse("9"), [](int index) {
    return debug::IterationOutcome{true, "p", index == 2};
  });
  EXPECT_EQ(stop.iterations, 2);
  EXPECT_TRUE(stop.stopped_early);
}

TEST(DebugRepeat, UntilRejectsOtherText) {
  for (const char* text : {"", "0", "-1", "goodish", "3x"})
    EXPECT_THROW(debug::Until::parse(text), InvalidInputError) << text;
}

TEST(DebugChildProcess, StateStaysInTheChildAndErrorsComeBack) {
  static int counter = 0;
  debug::run_in_child_process([] { ++counter; });
  EXPECT_EQ(counter, 0);
  try {
    debug::run_in_child_process([] { raise<FileError>("model.onnx: no such file"); });
    FAIL() << "expected an error";
  } catch (const InvalidInputError& e) {
    EXPECT_STREQ(e.what(), "model.onnx: no such file");
  }
  EXPECT_THROW(debug::run_in_child_process([] { throw std::runtime_error("boom"); }), InternalError);
}

}  // namespace
}  // namespace parity
