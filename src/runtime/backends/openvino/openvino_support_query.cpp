#include "parity/runtime/openvino/openvino_support_query.h"

#include <algorithm>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "openvino_backend.h"
#include "openvino_containment.h"
#include "parity/core/error.h"

namespace parity::runtime {
namespace {

bool starts_with(const std::string& text, const char* prefix) {
  return text.rfind(prefix, 0) == 0;
}

std::string trim(const std::string& text) {
  auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// A line that only says where OpenVINO failed, not why.
bool is_location_line(const std::string& line) {
  for (const char* prefix :
       {"Exception from ", "Check '", "FrontEnd API failed", "Model wasn't fully converted",
        "Failed operations detailed log", "Summary:", "-- Conversion is failed for",
        "While validating ONNX node", "While validating node", "To facilitate the conversion"})
    if (starts_with(line, prefix)) return true;
  return line.size() > 2 && line.compare(0, 3, "-- ") == 0 &&
         line.find(" with a message:") != std::string::npos;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(trim(line));
  return lines;
}

std::string reason_of(const std::vector<std::string>& lines) {
  std::vector<std::string> kept;
  for (const auto& line : lines) {
    if (line.empty() || is_location_line(line)) continue;
    std::string text = starts_with(line, "-- ") ? line.substr(3) : line;
    if (std::find(kept.begin(), kept.end(), text) == kept.end()) kept.push_back(text);
  }
  return fmt::format("{}", fmt::join(kept, "; "));
}

}  // namespace

std::string concise_openvino_reason(const std::string& message) {
  std::string reason = reason_of(lines_of(message));
  if (!reason.empty()) return reason;
  auto lines = lines_of(message);
  return lines.empty() ? message : lines.front();
}

std::vector<std::pair<std::string, std::string>> openvino_blamed_nodes(const std::string& message) {
  // The failed-operations log: "-- Conv-16 with a message:" blocks, each naming its node.
  std::vector<std::pair<std::string, std::string>> blamed;
  std::vector<std::vector<std::string>> blocks;
  for (const auto& line : lines_of(message)) {
    if (starts_with(line, "-- ") && line.find(" with a message:") != std::string::npos)
      blocks.emplace_back();
    else if (starts_with(line, "Summary:"))
      break;
    if (!blocks.empty()) blocks.back().push_back(line);
  }
  if (blocks.empty()) blocks.push_back(lines_of(message));
  for (const auto& block : blocks) {
    std::string joined = fmt::format("{}", fmt::join(block, "\n"));
    for (std::size_t at = joined.find("<Node("); at != std::string::npos;
         at = joined.find("<Node(", at + 1)) {
      auto colon = joined.find("): ", at);
      auto close = joined.find('>', colon);
      if (colon == std::string::npos || close == std::string::npos) break;
      blamed.emplace_back(joined.substr(colon + 3, close - colon - 3), reason_of(block));
    }
  }
  return blamed;
}

std::vector<std::pair<std::string, std::string>> openvino_unconvertible_op_types(
    const std::string& message) {
  static constexpr std::string_view kMarker = "No conversion rule found for operations: ";
  std::vector<std::pair<std::string, std::string>> op_types;
  for (const auto& line : lines_of(message)) {
    auto at = line.find(kMarker);
    if (at == std::string::npos) continue;
    std::string list = line.substr(at + kMarker.size());
    for (std::size_t start = 0; start < list.size();) {
      auto comma = list.find(',', start);
      std::string entry =
          trim(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      start = comma == std::string::npos ? list.size() : comma + 1;
      auto dash = entry.rfind('-');
      if (dash != std::string::npos && dash + 1 < entry.size() &&
          entry.find_first_not_of("0123456789", dash + 1) == std::string::npos)
        entry = entry.substr(0, dash);
      if (!entry.empty())
        op_types.emplace_back(entry, "No conversion rule found for operations: " + list);
    }
  }
  return op_types;
}

OpenvinoSupportQuery::OpenvinoSupportQuery(std::string device)
    : backend_(load_openvino_backend().backend), device_(std::move(device)) {}

std::optional<std::string> OpenvinoSupportQuery::refuse_input_type(DType dtype) const {
  switch (dtype) {
    case DType::kComplex64:
    case DType::kComplex128:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat8E8M0:
    case DType::kUInt2:
    case DType::kInt2:
    case DType::kFloat6E2M3:
    case DType::kFloat6E3M2:
    case DType::kUndefined:
      return "OpenVINO has no element type for it";
    default:
      return std::nullopt;
  }
}

SupportAnswer OpenvinoSupportQuery::query(const onnx::Model& model) {
  openvino::QueryRequest request;
  request.model_bytes = onnx::serialize_model(*model.proto);
  request.model_path = (model.base_dir / "model.onnx").string();
  request.device = device_;
  openvino::QueryResult result;
  try {
    // In a child where OpenVINO's calls are contained (openvino_containment.h), else here.
    std::optional<openvino::QueryResult> contained =
        query_in_child(request, *model.proto, model.path.empty() ? "<model>" : model.path.string());
    result = contained ? std::move(*contained) : backend_->query_model(request);
  } catch (const openvino::BackendFailure& failure) {
    raise<Error>("OpenVINO could not answer which nodes of {} it supports: {}", model.path.string(),
                 failure.what());
  }
  SupportAnswer answer;
  answer.converted = result.converted;
  if (!result.converted) {
    answer.detail = result.conversion_error;
    answer.reason = concise_openvino_reason(result.conversion_error);
    answer.blamed = openvino_blamed_nodes(result.conversion_error);
    answer.blamed_op_types = openvino_unconvertible_op_types(result.conversion_error);
    return answer;
  }
  answer.unsupported_tensors = result.unsupported_tensors;
  if (!result.unsupported_ops.empty())
    answer.unsupported_reason = fmt::format("the {} device does not support OpenVINO's {}: {}",
                                            device_, fmt::join(result.unsupported_ops, ", "),
                                            concise_openvino_reason(result.compile_error));
  return answer;
}

}  // namespace parity::runtime
