// debug::repeat's stopping rules and counts, debug::Until parsing, the debug replay of repeated
// iterations (debug::DebugReplay, debug::RecordedIteration), debug::run_in_child_process.
#include <filesystem>

#include <gtest/gtest.h>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/debug/fresh_process.h"
#include "parity/debug/repeat.h"
#include "parity/debug/replay.h"

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

TEST(DebugReplay, RecordedIterationsComeBackByKey) {
  auto path = std::filesystem::temp_directory_path() / "parity_test_debug_repeat_replay.json";
  {
    debug::DebugReplay replay({}, path, {{"tool", "debug repeat"}}, {"tool"});
    replay.record(debug::RecordedIteration{true, 2}.to_step("iteration:1"));
    replay.record(debug::RecordedIteration{false, 0}.to_step("iteration:2"));
  }
  debug::DebugReplay loaded(path, {}, {{"tool", "debug repeat"}}, {"tool"});
  EXPECT_EQ(loaded.loaded_field("tool"), "debug repeat");
  auto first = debug::RecordedIteration::from_step(*loaded.find("iteration:1"), path);
  EXPECT_TRUE(first.failed);
  EXPECT_EQ(first.exit_code, 2);
  EXPECT_FALSE(debug::RecordedIteration::from_step(*loaded.find("iteration:2"), path).failed);
  EXPECT_FALSE(loaded.find("iteration:3").has_value());
  EXPECT_EQ(debug::outcome_label(true, 2), "failed with exit code 2");
  // A step without its exit code, a step without its outcome, a replay without the required field.
  EXPECT_THROW(debug::RecordedIteration::from_step({{"key", "iteration:1"}, {"failed", true}}, path), FileError);
  write_file_atomic(path, R"({"tool": "debug repeat", "steps": [{"key": "iteration:1"}]})");
  EXPECT_THROW(debug::DebugReplay(path, {}, {}, {"tool"}), FileError);
  write_file_atomic(path, R"({"steps": []})");
  EXPECT_THROW(debug::DebugReplay(path, {}, {}, {"tool"}), FileError);
  std::filesystem::remove(path);
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
