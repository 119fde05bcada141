// runtime::PythonWorker: one Python process serving several commands, tensors of every numpy dtype
// round-tripped through its shared memory, a command's error as one line, and a worker that exits,
// is killed or does not answer in time reported by name, never a hang. Runs the Python that ctest
// names in $PARITY_PYTHON (the venv's, with numpy).
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "parity/core/process.h"
#include "parity/core/tensor.h"
#include "parity/runtime/python_worker.h"

namespace parity::runtime {
namespace {

// "echo": the arguments back with the worker's process id; "round_trip": each tensor back as
// "<name>_back" (values unchanged) and a large one, with what numpy saw of each; "fail" raises;
// "exit" and "kill" end the process; "sleep" sleeps.
constexpr const char* kCommands = R"PY(
@command("echo")
def echo(arguments, tensors):
    return {"arguments": arguments, "pid": os.getpid()}

@command("round_trip")
def round_trip(arguments, tensors):
    import numpy as np
    seen = {name: [array.dtype.str, list(array.shape)] for name, array in tensors.items()}
    back = {name + "_back": array.copy() for name, array in tensors.items()}
    back["large"] = np.arange(arguments["large"], dtype=np.int64)
    return Reply(seen, back)

@command("fail")
def fail(arguments, tensors):
    raise ValueError("the value " + arguments["value"] + " is not accepted")

@command("exit")
def exit_(arguments, tensors):
    sys.stderr.write("leaving as asked\n")
    sys.stderr.flush()
    os._exit(7)

@command("kill")
def kill(arguments, tensors):
    import signal
    os.kill(os.getpid(), signal.SIGKILL)

@command("sleep")
def sleep(arguments, tensors):
    import time
    time.sleep(60)

_preparations = []

def prepare_affine(arguments, tensors):
    _preparations.append({name: list(array.shape) for name, array in tensors.items()})
    x = tensors["x"]
    def run():
        if x.size and x.flat[0] == -1:
            raise ValueError("a first value of -1 is refused")
        if x.size and x.flat[0] == -9:
            os.kill(os.getpid(), 9)
        if x.size and x.flat[0] == -5:
            return {"a": "result"}
        count = int(x.flat[0]) if x.size and x.flat[0] > 0 and arguments["prefix"] else x.size
        return Reply(None, {"y": x.flatten()[:count] * arguments["scale"] + 1})
    return run

@command("affine", bind=prepare_affine)
def affine(arguments, tensors):
    return prepare_affine(arguments, tensors)()

@command("preparations")
def preparations(arguments, tensors):
    return _preparations
)PY";

PythonWorkerOptions options() {
  const char* configured = std::getenv("PARITY_PYTHON");
  return {"a test worker", configured && *configured ? configured : "python3", kCommands, std::nullopt};
}

template <typename T>
Tensor make(DType dtype, Shape shape, std::initializer_list<T> values) {
  return Tensor::from_bytes(dtype, std::move(shape), std::data(values), values.size() * sizeof(T));
}

TEST(PythonWorker, OneProcessServesEveryCommandInOrder) {
  PythonWorker worker(options());
  PythonReply first = worker.call("echo", {{"text", "a\nb"}});
  PythonReply second = worker.call("echo", {{"number", 3}});
  EXPECT_EQ(first.result["arguments"]["text"], "a\nb");
  EXPECT_EQ(second.result["arguments"]["number"], 3);
  EXPECT_EQ(first.result["pid"], second.result["pid"]);  // the same process
  EXPECT_TRUE(worker.alive());
}

TEST(PythonWorker, TensorsOfEveryNumpyDtypeRoundTripThroughSharedMemory) {
  PythonWorker worker(options());
  NamedTensors tensors;
  tensors.emplace_back("f32", make<float>(DType::kFloat32, {2, 3}, {1.5f, -2, 3, 4, 5, 6}));
  tensors.emplace_back("f64", make<double>(DType::kFloat64, {2}, {1e300, -0.25}));
  tensors.emplace_back("f16", make<uint16_t>(DType::kFloat16, {3}, {0x3c00, 0xc000, 0x7c00}));
  tensors.emplace_back("i8", make<int8_t>(DType::kInt8, {4}, {-128, -1, 0, 127}));
  tensors.emplace_back("u8", make<uint8_t>(DType::kUInt8, {1, 3}, {0, 128, 255}));
  tensors.emplace_back("i32", make<int32_t>(DType::kInt32, {2, 1}, {-7, 1 << 30}));
  tensors.emplace_back("i64", make<int64_t>(DType::kInt64, {}, {int64_t{1} << 40}));  // a scalar
  tensors.emplace_back("u16", make<uint16_t>(DType::kUInt16, {2}, {1, 65535}));
  tensors.emplace_back("b", make<uint8_t>(DType::kBool, {3}, {1, 0, 1}));
  tensors.emplace_back("c64", make<float>(DType::kComplex64, {1}, {1.0f, -1.0f}));
  tensors.emplace_back("empty", Tensor::zeros(DType::kFloat32, {0, 4}));
  for (int round = 0; round < 2; ++round) {  // the second maps the region the first grew
    PythonReply reply = worker.call("round_trip", {{"large", 1 << 20}}, tensors);
    ASSERT_EQ(reply.tensors.size(), tensors.size() + 1);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const auto& [name, tensor] = tensors[i];
      EXPECT_EQ(reply.tensors[i].first, name + "_back");
      EXPECT_TRUE(identical(reply.tensors[i].second, tensor)) << name;
      EXPECT_EQ(reply.result[name][0], dtype_info(tensor.dtype()).numpy_descr) << name;
      EXPECT_EQ(reply.result[name][1].get<Shape>(), tensor.shape()) << name;
    }
    const Tensor& large = reply.tensors.back().second;
    EXPECT_EQ(large.dtype(), DType::kInt64);
    ASSERT_EQ(large.size(), 1 << 20);
    EXPECT_EQ(large.data<int64_t>()[12345], 12345);
  }
}

TEST(PythonWorker, ACommandsErrorIsOneLineAndTheWorkerGoesOn) {
  PythonWorker worker(options());
  try {
    worker.call("fail", {{"value", "x"}});
    FAIL() << "no error";
  } catch (const PythonCommandError& error) {
    EXPECT_EQ(std::string(error.what()), "a test worker: fail: ValueError: the value x is not accepted");
    EXPECT_NE(error.traceback().find("Traceback (most recent call last)"), std::string::npos) << error.traceback();
  }
  EXPECT_THROW(worker.call("no_such_command"), PythonCommandError);
  EXPECT_TRUE(worker.alive());
  EXPECT_EQ(worker.call("echo", {{"after", true}}).result["arguments"]["after"], true);
}

TEST(PythonWorker, AWorkerThatExitsIsExplainedAndStaysEnded) {
  PythonWorker worker(options());
  try {
    worker.call("exit");
    FAIL() << "no error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("the Python worker for a test worker ended before it answered (exit status 7)"),
              std::string::npos) << message;
    EXPECT_NE(message.find("leaving as asked"), std::string::npos) << message;
  }
  EXPECT_FALSE(worker.alive());
  try {
    worker.call("echo");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("has already ended"), std::string::npos) << error.what();
  }
}

TEST(PythonWorker, AKilledWorkerIsAClearError) {
  PythonWorker worker(options());
  try {
    worker.call("kill");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("ended before it answered (signal 9 (SIGKILL), perhaps killed for lack "
                                             "of memory)"),
              std::string::npos) << error.what();
  }
}

TEST(PythonWorker, AWorkerThatDoesNotAnswerInTimeIsStopped) {
  PythonWorkerOptions timed = options();
  timed.call_timeout = std::chrono::milliseconds(500);
  PythonWorker worker(timed);
  worker.call("echo");  // started and serving
  try {
    worker.call("sleep");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("did not answer 'sleep' within 500 ms and was stopped"),
              std::string::npos) << error.what();
  }
  EXPECT_FALSE(worker.alive());
}

TEST(PythonWorker, AMissingInterpreterIsReportedAtStart) {
  PythonWorkerOptions missing = options();
  missing.interpreter = "/nonexistent/python3";
  EXPECT_THROW(PythonWorker worker(missing), ProcessStartError);
}

TEST(PythonWorker, TypesNumpyLacksAreRefused) {
  PythonWorker worker(options());
  NamedTensors tensors;
  tensors.emplace_back("bf16", Tensor::zeros(DType::kBFloat16, {2}));
  EXPECT_THROW(worker.call("round_trip", {{"large", 1}}, tensors), UnsupportedError);
  EXPECT_TRUE(worker.alive());
}

std::vector<float> values(const Tensor& tensor) {
  const auto* data = static_cast<const float*>(tensor.raw());
  return std::vector<float>(data, data + tensor.size());
}

// x * 2 + 1 (or its first x[0] elements with "prefix") through a bound call: its values each time, the
// command prepared again only when the feed's shape changes, outputs whose shape changes while the feed's
// stays, a result, an error and a killed worker on the short exchange.
TEST(PythonWorker, ABoundCallFollowsItsTensorsLayouts) {
  PythonWorker worker(options());
  const auto binding = worker.bind("affine", {{"scale", 2}, {"prefix", false}});
  const auto feed = [](Shape shape, std::vector<float> data) {
    return NamedTensors{{"x", Tensor::from_bytes(DType::kFloat32, std::move(shape), data.data(),
                                                 data.size() * sizeof(float))}};
  };
  const std::vector<std::pair<Shape, std::vector<float>>> calls = {
      {{2, 2}, {1, 2, 3, 4}}, {{2, 2}, {5, 6, 7, 8}}, {{3}, {9, 10, 11}}, {{3}, {0, 1, 2}}, {{2, 2}, {4, 3, 2, 1}}};
  for (const auto& [shape, data] : calls) {
    const PythonReply reply = worker.call_bound(binding, feed(shape, data));
    EXPECT_TRUE(reply.result.is_null());
    ASSERT_EQ(reply.tensors.size(), 1u);
    EXPECT_EQ(reply.tensors[0].first, "y");
    std::vector<float> expected;
    for (float value : data) expected.push_back(value * 2 + 1);
    EXPECT_EQ(values(reply.tensors[0].second), expected);
  }
  // Prepared at each change of the feed's shape only.
  EXPECT_EQ(worker.call("preparations").result, nlohmann::json::parse(R"([{"x": [2, 2]}, {"x": [3]}, {"x": [2, 2]}])"));

  const auto prefix = worker.bind("affine", {{"scale", 3}, {"prefix", true}});
  for (float count : {2.0f, 4.0f, 4.0f, 1.0f}) {
    const PythonReply reply = worker.call_bound(prefix, feed({4}, {count, 5, 6, 7}));
    const std::vector<float> all = {count * 3 + 1, 16, 19, 22};
    EXPECT_EQ(values(reply.tensors.at(0).second), std::vector<float>(all.begin(), all.begin() + int(count)));
  }
  EXPECT_EQ(worker.call_bound(prefix, feed({4}, {-5, 0, 0, 0})).result, nlohmann::json::parse(R"({"a": "result"})"));
  EXPECT_EQ(values(worker.call_bound(prefix, feed({4}, {2, 0, 0, 0})).tensors.at(0).second),
            (std::vector<float>{7, 1}));
  EXPECT_THROW(worker.call_bound(prefix, feed({4}, {-1, 0, 0, 0})), PythonCommandError);
  EXPECT_EQ(values(worker.call_bound(prefix, feed({4}, {1, 0, 0, 0})).tensors.at(0).second), (std::vector<float>{4}));
  try {
    worker.call_bound(prefix, feed({4}, {-9, 0, 0, 0}));
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("ended before it answered (signal 9 (SIGKILL)"), std::string::npos)
        << error.what();
  }
  EXPECT_FALSE(worker.alive());
}

}  // namespace
}  // namespace parity::runtime
