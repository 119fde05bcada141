// OnnxrtRunner (ONNX Runtime through its C API, dlopen-ed at activation): lifecycle, input
// validation identical in form to the reference runner's, the library search and its message when
// nothing is found, every element type ONNX Runtime supports, dynamic shapes, errors with ONNX
// Runtime's own text, and intermediate tensors (list, mark all, streamed, batched under a budget).
//
// The library is found through PARITY_PYTHON's onnxruntime package (ctest sets it; by hand use
// PARITY_PYTHON=/work/main/.venv/bin/python).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <variant>

#include <gtest/gtest.h>

#include "parity/core/error.h"
#include "parity/runtime/onnxrt_runner.h"
#include "parity/runtime/ref_runner.h"

namespace parity::runtime {
namespace {

namespace fs = std::filesystem;
using ::onnx::ModelProto;
using ::onnx::TensorProto;

const fs::path kSource = PARITY_SOURCE_DIR;

// --- building small models ---------------------------------------------------------------------

struct Io {
  std::string name;
  int elem_type;
  std::vector<std::variant<int64_t, std::string>> dims;  // a string is a symbolic dim
};

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17, int64_t ir = 8) {
    model_ = std::make_shared<ModelProto>();
    model_->set_ir_version(ir);
    model_->add_opset_import()->set_version(opset);
    model_->mutable_graph()->set_name("test");
  }
  ModelBuilder& input(const Io& io) {
    fill(model_->mutable_graph()->add_input(), io);
    return *this;
  }
  ModelBuilder& output(const Io& io) {
    fill(model_->mutable_graph()->add_output(), io);
    return *this;
  }
  ModelBuilder& node(const std::string& op, std::vector<std::string> inputs,
                     std::vector<std::string> outputs, const std::string& name = "") {
    auto* n = model_->mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(model_->graph().node_size()) : name);
    for (auto& i : inputs) n->add_input(i);
    for (auto& o : outputs) n->add_output(o);
    return *this;
  }
  ModelBuilder& float_initializer(const std::string& name, std::vector<int64_t> dims,
                                  std::vector<float> values) {
    auto* t = model_->mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(TensorProto::FLOAT);
    for (auto d : dims) t->add_dims(d);
    for (auto v : values) t->add_float_data(v);
    return *this;
  }
  ModelBuilder& scalar_initializer(const std::string& name, int elem_type, const std::string& raw) {
    auto* t = model_->mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(elem_type);
    t->set_raw_data(raw);
    return *this;
  }
  onnx::Model build() const { return onnx::Model{model_, {}, {}}; }
  ModelLoader loader() const {
    auto model = build();
    return [model] { return model; };
  }

 private:
  static void fill(::onnx::ValueInfoProto* v, const Io& io) {
    v->set_name(io.name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(io.elem_type);
    auto* shape = t->mutable_shape();
    for (const auto& d : io.dims) {
      if (std::holds_alternative<int64_t>(d))
        shape->add_dim()->set_dim_value(std::get<int64_t>(d));
      else
        shape->add_dim()->set_dim_param(std::get<std::string>(d));
    }
  }
  std::shared_ptr<ModelProto> model_;
};

Tensor float_tensor(Shape shape, float start = 0.25f, float step = 0.5f) {
  Tensor t = Tensor::zeros(DType::kFloat32, std::move(shape));
  float v = start;
  for (auto& x : t.mutable_span<float>()) {
    x = v;
    v = -(v + step);
  }
  return t;
}

Tensor random_tensor(DType dtype, Shape shape, unsigned seed) {
  Tensor t = Tensor::zeros(dtype, std::move(shape));
  std::mt19937 rng(seed);
  auto* bytes = static_cast<unsigned char*>(t.mutable_raw());
  for (std::size_t i = 0; i < t.byte_size(); ++i) bytes[i] = static_cast<unsigned char>(rng());
  if (dtype == DType::kBool)
    for (std::size_t i = 0; i < t.byte_size(); ++i) bytes[i] &= 1;
  return t;
}

// y = ((relu(x) * 2) - w) with x [N, 4] (N dynamic), w a [4] initializer; a chain of named nodes.
ModelBuilder chain_model() {
  ModelBuilder b;
  b.input({"x", TensorProto::FLOAT, {std::string("N"), int64_t{4}}})
      .output({"y", TensorProto::FLOAT, {std::string("N"), int64_t{4}}})
      .float_initializer("two", {}, {2.0f})
      .float_initializer("w", {4}, {0.5f, -1.0f, 1.5f, 3.0f})
      .node("Relu", {"x"}, {"r"}, "relu")
      .node("Mul", {"r", "two"}, {"m"}, "double")
      .node("Sub", {"m", "w"}, {"y"}, "minus_w");
  return b;
}

std::string without_runner_name(const std::string& message, const std::string& runner_name) {
  std::string out = message;
  for (std::size_t at; (at = out.find(runner_name)) != std::string::npos;)
    out.replace(at, runner_name.size(), "<runner>");
  return out;
}

// --- the library --------------------------------------------------------------------------------

TEST(OnnxrtLibrary, FoundThroughThePythonPackage) {
  ASSERT_NE(std::getenv("PARITY_PYTHON"), nullptr)
      << "set PARITY_PYTHON=/work/main/.venv/bin/python";
  OnnxrtLibraryInfo info = load_onnxrt_library();
  EXPECT_NE(info.path.find("onnxruntime/capi/libonnxruntime.so"), std::string::npos) << info.path;
  EXPECT_EQ(info.version.rfind("1.", 0), 0u) << info.version;
  EXPECT_NE(info.found_by.find("onnxruntime Python package"), std::string::npos) << info.found_by;
  EXPECT_GE(info.api_version, 21u);
  EXPECT_NE(std::find(info.available_providers.begin(), info.available_providers.end(),
                      "CPUExecutionProvider"),
            info.available_providers.end());
  // The same library by explicit path (a file, then its folder) is the one already loaded.
  EXPECT_EQ(load_onnxrt_library(info.path).path, info.path);
  EXPECT_EQ(load_onnxrt_library(fs::path(info.path).parent_path().string()).path, info.path);
}

TEST(OnnxrtLibrary, MissingFlagPathGivesOneClearMessage) {
  std::string missing = "/nonexistent/parity-test/libonnxruntime.so.1.30.0";
  try {
    load_onnxrt_library(missing);
    FAIL() << "expected FileError";
  } catch (const FileError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("ONNX Runtime library not found"), std::string::npos) << message;
    EXPECT_NE(message.find("--ort-library " + missing + " (no such file)"), std::string::npos)
        << message;
    EXPECT_NE(message.find("PARITY_ORT_LIBRARY"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
}

TEST(OnnxrtLibrary, MissingEnvironmentPathIsTheOnlyPlaceLooked) {
  ::setenv("PARITY_ORT_LIBRARY", "/nonexistent/ort-folder", 1);
  try {
    load_onnxrt_library();
    ::unsetenv("PARITY_ORT_LIBRARY");
    FAIL() << "expected FileError";
  } catch (const FileError& error) {
    ::unsetenv("PARITY_ORT_LIBRARY");
    std::string message = error.what();
    EXPECT_NE(message.find("PARITY_ORT_LIBRARY /nonexistent/ort-folder (no such file)"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find("Python package of"), std::string::npos)
        << "an explicit choice is the only place looked";
  }
}

TEST(OnnxrtLibrary, NotAnOnnxRuntimeLibrary) {
  // A real shared library without OrtGetApiBase.
  EXPECT_THROW(
      {
        try {
          load_onnxrt_library("/lib/x86_64-linux-gnu/libz.so.1");
        } catch (const FileError& error) {
          EXPECT_NE(std::string(error.what()).find("not an ONNX Runtime library"),
                    std::string::npos)
              << error.what();
          throw;
        }
      },
      FileError);
}

TEST(OnnxrtRunner, MissingLibraryFailsAtActivationNotConstruction) {
  OnnxrtOptions options;
  options.library_path = "/nonexistent/libonnxruntime.so";
  OnnxrtRunner runner(chain_model().loader(), options);  // constructing is cheap and loads nothing
  EXPECT_FALSE(runner.is_active());
  try {
    runner.activate();
    FAIL() << "expected FileError";
  } catch (const FileError& error) {
    std::string message = error.what();
    EXPECT_EQ(message.rfind(runner.name() + ": ", 0), 0u) << "runner context first: " << message;
    EXPECT_NE(message.find("/nonexistent/libonnxruntime.so (no such file)"), std::string::npos)
        << message;
  }
  EXPECT_FALSE(runner.is_active());
  // The reference runner does not care.
  RefRunner ref(chain_model().loader());
  ActiveRunner active(ref);
  EXPECT_EQ(active->infer({{"x", float_tensor({2, 4})}}).size(), 1u);
}

// --- lifecycle ----------------------------------------------------------------------------------

TEST(OnnxrtRunner, Lifecycle) {
  OnnxrtRunner runner(chain_model().loader(), {});
  EXPECT_EQ(runner.name().rfind("onnxrt-runner-N", 0), 0u) << runner.name();
  EXPECT_THROW(runner.infer({}), InternalError);
  EXPECT_THROW(runner.input_metadata(), InternalError);
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

// --- intermediate tensors -----------------------------------------------------------------------

NamedTensors run_with(const ModelLoader& loader, IntermediateOutputs intermediates,
                      OnnxrtOptions options, const NamedTensors& feed, std::size_t* runs = nullptr,
                      NamedTensors* streamed = nullptr,
                      std::vector<std::string>* producers = nullptr) {
  OnnxrtRunner runner(loader, options);
  runner.set_intermediate_outputs(std::move(intermediates));
  if (streamed)
    runner.set_tensor_callback([&](const ProducedTensor& t) {
      streamed->emplace_back(t.name, Tensor::copy_of(t.tensor));
      if (producers) producers->push_back(t.node_name + "/" + t.op_type);
    });
  ActiveRunner active(runner);
  NamedTensors outputs = active->infer(feed);
  if (runs) *runs = runner.last_run_count();
  return outputs;
}

std::vector<std::string> names_of(const NamedTensors& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, _] : tensors) names.push_back(name);
  return names;
}

void expect_identical(const NamedTensors& a, const NamedTensors& b) {
  ASSERT_EQ(names_of(a), names_of(b));
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(identical(a[i].second, b[i].second)) << a[i].first;
}

TEST(OnnxrtRunner, MarkAllListAndStreamingAgreeWithEachOtherAndTheReferenceRunner) {
  ModelLoader loader = chain_model().loader();
  NamedTensors feed{{"x", float_tensor({3, 4})}};

  NamedTensors all = run_with(loader, IntermediateOutputs::all(), {}, feed);
  EXPECT_EQ(names_of(all),
            (std::vector<std::string>{"y", "r", "m"}));  // outputs first, then execution order

  NamedTensors listed = run_with(loader, IntermediateOutputs::list({"m", "x", "y"}), {}, feed);
  EXPECT_EQ(names_of(listed), (std::vector<std::string>{"y", "m", "x"}));
  EXPECT_TRUE(identical(listed[1].second, all[2].second));
  EXPECT_TRUE(identical(listed[2].second, feed[0].second));

  NamedTensors streamed;
  std::vector<std::string> producers;
  NamedTensors plain =
      run_with(loader, IntermediateOutputs::none(), {}, feed, nullptr, &streamed, &producers);
  EXPECT_EQ(names_of(plain), (std::vector<std::string>{"y"}));
  EXPECT_EQ(names_of(streamed), (std::vector<std::string>{"r", "m", "y"}));
  EXPECT_EQ(producers, (std::vector<std::string>{"relu/Relu", "double/Mul", "minus_w/Sub"}));
  for (const auto& [name, tensor] : streamed) {
    auto it = std::find_if(all.begin(), all.end(), [&](const auto& e) { return e.first == name; });
    ASSERT_NE(it, all.end());
    EXPECT_TRUE(identical(tensor, it->second)) << name;
  }

  // The reference runner hands out the same names in the same order, with the same values here.
  RefRunner ref(loader);
  ref.set_intermediate_outputs(IntermediateOutputs::all());
  ActiveRunner active(ref);
  NamedTensors ref_all = active->infer(feed);
  expect_identical(all, ref_all);

  try {
    run_with(loader, IntermediateOutputs::list({"nope"}), {}, feed);
    FAIL() << "expected InvalidInputError";
  } catch (const InvalidInputError& error) {
    EXPECT_NE(std::string(error.what())
                  .find("requested tensor 'nope' is not produced by any node of the graph"),
              std::string::npos)
        << error.what();
  }
}

// small_cnn: Conv, BatchNormalization, Relu, MaxPool, Flatten, Gemm, Softmax with a dynamic batch.
NamedTensors cnn_feed() {
  Tensor x = Tensor::zeros(DType::kFloat32, {2, 3, 32, 32});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (auto& v : x.mutable_span<float>()) v = uniform(rng);
  return {{"image", x}};
}

TEST(OnnxrtRunner, BatchedMarkingUnderASmallBudgetGivesTheSameTensorsAsAllAtOnce) {
  ModelLoader loader = ModelFromPath((kSource / "examples" / "models" / "small_cnn.onnx").string());
  NamedTensors feed = cnn_feed();
  // Bit-identical up to ONNX Runtime's "extended" level. Its "all" level adds layout rewrites
  // (NCHWc) whose choice depends on what produced a tensor; see the next test.
  for (auto level : {OrtOptimizationLevel::kDisable, OrtOptimizationLevel::kBasic,
                     OrtOptimizationLevel::kExtended}) {
    SCOPED_TRACE(std::string(ort_optimization_level_name(level)));
    OnnxrtOptions at_once, batched;
    at_once.optimization_level = batched.optimization_level = level;
    at_once.intermediate_memory_budget = std::size_t{1} << 40;
    batched.intermediate_memory_budget = 40000;  // a few of small_cnn's tensors per piece
    std::size_t runs_at_once = 0, runs_batched = 0;
    NamedTensors all = run_with(loader, IntermediateOutputs::all(), at_once, feed, &runs_at_once);
    NamedTensors pieces =
        run_with(loader, IntermediateOutputs::all(), batched, feed, &runs_batched);
    EXPECT_EQ(runs_at_once, 1u);
    EXPECT_GT(runs_batched, 2u);
    EXPECT_EQ(all.size(), 11u);
    expect_identical(all, pieces);

    // One node per piece, and streaming instead of holding: still the same tensors.
    OnnxrtOptions tiny = batched;
    tiny.intermediate_memory_budget = 1;
    NamedTensors streamed;
    std::size_t runs_tiny = 0;
    NamedTensors outputs =
        run_with(loader, IntermediateOutputs::none(), tiny, feed, &runs_tiny, &streamed);
    EXPECT_EQ(runs_tiny, all.size());  // small_cnn: one output per node
    EXPECT_EQ(names_of(outputs), (std::vector<std::string>{"probabilities"}));
    ASSERT_EQ(streamed.size(), all.size());
    for (const auto& [name, tensor] : streamed) {
      auto it =
          std::find_if(all.begin(), all.end(), [&](const auto& e) { return e.first == name; });
      ASSERT_NE(it, all.end()) << name;
      EXPECT_TRUE(identical(tensor, it->second)) << name;
    }
  }
}

TEST(OnnxrtRunner, PiecesKeepComputedConstantsConstant) {
  // w = ConstantOfShape([4, 4]) (value 0.5) feeds a MatMul: ONNX Runtime folds it into a constant
  // weight (and prepacks it). A piece holding only the MatMul must see it as a constant too, or
  // its MatMul takes another path; and an overridable initializer (IR >= 4, also a graph input)
  // must stay a variable.
  ModelBuilder b(17, 8);
  b.input({"x", TensorProto::FLOAT, {std::string("N"), int64_t{4}}})
      .input({"bias", TensorProto::FLOAT, {int64_t{4}}})
      .output({"y", TensorProto::FLOAT, {std::string("N"), int64_t{4}}});
  auto model = b.build();
  auto* shape = model.proto->mutable_graph()->add_initializer();
  shape->set_name("w_shape");
  shape->set_data_type(TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(4);
  shape->add_int64_data(4);
  auto* bias = model.proto->mutable_graph()->add_initializer();  // overridable: also a graph input
  bias->set_name("bias");
  bias->set_data_type(TensorProto::FLOAT);
  bias->add_dims(4);
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) bias->add_float_data(v);
  b.node("ConstantOfShape", {"w_shape"}, {"w"}, "make_w");
  auto* value = model.proto->mutable_graph()->mutable_node(0)->add_attribute();
  value->set_name("value");
  value->set_type(::onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(TensorProto::FLOAT);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_float_data(0.5f);
  b.node("Relu", {"x"}, {"r"}, "relu")
      .node("MatMul", {"r", "w"}, {"m"}, "matmul")
      .node("Add", {"m", "bias"}, {"y"}, "add");
  ModelLoader loader = b.loader();
  NamedTensors feed{{"x", float_tensor({3, 4})}};
  for (auto level : {OrtOptimizationLevel::kBasic, OrtOptimizationLevel::kExtended}) {
    OnnxrtOptions at_once, batched;
    at_once.optimization_level = batched.optimization_level = level;
    at_once.intermediate_memory_budget = std::size_t{1} << 40;
    batched.intermediate_memory_budget = 1;
    std::size_t runs = 0;
    NamedTensors all = run_with(loader, IntermediateOutputs::all(), at_once, feed);
    NamedTensors pieces = run_with(loader, IntermediateOutputs::all(), batched, feed, &runs);
    EXPECT_EQ(runs, 4u);
    expect_identical(all, pieces);
    EXPECT_FLOAT_EQ(all[0].second.data<float>()[0],
                    (0.25f + 0.25f) * 0.5f + 1.0f);  // x[0] = .25 -.75 .25 -.75
  }
}

TEST(OnnxrtRunner, BatchedMarkingAtTheAllLevelStaysWithinRounding) {
  ModelLoader loader = ModelFromPath((kSource / "examples" / "models" / "small_cnn.onnx").string());
  NamedTensors feed = cnn_feed();
  OnnxrtOptions at_once, batched;
  at_once.intermediate_memory_budget = std::size_t{1} << 40;
  batched.intermediate_memory_budget = 1;
  NamedTensors all = run_with(loader, IntermediateOutputs::all(), at_once, feed);
  NamedTensors pieces = run_with(loader, IntermediateOutputs::all(), batched, feed);
  ASSERT_EQ(names_of(all), names_of(pieces));
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& a = all[i].second;
    const auto& b = pieces[i].second;
    ASSERT_EQ(a.shape(), b.shape()) << all[i].first;
    for (int64_t j = 0; j < a.size(); ++j)
      EXPECT_NEAR(a.data<float>()[j], b.data<float>()[j],
                  1e-5 + 1e-5 * std::abs(a.data<float>()[j]))
          << all[i].first;
  }
}

TEST(OnnxrtRunner, LayerwisePlansAreCachedPerInputShape) {
  ModelLoader loader = ModelFromPath((kSource / "examples" / "models" / "small_cnn.onnx").string());
  OnnxrtOptions options;
  options.intermediate_memory_budget = 40000;
  OnnxrtRunner runner(loader, options);
  runner.set_intermediate_outputs(IntermediateOutputs::all());
  ActiveRunner active(runner);
  NamedTensors first = active->infer(cnn_feed());
  NamedTensors again = active->infer(cnn_feed());
  expect_identical(first, again);
  std::size_t runs_batch_two = runner.last_run_count();
  Tensor one = Tensor::zeros(DType::kFloat32, {1, 3, 32, 32});
  NamedTensors smaller = active->infer({{"image", one}});
  EXPECT_EQ(smaller[0].second.shape(), (Shape{1, 10}));
  EXPECT_LE(runner.last_run_count(), runs_batch_two);  // half the bytes: no more pieces
}

}  // namespace
}  // namespace parity::runtime
