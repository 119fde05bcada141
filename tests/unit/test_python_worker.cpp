// onnxrt::PythonWorker: one Python process answering several requests, and what it says when the
// process ends early. Runs the Python that ctest names in $PARITY_PYTHON (the venv's).
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "../../src/runtime/backends/onnxrt/python_worker.h"

namespace parity::runtime::onnxrt {
namespace {

// Echoes each request's two fields joined, with the worker's process id, so two answers from one
// process show the same id; a request "exit" ends the process with a message on standard error.
constexpr const char* kEchoScript = R"PY(
import os, sys
requests, answers = sys.stdin.buffer, sys.stdout.buffer
def read():
    header = requests.readline()
    return requests.read(int(header)).decode() if header else None
while True:
    first, second = read(), read()
    if first is None or second is None:
        break
    if first == "exit":
        sys.stderr.write("leaving as asked\n")
        sys.exit(7)
    data = f"{first}+{second}@{os.getpid()}".encode()
    answers.write(b"%d\n" % len(data) + data)
    answers.flush()
)PY";

std::string python() {
  const char* configured = std::getenv("PARITY_PYTHON");
  return configured && *configured ? configured : "python3";
}

TEST(PythonWorker, OneProcessAnswersEveryRequestInOrder) {
  std::string outcome;
  auto worker = PythonWorker::start(python(), kEchoScript, outcome);
  ASSERT_TRUE(worker) << outcome;
  auto first = worker->call({"a", "b\nwith a newline"}, outcome);
  ASSERT_TRUE(first) << outcome;
  auto second = worker->call({"", "c"}, outcome);
  ASSERT_TRUE(second) << outcome;
  const std::string pid = first->substr(first->find('@'));
  EXPECT_EQ(*first, "a+b\nwith a newline" + pid);
  EXPECT_EQ(*second, "+c" + pid);  // the same process
  EXPECT_TRUE(worker->alive());
}

TEST(PythonWorker, AProcessThatEndsEarlyIsExplainedAndStaysEnded) {
  std::string outcome;
  auto worker = PythonWorker::start(python(), kEchoScript, outcome);
  ASSERT_TRUE(worker) << outcome;
  EXPECT_FALSE(worker->call({"exit", ""}, outcome));
  EXPECT_NE(outcome.find("ended before it answered (exit status 7)"), std::string::npos) << outcome;
  EXPECT_NE(outcome.find("leaving as asked"), std::string::npos) << outcome;
  EXPECT_FALSE(worker->alive());
  EXPECT_FALSE(worker->call({"a", "b"}, outcome));
  EXPECT_EQ(outcome, "the Python worker has already ended");
}

TEST(PythonWorker, AMissingInterpreterIsReportedAtStart) {
  std::string outcome;
  auto worker = PythonWorker::start("/nonexistent/python3", kEchoScript, outcome);
  // posix_spawn reports a missing program either at once or as the child's exit status 127.
  if (worker) {
    EXPECT_FALSE(worker->call({"a", "b"}, outcome));
    EXPECT_NE(outcome.find("exit status 127"), std::string::npos) << outcome;
  } else {
    EXPECT_NE(outcome.find("could not start that Python"), std::string::npos) << outcome;
  }
}

}  // namespace
}  // namespace parity::runtime::onnxrt
