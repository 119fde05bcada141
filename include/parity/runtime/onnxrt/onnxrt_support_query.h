// ONNX Runtime's answers for `inspect capability --onnxrt` (parity/runtime/capability.h). Its C API
// has no call that says which nodes an execution provider claims; what it does say is whether a
// session can be created: a node no provider has a kernel for (an op, or an op at an element type)
// makes session creation fail with NOT_IMPLEMENTED, naming the node ("Could not find an
// implementation for Det(11) node with name 'planted'"). So the query creates a session for each
// part asked about; the partitioning halves the graph down to such nodes.
#pragma once

#include <string>
#include <vector>

#include "parity/runtime/capability.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"

namespace parity::runtime {

class OnnxrtSupportQuery : public SupportQuery {
 public:
  explicit OnnxrtSupportQuery(OnnxrtOptions options = {});
  std::string backend_name() const override { return "ONNX Runtime"; }
  // ONNX Runtime takes every ONNX element type as an input (kernels may still lack it).
  std::optional<std::string> refuse_input_type(DType) const override { return std::nullopt; }
  SupportAnswer query(const onnx::Model& model) override;

 private:
  OnnxrtOptions options_;
};

// ONNX Runtime's session-creation message without its status prefix ("[ONNXRuntimeError] : 9 :
// NOT_IMPLEMENTED : "); the node it names ("node with name 'X'"), if any.
std::string concise_onnxrt_reason(const std::string& message);
std::vector<std::pair<std::string, std::string>> onnxrt_blamed_nodes(const std::string& message);

}  // namespace parity::runtime
