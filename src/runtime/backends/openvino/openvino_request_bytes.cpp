#include "openvino_request_bytes.h"

#include <cstdint>
#include <cstring>
#include <optional>

#include "parity/core/error.h"

namespace parity::runtime::openvino {
namespace {

// Fields in order: numbers as 64 bits, strings and vectors as a 64-bit count first, optionals as a
// presence number first.
class Writer {
 public:
  void number(int64_t value) { bytes_.append(reinterpret_cast<const char*>(&value), sizeof value); }
  void text(const std::string& value) { data(value.data(), value.size()); }
  void data(const void* data, std::size_t size) {
    number(static_cast<int64_t>(size));
    bytes_.append(static_cast<const char*>(data), size);
  }
  void texts(const std::vector<std::string>& values) {
    number(static_cast<int64_t>(values.size()));
    for (const auto& value : values) text(value);
  }
  template <typename T, typename Write>
  void optional(const std::optional<T>& value, Write write) {
    number(value.has_value());
    if (value) write(*value);
  }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  int64_t number() {
    int64_t value = 0;
    need(sizeof value);
    std::memcpy(&value, bytes_.data() + offset_, sizeof value);
    offset_ += sizeof value;
    return value;
  }
  std::size_t count() {
    const int64_t value = number();
    if (value < 0 || static_cast<uint64_t>(value) > bytes_.size()) cut_short();
    return static_cast<std::size_t>(value);
  }
  std::string text() {
    const std::size_t size = count();
    need(size);
    std::string value = bytes_.substr(offset_, size);
    offset_ += size;
    return value;
  }
  // The next data's bytes, in place.
  const char* data(std::size_t& size) {
    size = count();
    need(size);
    const char* at = bytes_.data() + offset_;
    offset_ += size;
    return at;
  }
  std::vector<std::string> texts() {
    std::vector<std::string> values(count());
    for (auto& value : values) value = text();
    return values;
  }
  template <typename T, typename Read>
  std::optional<T> optional(Read read) {
    if (!number()) return std::nullopt;
    return read();
  }

 private:
  void need(std::size_t size) const {
    if (bytes_.size() - offset_ < size) cut_short();
  }
  [[noreturn]] static void cut_short() { raise<InternalError>("a contained OpenVINO call's message is cut short"); }

  const std::string& bytes_;
  std::size_t offset_ = 0;
};

}  // namespace

std::string request_bytes(const CompileRequest& request) {
  Writer out;
  out.text(request.model_bytes);
  out.text(request.model_path);
  out.text(request.device);
  auto text = [&](const std::string& value) { out.text(value); };
  auto number = [&](int value) { out.number(value); };
  out.optional(request.inference_precision, text);
  out.optional(request.threads, number);
  out.optional(request.performance_hint, text);
  out.optional(request.streams, number);
  out.optional(request.cache_dir, text);
  out.number(request.profiling);
  out.number(static_cast<int64_t>(request.input_bounds.size()));
  for (const auto& input : request.input_bounds) {
    out.text(input.name);
    out.number(static_cast<int64_t>(input.dims.size()));
    for (const auto& dim : input.dims) out.number(dim.min), out.number(dim.max);
  }
  out.texts(request.graph_outputs);
  out.texts(request.marked_outputs);
  out.texts(request.marked_output_precisions);
  out.number(request.keep_conversion);
  return out.take();
}

CompileRequest compile_request_from(const std::string& bytes) {
  Reader in(bytes);
  CompileRequest request;
  request.model_bytes = in.text();
  request.model_path = in.text();
  request.device = in.text();
  auto text = [&] { return in.text(); };
  auto number = [&] { return static_cast<int>(in.number()); };
  request.inference_precision = in.optional<std::string>(text);
  request.threads = in.optional<int>(number);
  request.performance_hint = in.optional<std::string>(text);
  request.streams = in.optional<int>(number);
  request.cache_dir = in.optional<std::string>(text);
  request.profiling = in.number() != 0;
  request.input_bounds.resize(in.count());
  for (auto& input : request.input_bounds) {
    input.name = in.text();
    input.dims.resize(in.count());
    for (auto& dim : input.dims) dim.min = in.number(), dim.max = in.number();
  }
  request.graph_outputs = in.texts();
  request.marked_outputs = in.texts();
  request.marked_output_precisions = in.texts();
  request.keep_conversion = in.number() != 0;
  return request;
}

std::string request_bytes(const QueryRequest& request) {
  Writer out;
  out.text(request.model_bytes);
  out.text(request.model_path);
  out.text(request.device);
  return out.take();
}

QueryRequest query_request_from(const std::string& bytes) {
  Reader in(bytes);
  QueryRequest request;
  request.model_bytes = in.text();
  request.model_path = in.text();
  request.device = in.text();
  return request;
}

std::string result_bytes(const QueryResult& result) {
  Writer out;
  out.number(result.converted);
  out.text(result.conversion_error);
  out.texts(result.unsupported_tensors);
  out.texts(result.unsupported_ops);
  out.text(result.compile_error);
  return out.take();
}

QueryResult query_result_from(const std::string& bytes) {
  Reader in(bytes);
  QueryResult result;
  result.converted = in.number() != 0;
  result.conversion_error = in.text();
  result.unsupported_tensors = in.texts();
  result.unsupported_ops = in.texts();
  result.compile_error = in.text();
  return result;
}

std::string input_bytes(const std::vector<InputBuffer>& inputs) {
  Writer out;
  out.number(static_cast<int64_t>(inputs.size()));
  for (const auto& input : inputs) {
    out.text(input.name);
    out.number(input.element_type);
    out.number(static_cast<int64_t>(input.shape.size()));
    for (int64_t dim : input.shape) out.number(dim);
    out.data(input.data, input.bytes);
  }
  return out.take();
}

std::vector<InputBuffer> inputs_from(const std::string& bytes, std::vector<std::unique_ptr<std::byte[]>>& storage) {
  Reader in(bytes);
  std::vector<InputBuffer> inputs(in.count());
  for (auto& input : inputs) {
    input.name = in.text();
    input.element_type = static_cast<int32_t>(in.number());
    input.shape.resize(in.count());
    for (int64_t& dim : input.shape) dim = in.number();
    const char* data = in.data(input.bytes);
    storage.push_back(std::make_unique<std::byte[]>(input.bytes));
    std::memcpy(storage.back().get(), data, input.bytes);
    input.data = storage.back().get();
  }
  return inputs;
}

}  // namespace parity::runtime::openvino
