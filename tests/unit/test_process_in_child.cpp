// parity::run_in_child_process (core): what the child threw comes back with its kind, an exit and a
// signal are told apart, the child's changes stay in the child, and a child past its time limit is killed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <stdexcept>

#include "parity/core/process.h"
#include "parity/core/error.h"

namespace parity {
namespace {

TEST(ChildProcess, ReturnsCleanlyAndKeepsTheChildsChangesThere) {
  int counter = 0;
  ChildProcessEnd end = run_in_child_process([&] { ++counter; }, "a test child");
  EXPECT_EQ(end.exit_status, 0);
  EXPECT_EQ(end.signal, 0);
  EXPECT_FALSE(end.thrown.has_value());
  EXPECT_EQ(counter, 0);
}

TEST(ChildProcess, AParityErrorComesBackWithItsKind) {
  ChildProcessEnd end = run_in_child_process([] { raise<FileError>("model.onnx: no such file"); }, "a test child");
  EXPECT_EQ(end.exit_status, 1);
  ASSERT_TRUE(end.thrown.has_value());
  EXPECT_EQ(end.thrown->kind, "FileError");
  EXPECT_EQ(end.thrown->message, "model.onnx: no such file");
  EXPECT_THROW(end.thrown->rethrow(), FileError);
}

TEST(ChildProcess, AnotherExceptionComesBackAsAnError) {
  ChildProcessEnd end = run_in_child_process([] { throw std::runtime_error("boom\nsecond line"); }, "a test child");
  EXPECT_EQ(end.exit_status, 2);
  ASSERT_TRUE(end.thrown.has_value());
  EXPECT_EQ(end.thrown->kind, "");
  EXPECT_EQ(end.thrown->message, "boom\nsecond line");
  try {
    end.thrown->rethrow();
    FAIL() << "rethrow returned";
  } catch (const InvalidInputError&) {
    FAIL() << "a foreign exception came back as InvalidInputError";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "boom\nsecond line");
  }
}

TEST(ChildProcess, TellsAnExitFromASignal) {
  ChildProcessEnd exited = run_in_child_process([] { std::_Exit(3); }, "a test child");
  EXPECT_EQ(exited.exit_status, 3);
  EXPECT_EQ(exited.signal, 0);
  EXPECT_FALSE(exited.thrown.has_value());
  ChildProcessEnd killed = run_in_child_process([] { std::raise(SIGKILL); }, "a test child");
  EXPECT_EQ(killed.signal, SIGKILL);
  EXPECT_FALSE(killed.thrown.has_value());
}

TEST(ChildProcess, AChildPastItsTimeLimitIsKilled) {
  using namespace std::chrono_literals;
  ChildProcessEnd hung = run_in_child_process([] { for (;;) ::pause(); }, "a test child", 100ms);
  EXPECT_TRUE(hung.timed_out);
  EXPECT_EQ(hung.signal, SIGKILL);
  // Within its limit a child ends as it would without one, what it threw included.
  ChildProcessEnd quick = run_in_child_process([] { raise<FileError>("late.onnx"); }, "a test child", 60s);
  EXPECT_FALSE(quick.timed_out);
  EXPECT_EQ(quick.exit_status, 1);
  ASSERT_TRUE(quick.thrown.has_value());
  EXPECT_EQ(quick.thrown->message, "late.onnx");
}

}  // namespace
}  // namespace parity
