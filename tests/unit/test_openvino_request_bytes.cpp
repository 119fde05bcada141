// What OpenVINO's contained calls send to a child and back (openvino_request_bytes.h): every field of
// a compile request, a query request and its result, and an inference's input buffers comes back as
// it was written; bytes cut short are an InternalError, not a read past the end.
#include <gtest/gtest.h>

#include <cstring>

#include "../../src/runtime/backends/openvino/openvino_request_bytes.h"
#include "parity/core/error.h"

namespace parity::runtime::openvino {
namespace {

TEST(OpenvinoRequestBytes, ACompileRequestComesBackWhole) {
  CompileRequest request;
  request.model_bytes = std::string("\0model\xff", 7);
  request.model_path = "/models/m.onnx";
  request.inference_precision = "bf16";
  request.threads = 3;
  request.streams = 2;
  request.cache_dir = "/cache";
  request.profiling = true;
  request.input_bounds = {{"x", {{1, 8}, {3, -1}}}};
  request.graph_outputs = {"y", "z"};
  request.marked_outputs = {"t"};
  request.marked_output_precisions = {"f16"};
  request.keep_conversion = true;
  const CompileRequest back = compile_request_from(request_bytes(request));
  EXPECT_EQ(back.model_bytes, request.model_bytes);
  EXPECT_EQ(back.model_path, request.model_path);
  EXPECT_EQ(back.device, "CPU");
  EXPECT_EQ(back.inference_precision, "bf16");
  EXPECT_EQ(back.threads, 3);
  EXPECT_FALSE(back.performance_hint.has_value());
  EXPECT_EQ(back.streams, 2);
  EXPECT_EQ(back.cache_dir, "/cache");
  EXPECT_TRUE(back.profiling);
  ASSERT_EQ(back.input_bounds.size(), 1u);
  EXPECT_EQ(back.input_bounds[0].name, "x");
  ASSERT_EQ(back.input_bounds[0].dims.size(), 2u);
  EXPECT_EQ(back.input_bounds[0].dims[0].min, 1);
  EXPECT_EQ(back.input_bounds[0].dims[0].max, 8);
  EXPECT_EQ(back.input_bounds[0].dims[1].max, -1);
  EXPECT_EQ(back.graph_outputs, request.graph_outputs);
  EXPECT_EQ(back.marked_outputs, request.marked_outputs);
  EXPECT_EQ(back.marked_output_precisions, request.marked_output_precisions);
  EXPECT_TRUE(back.keep_conversion);
}

TEST(OpenvinoRequestBytes, AQueryAndItsResultComeBackWhole) {
  QueryRequest request{"bytes", "/m/model.onnx", "CPU"};
  const QueryRequest back = query_request_from(request_bytes(request));
  EXPECT_EQ(back.model_bytes, "bytes");
  EXPECT_EQ(back.model_path, "/m/model.onnx");
  QueryResult result;
  result.converted = true;
  result.unsupported_tensors = {"a", "b"};
  result.unsupported_ops = {"Neg_1 (Negative)"};
  result.compile_error = "why";
  const QueryResult answer = query_result_from(result_bytes(result));
  EXPECT_TRUE(answer.converted);
  EXPECT_EQ(answer.conversion_error, "");
  EXPECT_EQ(answer.unsupported_tensors, result.unsupported_tensors);
  EXPECT_EQ(answer.unsupported_ops, result.unsupported_ops);
  EXPECT_EQ(answer.compile_error, "why");
}

TEST(OpenvinoRequestBytes, InputBuffersComeBackWithTheirBytesAligned) {
  const float values[3] = {1.5f, -2.0f, 3.25f};
  const int64_t index = int64_t{1} << 31;
  std::vector<InputBuffer> inputs = {{"x", 1, {3}, values, sizeof values}, {"i", 7, {}, &index, sizeof index}};
  std::vector<std::unique_ptr<std::byte[]>> storage;
  const std::vector<InputBuffer> back = inputs_from(input_bytes(inputs), storage);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].name, "x");
  EXPECT_EQ(back[0].element_type, 1);
  EXPECT_EQ(back[0].shape, std::vector<int64_t>{3});
  ASSERT_EQ(back[0].bytes, sizeof values);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(back[0].data) % alignof(float), 0u);
  EXPECT_EQ(std::memcmp(back[0].data, values, sizeof values), 0);
  EXPECT_EQ(back[1].shape, std::vector<int64_t>{});
  EXPECT_EQ(*static_cast<const int64_t*>(back[1].data), index);
}

TEST(OpenvinoRequestBytes, BytesCutShortAreAnInternalError) {
  std::string bytes = request_bytes(CompileRequest{});
  bytes.resize(bytes.size() - 1);
  EXPECT_THROW(compile_request_from(bytes), InternalError);
  std::vector<std::unique_ptr<std::byte[]>> storage;
  EXPECT_THROW(inputs_from(std::string(8, '\xff'), storage), InternalError);  // a count of -1
  EXPECT_THROW(inputs_from(std::string(3, '\0'), storage), InternalError);
}

}  // namespace
}  // namespace parity::runtime::openvino
