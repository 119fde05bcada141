// Regressions for what the fuzz test (test_fuzz.cpp) found: exceptions that were not Parity's own
// (std::length_error, ONNX's parser errors) escaping a kernel or the interpreter. Each case is
// now an InvalidInputError naming the node. The finding's case is noted above each test.
#include <filesystem>

#include <gtest/gtest.h>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/onnx/tensor_proto.h"
#include "parity/runtime/ref/interpreter.h"

namespace parity::runtime {
namespace {

namespace fs = std::filesystem;
using ::onnx::TensorProto;

// Runs `model` on `feed`; returns the message of the InvalidInputError it must raise (any other
// exception fails the test through GoogleTest's own handler).
std::string invalid_input_message(const onnx::Model& model, const NamedValues& feed) {
  try {
    Interpreter interpreter(model, {});
    interpreter.run(feed);
  } catch (const InvalidInputError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected InvalidInputError";
  return "";
}

void add_float_value(::google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto>* values, const std::string& name,
                     std::vector<int64_t> dims) {
  auto* value = values->Add();
  value->set_name(name);
  auto* type = value->mutable_type()->mutable_tensor_type();
  type->set_elem_type(TensorProto::FLOAT);
  for (int64_t dim : dims) type->mutable_shape()->add_dim()->set_dim_value(dim);
}

// Scan (opset 9+) over `x` [3, 1] with the two states `a`, `b` [1] and a body that returns only
// `a + x_t`: fewer outputs than states.
onnx::Model scan_with_short_body(int64_t num_scan_inputs) {
  onnx::Model model{std::make_shared<::onnx::ModelProto>(), {}, "."};
  model->set_ir_version(8);
  model->add_opset_import()->set_version(17);
  auto* graph = model->mutable_graph();
  graph->set_name("scan");
  add_float_value(graph->mutable_input(), "a", {1});
  add_float_value(graph->mutable_input(), "b", {1});
  add_float_value(graph->mutable_input(), "x", {3, 1});
  add_float_value(graph->mutable_output(), "y", {1});
  auto* scan = graph->add_node();
  scan->set_op_type("Scan");
  scan->set_name("short_scan");
  for (const char* input : {"a", "b", "x"}) scan->add_input(input);
  scan->add_output("y");
  auto* count = scan->add_attribute();
  count->set_name("num_scan_inputs");
  count->set_type(::onnx::AttributeProto::INT);
  count->set_i(num_scan_inputs);
  auto* body_attribute = scan->add_attribute();
  body_attribute->set_name("body");
  body_attribute->set_type(::onnx::AttributeProto::GRAPH);
  auto* body = body_attribute->mutable_g();
  body->set_name("short_body");
  add_float_value(body->mutable_input(), "a_in", {1});
  add_float_value(body->mutable_input(), "b_in", {1});
  add_float_value(body->mutable_input(), "x_t", {1});
  add_float_value(body->mutable_output(), "a_out", {1});
  auto* add = body->add_node();
  add->set_op_type("Add");
  add->add_input("a_in");
  add->add_input("x_t");
  add->add_output("a_out");
  return model;
}

Tensor floats(Shape shape, std::vector<float> values) {
  return Tensor::from_bytes(DType::kFloat32, std::move(shape), values.data(), values.size() * sizeof(float));
}

// Found by PARITY_FUZZ_SEED=2, iteration 19434 (40000 iterations), a Scan inside
// test_linear_attention_linear_expanded with its inputs mutated: the count of scan outputs
// (body outputs minus states) wrapped around below zero and std::vector threw length_error.
TEST(FuzzFindings, ScanBodyWithFewerOutputsThanStatesIsInvalidInput) {
  NamedValues feed = {{"a", ops::Value::of(floats({1}, {0}))},
                      {"b", ops::Value::of(floats({1}, {0}))},
                      {"x", ops::Value::of(floats({3, 1}, {1, 2, 3}))}};
  std::string message = invalid_input_message(scan_with_short_body(1), feed);
  EXPECT_NE(message.find("short_scan"), std::string::npos) << message;
  EXPECT_NE(message.find("the body has 1 outputs, fewer than the 2 state variables"), std::string::npos) << message;

  message = invalid_input_message(scan_with_short_body(-1), feed);
  EXPECT_NE(message.find("num_scan_inputs -1 is not between 0 and the 3 inputs"), std::string::npos) << message;
}

// x (float, any shape) -> `op` with int64 initializers `constants` as its other inputs -> y.
using NamedInts = std::vector<std::pair<std::string, std::vector<int64_t>>>;

onnx::Model single_node_model(const std::string& op, const NamedInts& constants,
                              const NamedInts& int_list_attributes = {}) {
  onnx::Model model{std::make_shared<::onnx::ModelProto>(), {}, "."};
  model->set_ir_version(8);
  model->add_opset_import()->set_version(17);
  auto* graph = model->mutable_graph();
  graph->set_name(op);
  auto* x = graph->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  auto* y = graph->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  auto* node = graph->add_node();
  node->set_op_type(op);
  node->set_name("the_" + op);
  node->add_input("x");
  node->add_output("y");
  for (const auto& [name, values] : constants) {
    auto* initializer = graph->add_initializer();
    initializer->set_name(name);
    initializer->set_data_type(TensorProto::INT64);
    initializer->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t value : values) initializer->add_int64_data(value);
    node->add_input(name);
  }
  for (const auto& [name, values] : int_list_attributes) {
    auto* attribute = node->add_attribute();
    attribute->set_name(name);
    attribute->set_type(::onnx::AttributeProto::INTS);
    for (int64_t value : values) attribute->add_ints(value);
  }
  return model;
}

// An empty tensor whose other dim is far beyond what a per-axis index map could hold.
constexpr int64_t kHugeDim = int64_t{1} << 62;

Shape run_to_shape(const onnx::Model& model, Tensor x) {
  Interpreter interpreter(model, {});
  auto outputs = interpreter.run({{"x", ops::Value::of(std::move(x))}});
  return outputs.at(0).second.tensor().shape();
}

// Found by PARITY_FUZZ_SEED=11, iteration 9133 (40000 iterations): random inputs to
// test_center_crop_pad_pad_expanded gave a Slice an empty input with a huge dim; the kernel built
// an index map as long as that dim and std::vector threw length_error. Empty outputs are now
// allocated without maps (as Pad, Expand, Tile, Gather and Resize already did); Transpose had the
// same pattern.
TEST(FuzzFindings, SliceAndTransposeOfAnEmptyTensorWithAHugeDim) {
  Tensor x = Tensor::zeros(DType::kFloat32, {0, kHugeDim});
  auto slice = single_node_model("Slice", {{"starts", {0}}, {"ends", {kHugeDim}}, {"axes", {1}}});
  EXPECT_EQ(run_to_shape(slice, x), (Shape{0, kHugeDim}));
  auto transpose = single_node_model("Transpose", {}, {{"perm", {1, 0}}});
  EXPECT_EQ(run_to_shape(transpose, x), (Shape{kHugeDim, 0}));
}

// Found by PARITY_FUZZ_SEED=9, iteration 33429 (40000 iterations), a crash rather than an
// exception: random inputs to test_dft_rfft_opset19 gave DFT (onesided) an empty signal axis; the
// one output bin was read from an empty spectrum, out of bounds (SIGSEGV).
TEST(FuzzFindings, DftOfAnEmptySignalIsInvalidInput) {
  onnx::Model model = single_node_model("DFT", {});
  auto* node = model->mutable_graph()->mutable_node(0);
  for (auto [name, value] : {std::pair<const char*, int64_t>{"axis", 1}, {"onesided", 1}}) {
    auto* attribute = node->add_attribute();
    attribute->set_name(name);
    attribute->set_type(::onnx::AttributeProto::INT);
    attribute->set_i(value);
  }
  std::string message =
      invalid_input_message(model, {{"x", ops::Value::of(Tensor::zeros(DType::kFloat32, {2, 0, 1}))}});
  EXPECT_NE(message.find("the_DFT"), std::string::npos) << message;
  EXPECT_NE(message.find("the signal along axis 1 is empty (shape (2, 0, 1))"), std::string::npos) << message;
}

// Found by PARITY_FUZZ_SEED=1, iteration 7702 (and seeds 2 and 4; 40000 iterations): a byte of
// test_flexattention_causal_mask flipped inside a name of its score_mod graph. ONNX builds
// FlexAttention's function body by printing that graph as text and parsing it back; its parser
// threw std::logic_error out of the interpreter.
TEST(FuzzFindings, FlexAttentionScoreModOnnxCannotParseIsInvalidInput) {
  fs::path case_dir = fs::path(PARITY_SHARED_DIR) / "onnx-tests/node/test_flexattention_causal_mask";
  onnx::Model model = onnx::load_model_from_bytes(read_file(case_dir / "model.onnx"), case_dir);
  auto* node = model->mutable_graph()->mutable_node(0);
  ASSERT_EQ(node->op_type(), "FlexAttention");
  ::onnx::GraphProto* score_mod = nullptr;
  for (auto& attribute : *node->mutable_attribute())
    if (attribute.name() == "score_mod") score_mod = attribute.mutable_g();
  ASSERT_NE(score_mod, nullptr);
  // Not an identifier ONNX's text format accepts.
  for (auto& initializer : *score_mod->mutable_initializer())
    if (initializer.name() == "k_shape") initializer.set_name("k shape");
  for (auto& body_node : *score_mod->mutable_node())
    for (auto& input : *body_node.mutable_input())
      if (input == "k_shape") input = "k shape";

  Interpreter interpreter(model, {});
  NamedValues feed;
  auto metadata = interpreter.input_metadata();
  for (std::size_t k = 0; k < metadata.size(); ++k) {
    TensorProto proto;
    fs::path input = case_dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb");
    ASSERT_TRUE(proto.ParseFromString(read_file(input)));
    feed.emplace_back(metadata[k].first, ops::Value::of(onnx::tensor_from_proto(proto, case_dir)));
  }
  std::string message = invalid_input_message(model, feed);
  EXPECT_NE(message.find("FlexAttention"), std::string::npos) << message;
  EXPECT_NE(message.find("ONNX could not build the function body of FlexAttention"), std::string::npos) << message;
  EXPECT_NE(message.find("Error parsing node"), std::string::npos) << message;
}

}  // namespace
}  // namespace parity::runtime
