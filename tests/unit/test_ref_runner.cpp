// The runner lifecycle, feed validation, intermediate outputs and streaming, on the ref runner.
#include <cmath>
#include <regex>

#include <gtest/gtest.h>

#include "parity/core/error.h"
#include "parity/runtime/ref/interpreter.h"
#include "parity/runtime/ref/ref_runner.h"

namespace parity::runtime {
namespace {

const std::string kExamples = std::string(PARITY_SOURCE_DIR) + "/examples/models/";

// y = relu(x * 2 + b), with named intermediates "scaled" and "biased". x: float32 ['n', 3].
onnx::Model chain_model() {
  onnx::Model model{std::make_shared<::onnx::ModelProto>(), {}, "."};
  auto& m = *model.proto;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("chain");
  auto* x = g->add_input();
  x->set_name("x");
  auto* xt = x->mutable_type()->mutable_tensor_type();
  xt->set_elem_type(1);
  xt->mutable_shape()->add_dim()->set_dim_param("n");
  xt->mutable_shape()->add_dim()->set_dim_value(3);
  auto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  auto add_const = [&](const char* name, std::vector<float> values) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(1);
    t->add_dims(static_cast<int64_t>(values.size()));
    t->set_raw_data(values.data(), values.size() * 4);
  };
  add_const("two", {2.0f});
  add_const("b", {-1.0f, 0.0f, 1.0f});
  auto add_node = [&](const char* op, std::vector<std::string> in, const char* out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(std::string(op) + "_" + out);
    for (auto& i : in) n->add_input(i);
    n->add_output(out);
  };
  add_node("Mul", {"x", "two"}, "scaled");
  add_node("Add", {"scaled", "b"}, "biased");
  add_node("Relu", {"biased"}, "y");
  return model;
}

Tensor floats(Shape shape, std::vector<float> values) {
  return Tensor::from_bytes(DType::kFloat32, std::move(shape), values.data(), values.size() * 4);
}

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(RefRunner, ConstructionIsCheapAndActivationLoads) {
  int loads = 0;
  RefRunner runner([&] {
    ++loads;
    return chain_model();
  });
  EXPECT_EQ(loads, 0);
  EXPECT_FALSE(runner.is_active());
  EXPECT_TRUE(std::regex_match(runner.name(), std::regex(R"(ref-runner-N\d+-\d\d/\d\d/\d\d-\d\d:\d\d:\d\d)")))
      << runner.name();
  EXPECT_THROW(runner.infer({}), InvalidInputError);
  {
    ActiveRunner active(runner);
    EXPECT_EQ(loads, 1);
    EXPECT_TRUE(runner.is_active());
    auto metadata = runner.input_metadata();
    ASSERT_EQ(metadata.size(), 1u);
    EXPECT_EQ(metadata.to_string(), "{x [dtype=float32, shape=('n', 3)]}");
    auto out = runner.infer({{"x", floats({1, 3}, {1, 2, 3})}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].first, "y");
    EXPECT_EQ(out[0].second.data<float>()[0], 1.0f);  // relu(2 - 1)
    EXPECT_EQ(out[0].second.data<float>()[2], 7.0f);
    EXPECT_GE(runner.last_inference_time(), 0.0);
    auto again = runner.infer({{"x", floats({2, 3}, {0, 0, 0, -1, -1, -1})}});  // many infers, other batch
    EXPECT_EQ(again[0].second.shape(), (Shape{2, 3}));
    EXPECT_EQ(again[0].second.data<float>()[2], 1.0f);
  }
  EXPECT_FALSE(runner.is_active());
  RefRunner second([] { return chain_model(); });
  EXPECT_NE(runner.name(), second.name());  // N0, N1, ...
}

TEST(RefRunner, FeedsAreValidatedWithMessagesNamingTheInput) {
  RefRunner runner([] { return chain_model(); });
  ActiveRunner active(runner);
  std::string m = error_of([&] { runner.infer({{"xx", floats({1, 3}, {1, 2, 3})}}); });
  EXPECT_NE(m.find("'xx'"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'x'"), std::string::npos) << m;
  m = error_of([&] { runner.infer({}); });
  EXPECT_NE(m.find("input 'x'"), std::string::npos) << m;
  EXPECT_NE(m.find("missing"), std::string::npos) << m;
  Tensor ints = Tensor::zeros(DType::kInt32, {1, 3});
  m = error_of([&] { runner.infer({{"x", ints}}); });
  EXPECT_NE(m.find("dtype int32"), std::string::npos) << m;
  m = error_of([&] { runner.infer({{"x", floats({3}, {1, 2, 3})}}); });
  EXPECT_NE(m.find("rank"), std::string::npos) << m;
  m = error_of([&] { runner.infer({{"x", floats({1, 4}, {1, 2, 3, 4})}}); });
  EXPECT_NE(m.find("dimension 1 must be 3"), std::string::npos) << m;
}

TEST(RefRunner, ReturnsChosenOrAllIntermediates) {
  RefRunner runner([] { return chain_model(); });
  ActiveRunner active(runner);
  NamedTensors feed{{"x", floats({1, 3}, {1, 2, 3})}};
  runner.set_intermediate_outputs(IntermediateOutputs::list({"scaled"}));
  auto chosen = runner.infer(feed);
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[1].first, "scaled");
  EXPECT_EQ(chosen[1].second.data<float>()[2], 6.0f);

  runner.set_intermediate_outputs(IntermediateOutputs::all());
  auto all = runner.infer(feed);
  std::vector<std::string> names;
  for (auto& [name, _] : all) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"y", "scaled", "biased"}));

  runner.set_intermediate_outputs(IntermediateOutputs::list({"nope"}));
  std::string m = error_of([&] { runner.infer(feed); });
  EXPECT_NE(m.find("'nope'"), std::string::npos) << m;
}

TEST(RefRunner, StreamsEveryTensorInTopologicalOrder) {
  RefRunner runner([] { return chain_model(); });
  ActiveRunner active(runner);
  std::vector<std::string> seen, producers;
  std::vector<float> first_values;
  runner.set_tensor_callback([&](const ProducedTensor& t) {
    seen.push_back(t.name);
    producers.push_back(t.op_type);
    first_values.push_back(t.tensor.data<float>()[0]);
  });
  runner.infer({{"x", floats({1, 3}, {1, 2, 3})}});
  EXPECT_EQ(seen, (std::vector<std::string>{"scaled", "biased", "y"}));
  EXPECT_EQ(producers, (std::vector<std::string>{"Mul", "Add", "Relu"}));
  EXPECT_EQ(first_values, (std::vector<float>{2.0f, 1.0f, 1.0f}));
}

TEST(Interpreter, RefusesCyclesAndUnknownOps) {
  onnx::Model cyclic = chain_model();
  cyclic->mutable_graph()->mutable_node(0)->set_input(0, "biased");  // Mul reads Add's output
  std::string m = error_of([&] { Interpreter(cyclic, {}); });
  EXPECT_NE(m.find("cycle"), std::string::npos) << m;

  onnx::Model unknown = chain_model();
  unknown->mutable_graph()->mutable_node(2)->set_op_type("NoSuchOp");
  Interpreter interpreter(unknown, {});
  m = error_of([&] { interpreter.run({{"x", ops::Value::of(floats({1, 3}, {1, 2, 3}))}}); });
  EXPECT_NE(m.find("NoSuchOp"), std::string::npos) << m;
  EXPECT_NE(m.find("opset 17"), std::string::npos) << m;
  EXPECT_NE(m.find("not implemented"), std::string::npos) << m;
}

TEST(Interpreter, RefusesTensorsOverTheElementLimitBeforeAllocating) {
  InterpreterOptions options;
  options.limits.max_elements = 5;
  Interpreter interpreter(chain_model(), options);
  std::string m = error_of([&] { interpreter.run({{"x", ops::Value::of(floats({2, 3}, {1, 2, 3, 4, 5, 6}))}}); });
  EXPECT_NE(m.find("limit"), std::string::npos) << m;
  EXPECT_NE(m.find("Mul"), std::string::npos) << m;
}

}  // namespace
}  // namespace parity::runtime

namespace parity::runtime {
namespace {

// y = MatMul(x [1, K], w [K, 1]) with K large: float64 mode must give the correctly rounded
// float32 of the exact dot product; float32 mode may only be as good or worse.
TEST(RefPrecision, Fp64ModeRoundsLongDotProductsOnce) {
  const int64_t k = 1 << 16;
  onnx::Model model{std::make_shared<::onnx::ModelProto>(), {}, "."};
  auto& m = *model.proto;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  auto add_value = [](auto* list, const char* name, std::vector<int64_t> dims) {
    auto* v = list->Add();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(1);
    for (int64_t d : dims) v->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  };
  add_value(g->mutable_input(), "x", {1, k});
  add_value(g->mutable_input(), "w", {k, 1});
  add_value(g->mutable_output(), "y", {1, 1});
  auto* n = g->add_node();
  n->set_op_type("MatMul");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");

  Tensor x = Tensor::zeros(DType::kFloat32, {1, k}), w = Tensor::zeros(DType::kFloat32, {k, 1});
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f;  // [0, 1), exactly representable
  };
  long double exact = 0;
  for (int64_t i = 0; i < k; ++i) {
    float a = next() * 1000.0f, b = next() - 0.5f;
    x.mutable_data<float>()[i] = a;
    w.mutable_data<float>()[i] = b;
    exact += static_cast<long double>(a) * b;  // each product is exact in long double
  }
  float correctly_rounded = static_cast<float>(exact);
  auto run = [&](bool fp64) {
    RefOptions options;
    options.fp64 = fp64;
    RefRunner runner([&] { return model; }, options);
    ActiveRunner active(runner);
    return runner.infer({{"x", x}, {"w", w}})[0].second.data<float>()[0];
  };
  float y64 = run(true), y32 = run(false);
  EXPECT_EQ(y64, correctly_rounded);
  EXPECT_LE(std::fabs(static_cast<long double>(y64) - exact), std::fabs(static_cast<long double>(y32) - exact));
  EXPECT_NEAR(y32, correctly_rounded, std::fabs(correctly_rounded) * 1e-3 + 1.0);
}

}  // namespace
}  // namespace parity::runtime
