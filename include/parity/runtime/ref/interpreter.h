// The reference interpreter: executes an ONNX graph node by node in topological order with the
// registered reference kernels, expanding ONNX function bodies (schema functions and model-local
// functions) for ops without a kernel. Intermediates are freed right after their last consumer;
// initializers are read in place (no copy).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "parity/onnx/model.h"
#include "parity/ops/kernel.h"
#include "parity/runtime/runner.h"

namespace parity::runtime {

using NamedValues = std::vector<std::pair<std::string, ops::Value>>;

struct InterpreterOptions {
  bool fp64 = false;
  ops::ExecutionLimits limits;
  // Op types run through their ONNX function body even when a kernel exists (to check a
  // kernel against the spec's own definition).
  std::vector<std::string> expand_ops;
};

class Interpreter {
 public:
  Interpreter(onnx::Model model, InterpreterOptions options);
  ~Interpreter();

  const onnx::Model& model() const;
  // Graph inputs that are not initializers.
  TensorMetadata input_metadata() const;

  // Runs the main graph on `feed`. Returns the graph outputs, then the requested intermediates
  // (for kAll: every tensor produced, in execution order). `callback`, when set, receives every
  // tensor as it is produced.
  NamedValues run(const NamedValues& feed, const IntermediateOutputs& intermediates = {},
                  const TensorCallback* callback = nullptr);

  // Names of all tensors the main graph produces, in execution order (for "mark all").
  std::vector<std::string> produced_tensor_names() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace parity::runtime
