// OpenvinoRunner (OpenVINO through the dlopen-ed backend module): option checks, lifecycle, element
// types as OpenVINO returns them, bounded dynamic shapes, marked tensors and the tensor callback,
// and the message when OpenVINO is missing.
//
// OpenVINO is found through PARITY_PYTHON's venv (ctest sets it; by hand use
// PARITY_PYTHON=/work/main/.venv/bin/python); the module through PARITY_OPENVINO_MODULE, which these
// tests set to the build's module when it is not set.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_onnxrt_runner_helpers.h"
#include "test_support.h"
#include "parity/core/error.h"
#include "parity/runtime/openvino/openvino_runner.h"
#include "parity/runtime/ref/ref_runner.h"

namespace parity::runtime {
namespace {

using namespace onnxrt_testing;
using testing_support::message_of_thrown;

class OpenvinoRunnerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ::setenv("PARITY_OPENVINO_MODULE", PARITY_OPENVINO_MODULE_PATH, 0); }
};

// Compiling a model makes OpenVINO's TBB dlopen libtbbbind with RTLD_DEEPBIND, which
// AddressSanitizer refuses outright (google/sanitizers#611): those tests run in the release build.
#if defined(__SANITIZE_ADDRESS__)
#define PARITY_SKIP_WITHOUT_OPENVINO_COMPILE() \
  GTEST_SKIP() << "AddressSanitizer cannot run OpenVINO's TBB (dlopen with RTLD_DEEPBIND); the release build runs this"
#else
#define PARITY_SKIP_WITHOUT_OPENVINO_COMPILE() static_cast<void>(0)
#endif

OpenvinoOptions f32() {
  OpenvinoOptions options;
  options.precision = "f32";
  return options;
}

TensorMetadata shapes(const std::string& name, std::vector<int64_t> dims) {
  TensorMetadata metadata;
  std::vector<Dim> fixed;
  for (int64_t d : dims) fixed.push_back(Dim::fixed(d));
  metadata.add(name, DType::kFloat32, fixed);
  return metadata;
}

// First in this file: once OpenVINO is loaded in a process it stays loaded, so only a first load can fail.
TEST_F(OpenvinoRunnerTest, MissingOpenvinoSaysWhereItLooked) {
  auto empty = std::filesystem::temp_directory_path() / "parity-openvino-empty-dir";
  std::filesystem::create_directories(empty);
  const char* before = std::getenv("PARITY_OPENVINO_LIBRARY_DIR");
  std::string saved = before ? before : "";
  ::setenv("PARITY_OPENVINO_LIBRARY_DIR", empty.c_str(), 1);
  std::string message;
  try {
    load_openvino_backend();
  } catch (const FileError& error) {
    message = error.what();
  }
  if (before) ::setenv("PARITY_OPENVINO_LIBRARY_DIR", saved.c_str(), 1);
  else ::unsetenv("PARITY_OPENVINO_LIBRARY_DIR");
  EXPECT_NE(message.find("PARITY_OPENVINO_LIBRARY_DIR " + empty.string() + " (no libopenvino.so* there)"),
            std::string::npos)
      << message;
}

TEST_F(OpenvinoRunnerTest, OptionsAreCheckedWhenTheRunnerIsMade) {
  OpenvinoOptions precision;
  precision.precision = "f64";
  EXPECT_THROW(OpenvinoRunner(chain_model().loader(), precision), InvalidInputError);
  OpenvinoOptions hint;
  hint.performance_hint = "fastest";
  EXPECT_THROW(OpenvinoRunner(chain_model().loader(), hint), InvalidInputError);
  EXPECT_EQ(openvino_performance_hint("Latency"), "LATENCY");
  OpenvinoOptions inverted = f32();
  inverted.min_shapes = shapes("x", {4, 4});
  inverted.max_shapes = shapes("x", {2, 4});
  EXPECT_NE(message_of_thrown<InvalidInputError>([&] { OpenvinoRunner runner(chain_model().loader(), inverted); })
                .find("dimension 0 has min 4 above max 2"),
            std::string::npos);
  OpenvinoOptions unpaired = f32();
  unpaired.min_shapes = shapes("x", {1, 4});
  EXPECT_THROW(OpenvinoRunner(chain_model().loader(), unpaired), InvalidInputError);
}

TEST_F(OpenvinoRunnerTest, LifecycleAndOutputsMatchTheReference) {
  PARITY_SKIP_WITHOUT_OPENVINO_COMPILE();
  OpenvinoRunner runner(chain_model().loader(), f32());
  EXPECT_EQ(runner.name().rfind("openvino-runner-N", 0), 0u) << runner.name();
  RefRunner ref(chain_model().loader());
  ActiveRunner active_ref(ref);
  for (int round = 0; round < 2; ++round) {
    ActiveRunner active(runner);
    EXPECT_EQ(runner.inference_precision(), "f32");
    TensorMetadata metadata = active->input_metadata();
    ASSERT_EQ(metadata.size(), 1u);
    EXPECT_EQ(metadata[0].first, "x");
    for (int64_t rows : {1, 3}) {
      NamedTensors feed{{"x", float_tensor({rows, 4})}};
      NamedTensors outputs = active->infer(feed);
      NamedTensors expected = active_ref->infer(feed);
      ASSERT_EQ(outputs.size(), 1u);
      EXPECT_EQ(outputs[0].first, "y");
      ASSERT_EQ(outputs[0].second.shape(), (Shape{rows, 4}));
      auto got = outputs[0].second.span<float>();
      auto want = expected[0].second.span<float>();
      for (std::size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << i;
    }
  }
  EXPECT_FALSE(runner.is_active());
}

TEST_F(OpenvinoRunnerTest, ElementTypesComeBackAsTheModelDeclaresThem) {
  PARITY_SKIP_WITHOUT_OPENVINO_COMPILE();
  ModelBuilder model;
  model.input({"x", TensorProto::FLOAT, {int64_t{2}, int64_t{3}}});
  const std::vector<std::pair<int, DType>> types = {
      {TensorProto::BOOL, DType::kBool},         {TensorProto::INT64, DType::kInt64},
      {TensorProto::INT32, DType::kInt32},       {TensorProto::INT8, DType::kInt8},
      {TensorProto::UINT8, DType::kUInt8},       {TensorProto::FLOAT16, DType::kFloat16},
      {TensorProto::BFLOAT16, DType::kBFloat16}, {TensorProto::FLOAT, DType::kFloat32}};
  for (const auto& [onnx_type, dtype] : types) {
    std::string name = "as_" + std::to_string(onnx_type);
    model.output({name, onnx_type, {int64_t{2}, int64_t{3}}});
    auto& node = *model.build()->mutable_graph()->add_node();
    node.set_op_type("Cast");
    node.set_name("cast_" + name);
    node.add_input("x");
    node.add_output(name);
    auto* to = node.add_attribute();
    to->set_name("to");
    to->set_type(::onnx::AttributeProto::INT);
    to->set_i(onnx_type);
  }
  Tensor x = Tensor::zeros(DType::kFloat32, {2, 3});
  const std::vector<float> values = {0.0f, 1.0f, 2.0f, 3.0f, 100.0f, 7.0f};
  std::copy(values.begin(), values.end(), x.mutable_span<float>().begin());
  RefRunner ref(model.loader());
  OpenvinoRunner runner(model.loader(), f32());
  NamedTensors expected = ActiveRunner(ref)->infer({{"x", x}});
  NamedTensors outputs = ActiveRunner(runner)->infer({{"x", x}});
  ASSERT_EQ(outputs.size(), types.size());
  for (std::size_t i = 0; i < types.size(); ++i) {
    SCOPED_TRACE(outputs[i].first);
    EXPECT_EQ(outputs[i].first, expected[i].first);
    EXPECT_EQ(outputs[i].second.dtype(), types[i].second);
    ASSERT_EQ(outputs[i].second.byte_size(), expected[i].second.byte_size());
    EXPECT_EQ(std::memcmp(outputs[i].second.raw(), expected[i].second.raw(), outputs[i].second.byte_size()), 0);
  }
}

TEST_F(OpenvinoRunnerTest, BoundedDynamicShapes) {
  PARITY_SKIP_WITHOUT_OPENVINO_COMPILE();
  OpenvinoOptions options = f32();
  options.min_shapes = shapes("x", {1, 4});
  options.max_shapes = shapes("x", {4, 4});
  OpenvinoRunner runner(chain_model().loader(), options);
  ActiveRunner active(runner);
  TensorMetadata metadata = active->input_metadata();
  const Dim& rows = (*metadata[0].second.shape)[0];
  EXPECT_EQ(rows.min, 1);
  EXPECT_EQ(rows.max, 4);
  for (int64_t n : {1, 4, 2}) EXPECT_EQ(active->infer({{"x", float_tensor({n, 4})}})[0].second.shape()[0], n);
  std::string message = message_of_thrown<InvalidInputError>([&] { active->infer({{"x", float_tensor({5, 4})}}); });
  EXPECT_NE(message.find("input 'x' has shape (5, 4), outside the bounds the model was compiled for: min [1, 4], "
                         "max [4, 4]"),
            std::string::npos)
      << message;
}

TEST_F(OpenvinoRunnerTest, MarkedTensorsAndTheCallbackFollowNodeOrder) {
  PARITY_SKIP_WITHOUT_OPENVINO_COMPILE();
  OpenvinoRunner runner(chain_model().loader(), f32());
  ActiveRunner active(runner);
  runner.set_intermediate_outputs(IntermediateOutputs::list({"m", "r"}));
  NamedTensors outputs = active->infer({{"x", float_tensor({2, 4})}});
  std::vector<std::string> names;
  for (const auto& [name, tensor] : outputs) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"y", "m", "r"}));

  runner.set_intermediate_outputs(IntermediateOutputs::none());
  std::vector<std::string> streamed, producers;
  runner.set_tensor_callback([&](const ProducedTensor& tensor) {
    streamed.push_back(tensor.name);
    producers.push_back(tensor.node_name + ":" + tensor.op_type);
  });
  outputs = active->infer({{"x", float_tensor({2, 4})}});
  EXPECT_EQ(streamed, (std::vector<std::string>{"r", "m", "y"}));
  EXPECT_EQ(producers, (std::vector<std::string>{"relu:Relu", "double:Mul", "minus_w:Sub"}));
  ASSERT_EQ(outputs.size(), 1u);  // streamed: only the graph output is returned
  EXPECT_EQ(outputs[0].first, "y");
}

}  // namespace
}  // namespace parity::runtime
