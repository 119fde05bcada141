#include "openvino_query_model.h"

#include <string>

#include <openvino/op/constant.hpp>
#include <openvino/op/parameter.hpp>
#include <openvino/op/result.hpp>

#include "openvino_compiled_model.h"

namespace parity::runtime::openvino {

QueryResult query_onnx_model(ov::Core& core, const QueryRequest& request) {
  QueryResult result;
  CompileRequest conversion;
  conversion.model_bytes = request.model_bytes;
  conversion.model_path = request.model_path;
  conversion.device = request.device;
  std::shared_ptr<ov::Model> model;
  try {
    model = read_onnx_model(conversion);
  } catch (const std::exception& error) {
    // The frontend's refusal is the answer asked for (OpConversionFailure and the like).
    result.conversion_error = error.what();
    return result;
  }
  result.converted = true;
  const ov::SupportedOpsMap supported = core.query_model(model, request.device);
  for (const auto& op : model->get_ordered_ops()) {
    if (ov::as_type_ptr<ov::op::v0::Parameter>(op) || ov::as_type_ptr<ov::op::v0::Result>(op) ||
        ov::as_type_ptr<ov::op::v0::Constant>(op))
      continue;
    if (supported.count(op->get_friendly_name())) continue;
    result.unsupported_ops.push_back(op->get_friendly_name() + " (" + op->get_type_name() + ")");
    for (const auto& output : op->outputs())
      for (const auto& name : output.get_names()) result.unsupported_tensors.push_back(name);
  }
  if (!result.unsupported_ops.empty()) {
    try {
      core.compile_model(model, request.device);
      result.unsupported_ops.clear();
      result.unsupported_tensors.clear();
    } catch (const std::exception& error) {
      result.compile_error = error.what();
    }
  }
  return result;
}

}  // namespace parity::runtime::openvino
