// OnnxrtRunner (ONNX Runtime through its C API, dlopen-ed at activation): lifecycle, input
// validation identical in form to the reference runner's, every element type ONNX Runtime
// supports, dynamic shapes, errors with ONNX Runtime's own text, and session options.
//
// The library is found through PARITY_PYTHON's onnxruntime package (ctest sets it; by hand use
// PARITY_PYTHON=/work/main/.venv/bin/python).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_onnxrt_runner_helpers.h"
#include "parity/core/error.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"
#include "parity/runtime/ref/ref_runner.h"

namespace parity::runtime {
namespace {

using namespace onnxrt_testing;

// --- lifecycle ----------------------------------------------------------------------------------

TEST(OnnxrtRunner, Lifecycle) {
  OnnxrtRunner runner(chain_model().loader(), {});
  EXPECT_EQ(runner.name().rfind("onnxrt-runner-N", 0), 0u) << runner.name();
  EXPECT_THROW(runner.infer({}), InvalidInputError);
  EXPECT_THROW(runner.input_metadata(), InvalidInputError);
  for (int round = 0; round < 2; ++round) {
    ActiveRunner active(runner);
    EXPECT_TRUE(runner.is_active());
    TensorMetadata metadata = active->input_metadata();
    ASSERT_EQ(metadata.size(), 1u);
    EXPECT_EQ(metadata[0].first, "x");
    EXPECT_EQ(metadata[0].second.to_string(), "[dtype=float32, shape=('N', 4)]");
    NamedTensors outputs = active->infer({{"x", float_tensor({3, 4})}});
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_EQ(outputs[0].first, "y");
    EXPECT_EQ(outputs[0].second.shape(), (Shape{3, 4}));
    const float w[4] = {0.5f, -1.0f, 1.5f, 3.0f};
    Tensor x = float_tensor({3, 4});
    for (int i = 0; i < 12; ++i)
      EXPECT_FLOAT_EQ(outputs[0].second.data<float>()[i],
                      std::max(0.0f, x.data<float>()[i]) * 2 - w[i % 4]);
    EXPECT_GT(runner.last_inference_time(), 0.0);
    EXPECT_EQ(runner.last_run_count(), 1u);
  }
  EXPECT_FALSE(runner.is_active());
}

TEST(OnnxrtRunner, OutputsOutliveTheRunner) {
  NamedTensors outputs;
  {
    OnnxrtRunner runner(chain_model().loader(), {});
    ActiveRunner active(runner);
    outputs = active->infer({{"x", float_tensor({2, 4})}});
  }
  // Zero-copy outputs keep their ONNX Runtime buffers alive on their own.
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_FLOAT_EQ(outputs[0].second.data<float>()[0], 0.25f * 2 - 0.5f);
}

TEST(OnnxrtRunner, AnOutputThatIsAnInputDoesNotPointIntoTheFeed) {
  ModelBuilder b;
  b.input({"x", TensorProto::FLOAT, {int64_t{4}}})
      .output({"x", TensorProto::FLOAT, {int64_t{4}}})
      .output({"y", TensorProto::FLOAT, {int64_t{4}}})
      .node("Neg", {"x"}, {"y"});
  OnnxrtRunner runner(b.loader(), {});
  ActiveRunner active(runner);
  NamedTensors outputs;
  {
    Tensor x = float_tensor({4});
    outputs = active->infer({{"x", x}});
    ASSERT_EQ(outputs.size(), 2u);
    EXPECT_NE(outputs[0].second.raw(), x.raw()) << "the output must own its bytes";
    x.mutable_data<float>()[0] = 100.0f;  // the caller reuses its buffer
  }
  EXPECT_FLOAT_EQ(outputs[0].second.data<float>()[0], 0.25f);
  EXPECT_FLOAT_EQ(outputs[1].second.data<float>()[0], -0.25f);
}

TEST(OnnxrtRunner, DynamicShapes) {
  OnnxrtRunner runner(chain_model().loader(), {});
  ActiveRunner active(runner);
  for (int64_t n : {1, 5, 2, 0}) {
    NamedTensors outputs = active->infer({{"x", float_tensor({n, 4})}});
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_EQ(outputs[0].second.shape(), (Shape{n, 4}));
  }
}

TEST(OnnxrtRunner, SessionFromModelIsLazy) {
  int calls = 0;
  auto model = chain_model().build();
  SessionLoader loader = SessionFromModel(
      [&] {
        ++calls;
        return model;
      },
      {});
  EXPECT_EQ(calls, 0);
  OnnxrtRunner runner(loader);
  EXPECT_EQ(calls, 0);
  ActiveRunner active(runner);
  EXPECT_EQ(calls, 1);
  auto session = session_from_model(model);
  EXPECT_EQ(session->providers(), std::vector<std::string>{"CPUExecutionProvider"});
  EXPECT_EQ(session->output_metadata()[0].first, "y");
  EXPECT_EQ(session->run({{"x", float_tensor({1, 4})}}).size(), 1u);
}

// --- input validation: the same messages as the reference runner ---------------------------------

TEST(OnnxrtRunner, InputValidationMessagesMatchTheReferenceRunner) {
  ModelBuilder b;
  b.input({"input_ids", TensorProto::FLOAT, {int64_t{2}, std::string("T"), int64_t{3}}})
      .input({"mask", TensorProto::INT64, {int64_t{2}}})
      .output({"y", TensorProto::FLOAT, {int64_t{2}, std::string("T"), int64_t{3}}})
      .node("Identity", {"input_ids"}, {"y"})
      .output({"m", TensorProto::INT64, {int64_t{2}}})
      .node("Identity", {"mask"}, {"m"});
  Tensor good_ids = float_tensor({2, 5, 3});
  Tensor good_mask = Tensor::zeros(DType::kInt64, {2});
  std::vector<std::pair<std::string, NamedTensors>> bad_feeds = {
      {"unknown name", {{"input_id", good_ids}, {"mask", good_mask}}},
      {"wrong dtype", {{"input_ids", good_ids}, {"mask", Tensor::zeros(DType::kInt32, {2})}}},
      {"wrong rank", {{"input_ids", float_tensor({2, 5})}, {"mask", good_mask}}},
      {"wrong static dim", {{"input_ids", float_tensor({2, 5, 4})}, {"mask", good_mask}}},
      {"missing input", {{"input_ids", good_ids}}},
  };
  OnnxrtRunner ort_runner(b.loader(), {});
  RefRunner ref_runner(b.loader());
  ActiveRunner ort_active(ort_runner), ref_active(ref_runner);
  EXPECT_EQ(ort_active->input_metadata().to_string(), ref_active->input_metadata().to_string());
  for (const auto& [what, feed] : bad_feeds) {
    std::string ort_message, ref_message;
    try {
      ort_active->infer(feed);
    } catch (const InvalidInputError& error) {
      ort_message = without_runner_name(error.what(), ort_runner.name());
    }
    try {
      ref_active->infer(feed);
    } catch (const InvalidInputError& error) {
      ref_message = without_runner_name(error.what(), ref_runner.name());
    }
    EXPECT_FALSE(ort_message.empty()) << what;
    EXPECT_EQ(ort_message, ref_message) << what;
  }
  EXPECT_EQ(ort_active->infer({{"input_ids", good_ids}, {"mask", good_mask}}).size(), 2u);
}

// --- element types ------------------------------------------------------------------------------

TEST(OnnxrtRunner, EveryElementTypeThroughIdentity) {
  // Every type ONNX Runtime's CPU Identity (opset 21) takes; bytes must come back unchanged.
  const DType types[] = {DType::kFloat32,    DType::kUInt8,         DType::kInt8,
                         DType::kUInt16,     DType::kInt16,         DType::kInt32,
                         DType::kInt64,      DType::kBool,          DType::kFloat16,
                         DType::kFloat64,    DType::kUInt32,        DType::kUInt64,
                         DType::kBFloat16,   DType::kFloat8E4M3FN,  DType::kFloat8E4M3FNUZ,
                         DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ};
  unsigned seed = 1;
  for (DType dtype : types) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    ModelBuilder b(21, 10);
    int elem = static_cast<int>(dtype);
    b.input({"x", elem, {std::string("N"), int64_t{3}}})
        .output({"y", elem, {std::string("N"), int64_t{3}}});
    b.node("Identity", {"x"}, {"y"});
    OnnxrtRunner runner(b.loader(), {});
    ActiveRunner active(runner);
    Tensor x = random_tensor(dtype, {2, 3}, seed++);
    NamedTensors outputs = active->infer({{"x", x}});
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_TRUE(identical(outputs[0].second, x));
  }
}

TEST(OnnxrtRunner, PackedFourBitTypesThroughQuantizeDequantize) {
  for (DType dtype : {DType::kInt4, DType::kUInt4}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    int elem = static_cast<int>(dtype);
    ModelBuilder b(21, 10);
    b.input({"x", elem, {int64_t{5}}})
        .output({"y", elem, {int64_t{5}}})
        .output({"f", TensorProto::FLOAT, {int64_t{5}}});
    b.float_initializer("scale", {}, {1.0f}).scalar_initializer("zero", elem, std::string(1, '\0'));
    b.node("DequantizeLinear", {"x", "scale"}, {"f"})
        .node("QuantizeLinear", {"f", "scale", "zero"}, {"y"});
    OnnxrtRunner runner(b.loader(), {});
    ActiveRunner active(runner);
    // Five 4-bit values packed low nibble first: 1, -2 (14), 7, -8 (8), 3  /  1, 14, 7, 8, 3.
    const unsigned char packed[3] = {0xE1, 0x87, 0x03};
    Tensor x = Tensor::from_bytes(dtype, {5}, packed, 3);
    NamedTensors outputs = active->infer({{"x", x}});
    ASSERT_EQ(outputs.size(), 2u);
    EXPECT_EQ(outputs[0].first, "y");
    // Including the unused high nibble of the last byte, which Parity clears (ONNX Runtime leaves
    // whatever was in memory there).
    for (int repeat = 0; repeat < 20; ++repeat) {
      outputs = active->infer({{"x", x}});
      EXPECT_TRUE(identical(outputs[0].second, x)) << "run " << repeat;
    }
    std::vector<float> expected = dtype == DType::kInt4 ? std::vector<float>{1, -2, 7, -8, 3}
                                                        : std::vector<float>{1, 14, 7, 8, 3};
    for (int i = 0; i < 5; ++i)
      EXPECT_EQ(outputs[1].second.data<float>()[i], expected[static_cast<std::size_t>(i)]);
  }
}

TEST(OnnxrtRunner, StringsIncludingEmbeddedNulAndEmpty) {
  ModelBuilder b(21, 10);
  b.input({"s", TensorProto::STRING, {int64_t{4}}})
      .output({"t", TensorProto::STRING, {int64_t{4}}});
  b.node("Identity", {"s"}, {"t"});
  OnnxrtRunner runner(b.loader(), {});
  ActiveRunner active(runner);
  Tensor s = Tensor::zeros(DType::kString, {4});
  auto* strings = s.mutable_data<std::string>();
  strings[0] = "hello";
  strings[1] = "";
  strings[2] = std::string("a\0b", 3);
  strings[3] = "\xc3\xa9t\xc3\xa9";
  NamedTensors outputs = active->infer({{"s", s}});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_TRUE(identical(outputs[0].second, s));
}

TEST(OnnxrtRunner, TypesOnnxRuntimeLacksReportItsOwnError) {
  ModelBuilder b(21, 10);
  b.input({"x", TensorProto::COMPLEX64, {int64_t{2}}})
      .output({"y", TensorProto::COMPLEX64, {int64_t{2}}});
  b.node("Identity", {"x"}, {"y"});
  OnnxrtRunner runner(b.loader(), {});
  try {
    runner.activate();
    FAIL() << "expected an error";
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("ONNX Runtime error while creating the session"), std::string::npos)
        << message;
    EXPECT_NE(message.find("complex64"), std::string::npos) << message;
  }
}

// --- errors from ONNX Runtime -------------------------------------------------------------------

TEST(OnnxrtRunner, UnsupportedOpIsUnsupportedErrorWithContext) {
  // ONNX Runtime's CPU Identity (opset 21) has no int4 kernel: NOT_IMPLEMENTED.
  ModelBuilder b(21, 10);
  b.input({"x", TensorProto::INT4, {int64_t{2}}}).output({"y", TensorProto::INT4, {int64_t{2}}});
  b.node("Identity", {"x"}, {"y"}, "the_identity");
  OnnxrtRunner runner(b.loader(), {});
  try {
    runner.activate();
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& error) {
    std::string message = error.what();
    EXPECT_EQ(message.rfind(
                  runner.name() +
                      ": <model>: ONNX Runtime error while creating the session: [NOT_IMPLEMENTED]",
                  0),
              0u)
        << message;
    EXPECT_NE(
        message.find(
            "Could not find an implementation for Identity(21) node with name 'the_identity'"),
        std::string::npos)
        << message;
  }
}

TEST(OnnxrtRunner, InvalidModelIsInvalidInputErrorWithContext) {
  ModelBuilder b;
  b.input({"x", TensorProto::FLOAT, {int64_t{2}}}).output({"y", TensorProto::FLOAT, {int64_t{2}}});
  b.node("Add", {"x"}, {"y"}, "half_an_add");  // Add needs two inputs
  OnnxrtRunner runner(b.loader(), {});
  try {
    runner.activate();
    FAIL() << "expected InvalidInputError";
  } catch (const InvalidInputError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("[INVALID_GRAPH]"), std::string::npos) << message;
    EXPECT_NE(message.find("half_an_add"), std::string::npos) << message;
  }
}

TEST(OnnxrtRunner, ErrorsDuringRunCarryOnnxRuntimeText) {
  // Reshape to a shape of the wrong size fails inside ONNX Runtime's kernel at run time.
  ModelBuilder b;
  b.input({"x", TensorProto::FLOAT, {std::string("N")}})
      .output({"y", TensorProto::FLOAT, {int64_t{3}}});
  auto* shape = b.build().proto->mutable_graph()->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(TensorProto::INT64);
  shape->add_dims(1);
  shape->add_int64_data(3);
  b.node("Reshape", {"x", "shape"}, {"y"}, "reshape_to_3");
  OnnxrtRunner runner(b.loader(), {});
  ActiveRunner active(runner);
  EXPECT_EQ(active->infer({{"x", float_tensor({3})}})[0].second.shape(), (Shape{3}));
  try {
    active->infer({{"x", float_tensor({4})}});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_EQ(
        message.rfind(runner.name() + ": <model>: ONNX Runtime error while running the model", 0),
        0u)
        << message;
    EXPECT_NE(message.find("reshape_to_3"), std::string::npos) << message;
  }
}

// --- session options ----------------------------------------------------------------------------

TEST(OnnxrtRunner, ProvidersMatchLikePolygraphy) {
  OnnxrtOptions options;
  options.providers = {"cpu"};
  EXPECT_EQ(session_from_model(chain_model().build(), options)->providers(),
            std::vector<std::string>{"CPUExecutionProvider"});
  options.providers = {"CPUExecutionProvider"};
  EXPECT_EQ(session_from_model(chain_model().build(), options)->providers(),
            std::vector<std::string>{"CPUExecutionProvider"});
  options.providers = {"tensorrt_but_not_here"};
  try {
    session_from_model(chain_model().build(), options);
    FAIL() << "expected InvalidInputError";
  } catch (const InvalidInputError& error) {
    std::string message = error.what();
    EXPECT_NE(
        message.find("could not find the ONNX Runtime execution provider 'tensorrt_but_not_here'"),
        std::string::npos)
        << message;
    EXPECT_NE(message.find("CPUExecutionProvider"), std::string::npos) << message;
  }
}

TEST(OnnxrtRunner, OptimizationLevelsAndThreads) {
  EXPECT_EQ(ort_optimization_level_from_name("disable"), OrtOptimizationLevel::kDisable);
  EXPECT_EQ(ort_optimization_level_from_name("BASIC"), OrtOptimizationLevel::kBasic);
  EXPECT_EQ(ort_optimization_level_from_name("extended"), OrtOptimizationLevel::kExtended);
  EXPECT_EQ(ort_optimization_level_from_name("all"), OrtOptimizationLevel::kAll);
  EXPECT_THROW(ort_optimization_level_from_name("max"), InvalidInputError);
  EXPECT_EQ(ort_optimization_level_name(OrtOptimizationLevel::kExtended), "extended");
  fs::path model = kSource / "examples" / "models" / "small_cnn.onnx";
  Tensor image = random_tensor(DType::kUInt8, {2 * 3 * 32 * 32 * 4}, 7);  // bytes for floats below
  Tensor x = Tensor::zeros(DType::kFloat32, {2, 3, 32, 32});
  for (int64_t i = 0; i < x.size(); ++i)
    x.mutable_data<float>()[i] = static_cast<float>(image.data<uint8_t>()[i]) / 255.0f;
  NamedTensors reference;
  for (auto level : {OrtOptimizationLevel::kDisable, OrtOptimizationLevel::kBasic,
                     OrtOptimizationLevel::kExtended, OrtOptimizationLevel::kAll}) {
    OnnxrtOptions options;
    options.optimization_level = level;
    options.intra_op_threads = 1;
    OnnxrtRunner runner(ModelFromPath(model.string()), options);
    ActiveRunner active(runner);
    NamedTensors outputs = active->infer({{"image", x}});
    ASSERT_EQ(outputs.size(), 1u);
    if (reference.empty()) reference = outputs;
    for (int64_t i = 0; i < outputs[0].second.size(); ++i)
      EXPECT_NEAR(outputs[0].second.data<float>()[i], reference[0].second.data<float>()[i], 1e-5);
  }
  OnnxrtOptions bad;
  bad.intra_op_threads = -1;
  EXPECT_THROW(session_from_model(chain_model().build(), bad), InvalidInputError);
}

TEST(OnnxrtRunner, ProfilingWritesAFileAtDeactivation) {
  fs::path folder =
      fs::temp_directory_path() / ("parity-ort-profile-" + std::to_string(std::random_device{}()));
  fs::create_directories(folder);
  OnnxrtOptions options;
  options.profile_prefix = (folder / "trace").string();
  OnnxrtRunner runner(chain_model().loader(), options);
  {
    ActiveRunner active(runner);
    active->infer({{"x", float_tensor({2, 4})}});
    EXPECT_TRUE(runner.profile_path().empty());
  }
  ASSERT_FALSE(runner.profile_path().empty());
  EXPECT_TRUE(fs::exists(runner.profile_path())) << runner.profile_path();
  EXPECT_NE(runner.profile_path().find("trace"), std::string::npos);
  fs::remove_all(folder);
}

}  // namespace
}  // namespace parity::runtime
