// Tests for parity::Logger: whole lines from many threads at once, custom sinks (with and without
// colour) and Polygraphy's line-info format.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "parity/core/logger.h"

namespace parity {
namespace {

// Keeps every message it is given, and notes whether two write() calls ever overlapped.
class CapturingSink : public LogSink {
 public:
  explicit CapturingSink(bool colour = false) : colour_(colour) {}

  void write(Severity severity, std::string_view text) override {
    if (writers_.fetch_add(1) != 0) overlapped_ = true;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      messages_.emplace_back(severity, std::string(text));
    }
    writers_.fetch_sub(1);
  }
  bool wants_colour() const override { return colour_; }

  std::vector<std::pair<Severity, std::string>> messages() {
    std::lock_guard<std::mutex> lock(mutex_);
    return messages_;
  }
  bool overlapped() const { return overlapped_; }

 private:
  bool colour_;
  std::atomic<int> writers_{0};
  std::atomic<bool> overlapped_{false};
  std::mutex mutex_;
  std::vector<std::pair<Severity, std::string>> messages_;
};

// Restores the global logger's severity, format and sink (stdout) after each test.
class LoggerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    previous_severity_ = Logger::global().severity();
    previous_format_ = Logger::global().format();
    Logger::global().set_severity(Severity::kInfo);
    Logger::global().set_format(LogFormat{});
  }
  void TearDown() override {
    Logger::global().set_sink(nullptr);
    Logger::global().set_severity(previous_severity_);
    Logger::global().set_format(previous_format_);
  }

 private:
  Severity previous_severity_ = Severity::kInfo;
  LogFormat previous_format_;
};

constexpr int kThreads = 8;
constexpr int kLinesPerThread = 2000;

// Starts kThreads threads that each log kLinesPerThread two-line messages "thread T line I" /
// "second part T I", while one more thread keeps rewriting the logger's settings (unchanged).
void log_from_many_threads() {
  std::vector<std::thread> threads;
  std::atomic<bool> done{false};
  std::thread settings([&] {
    while (!done.load()) {
      Logger::global().set_format(Logger::global().format());
      Logger::global().set_severity(Logger::global().severity());
    }
  });
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kLinesPerThread; ++i) log::info("thread {} line {}\nsecond part {} {}", t, i, t, i);
    });
  }
  for (auto& thread : threads) thread.join();
  done = true;
  settings.join();
}

// Checks that `messages` holds each thread's messages exactly once, whole and in that thread's order.
void expect_every_message_intact(const std::vector<std::string>& messages) {
  ASSERT_EQ(messages.size(), static_cast<std::size_t>(kThreads * kLinesPerThread));
  const std::regex shape(R"(\[I\] thread (\d+) line (\d+)\n    second part (\d+) (\d+)\n)");
  std::map<int, int> next_line;  // per thread
  for (const auto& message : messages) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(message, match, shape)) << "torn or mixed message: '" << message << "'";
    int thread = std::stoi(match[1]);
    int line = std::stoi(match[2]);
    ASSERT_EQ(match[3], match[1]) << message;
    ASSERT_EQ(match[4], match[2]) << message;
    ASSERT_EQ(line, next_line[thread]) << "thread " << thread << " lost or reordered a message";
    next_line[thread] = line + 1;
  }
  ASSERT_EQ(next_line.size(), static_cast<std::size_t>(kThreads));
  for (const auto& [thread, count] : next_line) EXPECT_EQ(count, kLinesPerThread) << "thread " << thread;
}

TEST_F(LoggerTest, ManyThreadsThroughASinkGiveWholeMessages) {
  auto sink = std::make_shared<CapturingSink>();
  Logger::global().set_sink(sink);
  log_from_many_threads();
  Logger::global().set_sink(nullptr);

  EXPECT_FALSE(sink->overlapped()) << "the sink's write() was entered by two threads at once";
  std::vector<std::string> texts;
  for (const auto& [severity, text] : sink->messages()) {
    EXPECT_EQ(severity, Severity::kInfo);
    texts.push_back(text);
  }
  expect_every_message_intact(texts);
}

TEST_F(LoggerTest, ManyThreadsThroughTheStreamSinkGiveWholeLines) {
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* stream = open_memstream(&buffer, &size);
  ASSERT_NE(stream, nullptr);
  Logger::global().set_stream(stream);
  log_from_many_threads();
  Logger::global().set_stream(stdout);
  std::fclose(stream);
  std::string text(buffer, size);
  std::free(buffer);

  // Messages are two lines each: split the stream after every second '\n'.
  std::vector<std::string> messages;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t first = text.find('\n', begin);
    std::size_t second = first == std::string::npos ? first : text.find('\n', first + 1);
    std::size_t end = second == std::string::npos ? text.size() : second + 1;
    messages.push_back(text.substr(begin, end - begin));
    begin = end;
  }
  expect_every_message_intact(messages);
}

TEST_F(LoggerTest, CustomSinkGetsFinishedPlainText) {
  auto sink = std::make_shared<CapturingSink>();
  Logger::global().set_sink(sink);
  log::warning("watch out\nsecond line");
  {
    Logger::Indent indent;
    log::info("indented {}", 1);
    log::info("indented\n\nlines\n");  // continuation lines keep the indent, empty and last ones too
  }
  log::verbose("hidden at the info severity");
  log::error("failed");
  Logger::global().log(Severity::kCritical, "direct");

  std::vector<std::pair<Severity, std::string>> expected = {
      {Severity::kWarning, "[W] watch out\n    second line\n"},
      {Severity::kInfo, "[I]     indented 1\n"},
      {Severity::kInfo, "[I]     indented\n        \n        lines\n        \n"},
      {Severity::kError, "[E] failed\n"},
      {Severity::kCritical, "[!] direct\n"},
  };
  EXPECT_EQ(sink->messages(), expected);
}

TEST_F(LoggerTest, SinkWantingColourGetsColourUnlessSwitchedOff) {
  auto sink = std::make_shared<CapturingSink>(/*colour=*/true);
  Logger::global().set_sink(sink);
  log::warning("coloured");
  log::info("info has no colour");
  Logger::global().set_format(LogFormat{.no_colors = true});
  log::warning("plain");

  std::vector<std::pair<Severity, std::string>> expected = {
      {Severity::kWarning, "\033[93m[W] coloured\033[0m\n"},
      {Severity::kInfo, "[I] info has no colour\n"},
      {Severity::kWarning, "[W] plain\n"},
  };
  EXPECT_EQ(sink->messages(), expected);
}

TEST_F(LoggerTest, SilentKeepsMessagesFromTheSink) {
  auto sink = std::make_shared<CapturingSink>();
  Logger::global().set_sink(sink);
  Logger::global().set_silent(true);
  log::error("not shown");
  Logger::global().set_silent(false);
  log::error("shown");
  std::vector<std::pair<Severity, std::string>> expected = {{Severity::kError, "[E] shown\n"}};
  EXPECT_EQ(sink->messages(), expected);
}

TEST_F(LoggerTest, LineInfoNamesThisFileAndTheCallsLine) {
  auto sink = std::make_shared<CapturingSink>();
  Logger::global().set_sink(sink);
  Logger::global().set_format(LogFormat{.line_info = true});
  const unsigned info_line = __LINE__ + 1;
  log::info("located {}", 42);
  const unsigned at_line = __LINE__ + 1;
  log::at(Severity::kWarning, "two\nlines");
  const unsigned direct_line = __LINE__ + 1;
  Logger::global().log(Severity::kError, "direct");

  std::vector<std::pair<Severity, std::string>> expected = {
      {Severity::kInfo, fmt::format("[I] [test_logger.cpp:{}] located 42\n", info_line)},
      {Severity::kWarning, fmt::format("[W] [test_logger.cpp:{}] two\n    lines\n", at_line)},
      {Severity::kError, fmt::format("[E] [test_logger.cpp:{}] direct\n", direct_line)},
  };
  EXPECT_EQ(sink->messages(), expected);
}

TEST_F(LoggerTest, LineInfoFollowsTheTimestamp) {
  auto sink = std::make_shared<CapturingSink>();
  Logger::global().set_sink(sink);
  Logger::global().set_format(LogFormat{.timestamp = true, .line_info = true});
  const unsigned line = __LINE__ + 1;
  log::start("stamped");

  auto messages = sink->messages();
  ASSERT_EQ(messages.size(), 1u);
  const std::regex shape(
      fmt::format(R"(\[\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d\] \[I\] \[test_logger\.cpp:{}\] stamped\n)", line));
  EXPECT_TRUE(std::regex_match(messages[0].second, shape)) << messages[0].second;
}

TEST_F(LoggerTest, WithoutLineInfoNoLocationIsShown) {
  auto sink = std::make_shared<CapturingSink>();
  Logger::global().set_sink(sink);
  log::info("no location");
  std::vector<std::pair<Severity, std::string>> expected = {{Severity::kInfo, "[I] no location\n"}};
  EXPECT_EQ(sink->messages(), expected);
}

}  // namespace
}  // namespace parity
