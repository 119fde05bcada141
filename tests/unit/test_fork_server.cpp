// parity::ForkServer (core): each request runs in a fresh child of a server forked at construction,
// so it sees this process's state of that time (not a change made since); what the child threw comes
// back with its kind, a signal is told apart from an exit, and the server goes on after a crash; a
// child talks with its caller over its channel, and children of several requests live at once.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <csignal>
#include <string>
#include <thread>

#include "parity/core/error.h"
#include "parity/core/fork_server.h"

namespace parity {
namespace {

int state_at_start = 0;

void work(const std::string& request, int channel) {
  if (request == "crash") {
    const rlimit no_core{0, 0};  // the crash is the test's: no core file
    ::setrlimit(RLIMIT_CORE, &no_core);
    std::signal(SIGFPE, SIG_DFL);  // not a sanitizer's handler: the child dies by the signal
    std::raise(SIGFPE);
  }
  if (request == "throw") raise<InvalidInputError>("bad request");
  // Answers what the caller sends with it doubled, until the caller closes the channel.
  if (request == "echo")
    for (std::string text; channel_receive_string(channel, text);) (void)channel_send_string(channel, text + text);
  // Exits with the state the child sees: the server's, copied when it was forked.
  if (request == "state" && state_at_start != 1) raise<InternalError>("state {}", state_at_start);
}

TEST(ForkServer, RequestsRunInTheStateOfTheServersStart) {
  state_at_start = 1;
  ForkServer server(work, "a test fork server");
  state_at_start = 2;  // after the fork: the server's children do not see it
  ChildProcessEnd end = server.run("state");
  EXPECT_EQ(end.exit_status, 0);
  EXPECT_EQ(end.signal, 0);
  EXPECT_FALSE(end.thrown.has_value());
}

TEST(ForkServer, ASignalAndAThrownErrorComeBackAndTheServerGoesOn) {
  ForkServer server(work, "a test fork server");
  ChildProcessEnd crashed = server.run("crash");
  EXPECT_EQ(crashed.signal, SIGFPE);
  ChildProcessEnd thrown = server.run("throw");
  EXPECT_EQ(thrown.signal, 0);
  EXPECT_EQ(thrown.exit_status, 1);
  ASSERT_TRUE(thrown.thrown.has_value());
  EXPECT_EQ(thrown.thrown->kind, "InvalidInputError");
  EXPECT_EQ(thrown.thrown->message, "bad request");
  ChildProcessEnd big = server.run(std::string(8 << 20, 'x'));  // more than a socket buffer holds
  EXPECT_EQ(big.exit_status, 0);
  EXPECT_EQ(big.signal, 0);
}

TEST(ForkServer, RequestsFromTwoThreads) {
  ForkServer server(work, "a test fork server");
  int signals[2] = {0, 0};
  std::thread other([&] { signals[0] = server.run("crash").signal; });
  signals[1] = server.run("crash").signal;
  other.join();
  EXPECT_EQ(signals[0], SIGFPE);
  EXPECT_EQ(signals[1], SIGFPE);
}

TEST(ForkServer, ChildrenOfSeveralRequestsTalkOverTheirChannelsAtOnce) {
  ForkServer server(work, "a test fork server");
  ForkServer::Child first = server.start("echo");
  ForkServer::Child second = server.start("echo");
  std::string answer;
  ASSERT_TRUE(channel_send_string(second.channel(), "b"));
  ASSERT_TRUE(channel_receive_string(second.channel(), answer));
  EXPECT_EQ(answer, "bb");
  ASSERT_TRUE(channel_send_string(first.channel(), "a"));
  ASSERT_TRUE(channel_receive_string(first.channel(), answer));
  EXPECT_EQ(answer, "aa");
  ASSERT_TRUE(channel_send_string(first.channel(), "c"));
  ASSERT_TRUE(channel_receive_string(first.channel(), answer));
  EXPECT_EQ(answer, "cc");
  // Closing the channel ends each child's loop: both end by returning.
  EXPECT_EQ(first.wait().exit_status, 0);
  ChildProcessEnd end = second.wait();
  EXPECT_EQ(end.exit_status, 0);
  EXPECT_EQ(end.signal, 0);
}

TEST(ForkServer, AChildThatDiesEndsItsChannel) {
  ForkServer server(work, "a test fork server");
  ForkServer::Child child = server.start("crash");
  char byte = 0;
  EXPECT_FALSE(channel_receive(child.channel(), &byte, 1));
  EXPECT_EQ(child.wait().signal, SIGFPE);
}

}  // namespace
}  // namespace parity
