#include "parity/runtime/onnxrt/onnxrt_support_query.h"

#include "parity/core/error.h"

namespace parity::runtime {

std::string concise_onnxrt_reason(const std::string& message) {
  // Parity's runner says which runner and model; keep ONNX Runtime's own text, without its
  // status code ("[NOT_IMPLEMENTED] ", or the C++ API's "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED :
  // ").
  std::string text = message;
  static const std::string kSession = "while creating the session: ";
  if (auto at = text.find(kSession); at != std::string::npos)
    text = text.substr(at + kSession.size());
  if (!text.empty() && text[0] == '[') {
    auto close = text.find("] ");
    if (close != std::string::npos) text = text.substr(close + 2);
  }
  for (const char* status : {"NOT_IMPLEMENTED : ", "INVALID_GRAPH : ", "FAIL : "}) {
    auto at = text.find(status);
    if (at != std::string::npos) {
      text = text.substr(at + std::string(status).size());
      break;
    }
  }
  auto newline = text.find('\n');
  return newline == std::string::npos ? text : text.substr(0, newline);
}

std::vector<std::pair<std::string, std::string>> onnxrt_blamed_nodes(const std::string& message) {
  static const std::string kMarker = "node with name '";
  std::vector<std::pair<std::string, std::string>> blamed;
  auto at = message.find(kMarker);
  if (at == std::string::npos) return blamed;
  auto close = message.find('\'', at + kMarker.size());
  if (close == std::string::npos) return blamed;
  blamed.emplace_back(message.substr(at + kMarker.size(), close - at - kMarker.size()),
                      concise_onnxrt_reason(message));
  return blamed;
}

OnnxrtSupportQuery::OnnxrtSupportQuery(OnnxrtOptions options) : options_(std::move(options)) {}

SupportAnswer OnnxrtSupportQuery::query(const onnx::Model& model) {
  SupportAnswer answer;
  OnnxrtRunner runner([model] { return model; }, options_);
  try {
    runner.activate();
  } catch (const FileError&) {
    throw;  // ONNX Runtime itself was not found: no answer about the model
  } catch (const Error& error) {
    answer.converted = false;
    answer.detail = error.what();
    answer.reason = concise_onnxrt_reason(answer.detail);
    answer.blamed = onnxrt_blamed_nodes(answer.detail);
    return answer;
  }
  runner.deactivate();
  return answer;
}

}  // namespace parity::runtime
