// What OpenVINO's contained calls (openvino_containment.h) send to a child of the fork server and
// back, as bytes: the requests, a query's result, and an inference's input buffers.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "openvino_backend.h"

namespace parity::runtime::openvino {

std::string request_bytes(const CompileRequest& request);
CompileRequest compile_request_from(const std::string& bytes);

std::string request_bytes(const QueryRequest& request);
QueryRequest query_request_from(const std::string& bytes);

std::string result_bytes(const QueryResult& result);
QueryResult query_result_from(const std::string& bytes);

std::string input_bytes(const std::vector<InputBuffer>& inputs);
// Input buffers read back from input_bytes(); their data point into `storage` (one aligned block each).
std::vector<InputBuffer> inputs_from(const std::string& bytes, std::vector<std::unique_ptr<std::byte[]>>& storage);

}  // namespace parity::runtime::openvino
