// parity::Process, run_process and find_program (core): arguments and environment reach the
// program, both output pipes are read without either filling, an exit status and a signal are told
// apart, a deadline kills, a child of its own process group is killed with what it started, and a
// program not found is a ProcessStartError naming it.
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "parity/core/process.h"
#include "parity/core/temporary_folder.h"
#include "parity/core/file_io.h"

namespace parity {
namespace {

ProcessSpec shell(const std::string& script) {
  ProcessSpec spec;
  spec.program = "sh";
  spec.arguments = {"-c", script};
  spec.standard_input = ProcessStream::null();
  spec.standard_output = ProcessStream::pipe();
  spec.standard_error = ProcessStream::pipe();
  return spec;
}

TEST(Process, ArgumentsAndEnvironmentReachTheProgram) {
  ProcessSpec spec = shell("printf '%s|%s|%s' \"$0\" \"$1\" \"$PARITY_PROCESS_TEST\"");
  spec.arguments.push_back("first");
  spec.arguments.push_back("second word");
  spec.environment = {{"PARITY_PROCESS_TEST", "set"}};
  ProcessResult result = run_process(spec);
  EXPECT_TRUE(result.end.succeeded());
  EXPECT_EQ(result.standard_output, "first|second word|set");
  EXPECT_EQ(result.standard_error, "");
}

TEST(Process, BothPipesAreReadWithoutEitherFilling) {
  // 1 MiB to each stream, far beyond a pipe's buffer: a reader of one stream only would block.
  ProcessResult result = run_process(shell("head -c 1048576 /dev/zero; head -c 1048576 /dev/zero >&2; exit 3"));
  EXPECT_EQ(result.end.exit_status, 3);
  EXPECT_EQ(result.end.describe(), "exit status 3");
  EXPECT_EQ(result.standard_output.size(), 1048576u);
  EXPECT_EQ(result.standard_error.size(), 1048576u);
  EXPECT_EQ(result.interleaved.size(), 2 * 1048576u);
}

TEST(Process, ASignalIsToldApartFromAnExit) {
  ProcessResult result = run_process(shell("kill -SEGV $$"));
  EXPECT_EQ(result.end.signal, SIGSEGV);
  EXPECT_EQ(result.end.exit_status, 0);
  EXPECT_EQ(result.end.describe(), "signal 11");
  EXPECT_EQ(signal_name(result.end.signal), " (SIGSEGV)");
}

TEST(Process, ADeadlineKillsTheProgram) {
  auto start = std::chrono::steady_clock::now();
  ProcessResult result = run_process(shell("exec sleep 30"), std::chrono::milliseconds(200));
  EXPECT_TRUE(result.end.timed_out);
  EXPECT_EQ(result.end.signal, SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(Process, InputOutputAndKill) {
  ProcessSpec spec = shell("read line; echo \"got $line\"; exec sleep 30");
  spec.standard_input = ProcessStream::pipe();
  Process process(spec);
  EXPECT_TRUE(process.write_input("hello\n"));
  std::string answer;
  while (answer.find('\n') == std::string::npos) {
    auto got = process.read_output(ProcessOutput::kStandardOutput, answer,
                                   ProcessClock::now() + std::chrono::seconds(10));
    ASSERT_TRUE(got.has_value());
    ASSERT_GT(*got, 0u);
  }
  EXPECT_EQ(answer, "got hello\n");
  std::string more;
  EXPECT_FALSE(process.read_output(ProcessOutput::kStandardOutput, more,
                                   ProcessClock::now() + std::chrono::milliseconds(50)));  // nothing, in time
  process.kill(SIGTERM);
  ProcessEnd end = process.wait();
  EXPECT_EQ(end.signal, SIGTERM);
  EXPECT_FALSE(process.write_input("late\n"));  // closed, and no SIGPIPE
}

// Whether process `pid` ends (is gone, or a zombie nobody reaps) within ten seconds.
bool ends(pid_t pid) {
  for (int tries = 0; tries < 1000; ++tries) {
    std::string stat;
    try {
      stat = read_file(fmt::format("/proc/{}/stat", pid));
    } catch (const Error&) {
      return true;
    }
    const auto after_name = stat.rfind(')');
    if (after_name != std::string::npos && after_name + 2 < stat.size() &&
        (stat[after_name + 2] == 'Z' || stat[after_name + 2] == 'X'))
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(Process, KillGroupEndsTheProgramsItStarted) {
  ProcessSpec spec = shell("sleep 30 & echo $!; wait");
  spec.own_process_group = true;
  Process process(spec);
  std::string line;
  while (line.find('\n') == std::string::npos) {
    auto got = process.read_output(ProcessOutput::kStandardOutput, line, ProcessClock::now() + std::chrono::seconds(10));
    ASSERT_TRUE(got.has_value() && *got > 0);
  }
  const pid_t started = static_cast<pid_t>(std::stol(line));
  EXPECT_EQ(::getpgid(process.pid()), process.pid());  // a group of its own, which what it starts joins
  EXPECT_EQ(::getpgid(started), process.pid());
  process.kill_group(SIGKILL);
  EXPECT_EQ(process.wait().signal, SIGKILL);
  EXPECT_TRUE(ends(started)) << "the program the child started outlived the group's kill";
}

TEST(Process, AChildIsInThisProcesssGroupUnlessAsked) {
  Process process(shell("exec sleep 30"));
  EXPECT_EQ(::getpgid(process.pid()), ::getpgrp());
  process.kill(SIGKILL);
  process.wait();
}

TEST(Process, WritingToAProgramThatEndedFailsWithoutSigpipe) {
  ProcessSpec spec = shell("exit 0");
  spec.standard_input = ProcessStream::pipe();
  Process process(spec);
  std::string ignored;
  process.read_output(ProcessOutput::kStandardOutput, ignored, std::nullopt);  // its end: the program exited
  EXPECT_FALSE(process.write_input(std::string(1 << 20, 'x')));
  EXPECT_TRUE(process.wait().succeeded());
}

TEST(Process, StandardOutputAndErrorToAFile) {
  TemporaryFolder folder("parity-process-test", "a process test");
  ProcessSpec spec = shell("echo out; echo err >&2");
  spec.standard_error = ProcessStream::to_file(folder.path() / "log.txt");
  spec.standard_output = ProcessStream::same_as_standard_error();
  EXPECT_TRUE(run_process(spec).end.succeeded());
  EXPECT_EQ(read_file(folder.path() / "log.txt"), "out\nerr\n");
}

TEST(Process, AProgramNotFoundIsAStartError) {
  ProcessSpec spec;
  spec.program = "parity-no-such-program";
  try {
    Process process(spec);
    FAIL() << "started";
  } catch (const ProcessStartError& error) {
    EXPECT_EQ(error.error_number(), ENOENT);
    EXPECT_EQ(std::string(error.what()), "cannot start parity-no-such-program: No such file or directory");
  }
}

TEST(FindProgram, LooksOnPathAndTakesPathsAsGiven) {
  auto sh = find_program("sh");
  ASSERT_TRUE(sh.has_value());
  EXPECT_TRUE(sh->is_absolute());
  EXPECT_EQ(find_program(sh->string()), sh);
  EXPECT_FALSE(find_program("parity-no-such-program").has_value());
  EXPECT_FALSE(find_program("/nonexistent/sh").has_value());
  const char* saved = std::getenv("PATH");
  std::string path = saved ? saved : "";
  ::setenv("PATH", "/nonexistent", 1);
  EXPECT_FALSE(find_program("sh").has_value());
  ::setenv("PATH", path.c_str(), 1);
}

}  // namespace
}  // namespace parity
