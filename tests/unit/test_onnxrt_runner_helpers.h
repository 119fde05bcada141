// Helpers shared by the OnnxrtRunner unit tests (test_onnxrt_*.cpp): small ONNX models built in
// memory, feeds, and runner-independent error messages.
#pragma once

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "parity/core/tensor.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"

namespace parity::runtime::onnxrt_testing {

namespace fs = std::filesystem;
using ::onnx::ModelProto;
using ::onnx::TensorProto;

inline const fs::path kSource = PARITY_SOURCE_DIR;

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

inline Tensor float_tensor(Shape shape, float start = 0.25f, float step = 0.5f) {
  Tensor t = Tensor::zeros(DType::kFloat32, std::move(shape));
  float v = start;
  for (auto& x : t.mutable_span<float>()) {
    x = v;
    v = -(v + step);
  }
  return t;
}

inline Tensor random_tensor(DType dtype, Shape shape, unsigned seed) {
  Tensor t = Tensor::zeros(dtype, std::move(shape));
  std::mt19937 rng(seed);
  auto* bytes = static_cast<unsigned char*>(t.mutable_raw());
  for (std::size_t i = 0; i < t.byte_size(); ++i) bytes[i] = static_cast<unsigned char>(rng());
  if (dtype == DType::kBool)
    for (std::size_t i = 0; i < t.byte_size(); ++i) bytes[i] &= 1;
  return t;
}

// y = ((relu(x) * 2) - w) with x [N, 4] (N dynamic), w a [4] initializer; a chain of named nodes.
inline ModelBuilder chain_model() {
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

inline std::string without_runner_name(const std::string& message, const std::string& runner_name) {
  std::string out = message;
  for (std::size_t at; (at = out.find(runner_name)) != std::string::npos;)
    out.replace(at, runner_name.size(), "<runner>");
  return out;
}

}  // namespace parity::runtime::onnxrt_testing
