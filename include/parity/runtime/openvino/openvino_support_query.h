// OpenVINO's answers for `inspect capability` and the hybrid run (parity/runtime/capability.h):
// a model its ONNX frontend converts is asked op by op (ov::Core::query_model for the device);
// a refusal comes back with OpenVINO's message, shortened to its reasons, and the ONNX nodes it
// blames ("<Node(Conv): name>").
#pragma once

#include <string>

#include "parity/runtime/capability.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::runtime {

class OpenvinoSupportQuery : public SupportQuery {
 public:
  // Loads OpenVINO and the backend module (load_openvino_backend), FileError when missing.
  explicit OpenvinoSupportQuery(std::string device = "CPU");
  std::string backend_name() const override { return "OpenVINO"; }
  std::optional<std::string> refuse_input_type(DType dtype) const override;
  SupportAnswer query(const onnx::Model& model) override;

 private:
  openvino::Backend* backend_;
  std::string device_;
};

// OpenVINO's conversion message, reduced to what explains it: the lines of each failed operation
// without OpenVINO's source locations and check expressions, joined by "; ".
std::string concise_openvino_reason(const std::string& message);
// The nodes a conversion message blames ("<Node(Conv): name>"), each with its concise reason.
std::vector<std::pair<std::string, std::string>> openvino_blamed_nodes(const std::string& message);
// The op types a conversion message says have no conversion rule ("... for operations: Det-17"),
// without their opset versions, each with the message's concise reason.
std::vector<std::pair<std::string, std::string>> openvino_unconvertible_op_types(
    const std::string& message);

}  // namespace parity::runtime
