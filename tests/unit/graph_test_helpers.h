// Helpers shared by the graph-pass unit tests: a small model builder, copies, data-loader feeds,
// reference-interpreter runs and comparisons.
#pragma once

#include <cmath>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "parity/core/error.h"
#include "parity/core/values.h"
#include "parity/onnx/passes.h"
#include "parity/runtime/data_loader.h"
#include "parity/runtime/ref/interpreter.h"

namespace parity::graph_test {

using ::onnx::GraphProto;
using ::onnx::NodeProto;

const std::string kExamples = std::string(PARITY_SOURCE_DIR) + "/examples/models/";
const std::string kShared = std::string(PARITY_SHARED_DIR) + "/models/";

// A small model builder.
struct Builder {
  onnx::Model model{std::make_shared<::onnx::ModelProto>(), {}, "."};
  GraphProto* g;
  explicit Builder(int opset = 17) {
    model->set_ir_version(8);
    model->add_opset_import()->set_version(opset);
    g = model->mutable_graph();
    g->set_name("test");
  }
  void input(const std::string& name, int32_t type, std::vector<int64_t> dims) {
    auto* v = g->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    auto* s = t->mutable_shape();
    for (int64_t d : dims) {
      if (d < 0) s->add_dim()->set_dim_param("n");
      else s->add_dim()->set_dim_value(d);
    }
  }
  void output(const std::string& name, int32_t type = 1) {
    auto* v = g->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(type);
  }
  void floats(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(1);
    for (auto d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
  }
  void ints(const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> values) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(7);
    for (auto d : dims) t->add_dims(d);
    for (auto v : values) t->add_int64_data(v);
  }
  NodeProto* node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                  const std::string& name = "") {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + out[0] : name);
    for (auto& i : in) n->add_input(i);
    for (auto& o : out) n->add_output(o);
    return n;
  }
};

inline onnx::Model copy_of(const onnx::Model& m) {
  return onnx::Model{std::make_shared<::onnx::ModelProto>(*m.proto), m.path, m.base_dir};
}

inline NamedTensors make_feed(const onnx::Model& model,
                              std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {}) {
  runtime::DataLoaderOptions options;
  options.input_shapes = std::move(shapes);
  runtime::DataLoader loader(options);
  return loader.generate(onnx::graph_inputs(model->graph()), 0);
}

inline std::vector<std::pair<std::string, Tensor>> run(const onnx::Model& model, const NamedTensors& feed,
                                                std::vector<std::string> intermediates = {}) {
  runtime::Interpreter interpreter(copy_of(model), {});
  runtime::NamedValues values;
  for (const auto& [name, t] : feed) values.emplace_back(name, ops::Value::of(t));
  auto outs = interpreter.run(values, intermediates.empty() ? runtime::IntermediateOutputs::none()
                                                            : runtime::IntermediateOutputs::list(intermediates));
  std::vector<std::pair<std::string, Tensor>> result;
  for (auto& [name, v] : outs)
    if (v.is_tensor()) result.emplace_back(name, v.tensor());
  return result;
}

inline const Tensor& find(const std::vector<std::pair<std::string, Tensor>>& values, const std::string& name) {
  for (const auto& [n, t] : values)
    if (n == name) return t;
  throw std::runtime_error("no tensor " + name);
}

inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(element_as_double(a.view(), i) - element_as_double(b.view(), i)));
  return worst;
}

inline int count_op(const GraphProto& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.node()) n += node.op_type() == op;
  return n;
}

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace parity::graph_test
