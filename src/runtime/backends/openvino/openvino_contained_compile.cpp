#include "openvino_contained_compile.h"

#include <sys/resource.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "parity/core/bisect.h"
#include "parity/core/error.h"
#include "parity/core/fork_server.h"
#include "parity/core/interrupt.h"
#include "parity/core/logger.h"
#include "parity/core/process.h"
#include "parity/onnx/model.h"

namespace parity::runtime {
namespace {

// A CompileRequest as bytes for the compile server, and back: each field in the header's order,
// strings and vectors as a 64-bit count first, optionals as a presence byte first.
class RequestWriter {
 public:
  void number(int64_t value) { bytes_.append(reinterpret_cast<const char*>(&value), sizeof value); }
  void text(const std::string& value) {
    number(static_cast<int64_t>(value.size()));
    bytes_ += value;
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

class RequestReader {
 public:
  explicit RequestReader(const std::string& bytes) : bytes_(bytes) {}
  int64_t number() {
    int64_t value = 0;
    if (bytes_.size() - offset_ < sizeof value) raise<InternalError>("a contained compile's request is cut short");
    std::memcpy(&value, bytes_.data() + offset_, sizeof value);
    offset_ += sizeof value;
    return value;
  }
  std::string text() {
    const auto size = static_cast<std::size_t>(number());
    if (bytes_.size() - offset_ < size) raise<InternalError>("a contained compile's request is cut short");
    std::string value = bytes_.substr(offset_, size);
    offset_ += size;
    return value;
  }
  std::vector<std::string> texts() {
    std::vector<std::string> values(static_cast<std::size_t>(number()));
    for (auto& value : values) value = text();
    return values;
  }
  template <typename T, typename Read>
  std::optional<T> optional(Read read) {
    if (!number()) return std::nullopt;
    return read();
  }

 private:
  const std::string& bytes_;
  std::size_t offset_ = 0;
};

std::string serialized(const openvino::CompileRequest& request) {
  RequestWriter out;
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

openvino::CompileRequest deserialized(const std::string& bytes) {
  RequestReader in(bytes);
  openvino::CompileRequest request;
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
  request.input_bounds.resize(static_cast<std::size_t>(in.number()));
  for (auto& input : request.input_bounds) {
    input.name = in.text();
    input.dims.resize(static_cast<std::size_t>(in.number()));
    for (auto& dim : input.dims) dim.min = in.number(), dim.max = in.number();
  }
  request.graph_outputs = in.texts();
  request.marked_outputs = in.texts();
  request.marked_output_precisions = in.texts();
  request.keep_conversion = in.number() != 0;
  return request;
}

// The compile server of this process (started with the backend), or nullptr when compiles are not contained.
std::unique_ptr<ForkServer>& compile_server() {
  static std::unique_ptr<ForkServer> server;
  return server;
}

// How a contained compile ended: the signal that killed its child, else 0.
int compile_signal(const openvino::CompileRequest& request) {
  const ChildProcessEnd end = compile_server()->run(serialized(request));
  if (end.signal == SIGINT) raise<InterruptedError>("interrupted while OpenVINO compiled the model");
  if (end.thrown) end.thrown->rethrow();
  return end.signal;
}

// `request` for `model` cut to its main graph's first `count` nodes, every tensor they write that
// none of them reads (and every graph output they write) made a graph output, so that no node is
// dead code; nothing marked.
openvino::CompileRequest prefix_request(const openvino::CompileRequest& request, const ::onnx::ModelProto& model,
                                        int count) {
  openvino::CompileRequest probe = request;
  probe.keep_conversion = false;
  probe.marked_outputs.clear();
  probe.marked_output_precisions.clear();
  probe.graph_outputs.clear();
  ::onnx::ModelProto prefix = model;
  ::onnx::GraphProto& graph = *prefix.mutable_graph();
  graph.mutable_node()->DeleteSubrange(count, graph.node_size() - count);
  std::unordered_map<std::string, const ::onnx::ValueInfoProto*> declared;
  for (const auto& info : model.graph().value_info()) declared.emplace(info.name(), &info);
  for (const auto& info : model.graph().output()) declared.emplace(info.name(), &info);
  std::unordered_set<std::string> graph_outputs, read;
  for (const auto& output : model.graph().output()) graph_outputs.insert(output.name());
  for (const auto& node : graph.node())
    for (const auto& input : node.input()) read.insert(input);
  graph.clear_output();
  for (const auto& node : graph.node())
    for (const auto& output : node.output()) {
      if (output.empty() || (read.count(output) && !graph_outputs.count(output))) continue;
      ::onnx::ValueInfoProto* info = graph.add_output();
      if (auto it = declared.find(output); it != declared.end()) *info = *it->second;
      else info->set_name(output);
      probe.graph_outputs.push_back(output);
    }
  probe.model_bytes = onnx::serialize_model(prefix);
  return probe;
}

// The first node of the main graph whose prefix of the graph crashes OpenVINO's compile, found by
// bisection; nullopt when no prefix of the nodes crashes it (the crash needs the whole model).
std::optional<int> first_crashing_node(const openvino::CompileRequest& request, const ::onnx::ModelProto& model) {
  const int count = model.graph().node_size();
  auto crashes = [&](int prefix) { return compile_signal(prefix_request(request, model, prefix)) != 0; };
  if (count == 0 || !crashes(count)) return std::nullopt;
  return shortest_failing_prefix(count, crashes) - 1;
}

std::string node_label(const ::onnx::NodeProto& node) {
  std::string name = node.name();
  if (name.empty() && node.output_size() > 0) name = node.output(0);
  return fmt::format("node '{}' ({})", name, node.op_type());
}

}  // namespace

bool openvino_compile_contained() {
  const char* value = std::getenv("PARITY_OPENVINO_IN_PROCESS");
  return !(value && std::string_view(value) == "1");
}

void start_compile_server(openvino::Backend& backend) {
  if (!openvino_compile_contained() || compile_server()) return;
  compile_server() = std::make_unique<ForkServer>(
      [&backend](const std::string& bytes) {
        // A fault ends the child by its signal, whatever handler the parent set: the parent reports it,
        // and the child leaves no core file.
        for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(fault, SIG_DFL);
        const rlimit no_core{0, 0};
        ::setrlimit(RLIMIT_CORE, &no_core);
        try {
          (void)backend.compile(deserialized(bytes));
        } catch (const openvino::BackendFailure&) {
          // OpenVINO's own refusal: the caller's compile meets it again and reports it.
        }
      },
      "OpenVINO's contained compile");
}

bool compile_in_child(const openvino::CompileRequest& request, const ::onnx::ModelProto& model,
                      const std::string& model_label) {
  if (!compile_server()) return false;
  // Not into the caller's cache: a compiled model OpenVINO loads from its cache exports bytes it
  // cannot import again (`convert --openvino --ov-cache-dir` would write an unreadable file), so the
  // caller's own compile fills the cache as it would without the child.
  openvino::CompileRequest uncached = request;
  uncached.cache_dir.reset();
  const int signal = compile_signal(uncached);
  if (signal == 0) return true;
  log::verbose("{}: OpenVINO's compile crashed (signal {}{}); looking for the first node that crashes it", model_label,
               signal, signal_name(signal));
  const std::optional<int> node = first_crashing_node(uncached, model);
  const std::string crash = fmt::format("OpenVINO crashed compiling it (signal {}{}, in a child process)", signal,
                                        signal_name(signal));
  if (!node)
    raise<InvalidInputError>("{}: {}; no prefix of the graph's nodes crashes it alone, so the node is not known",
                             model_label, crash);
  raise<InvalidInputError>("{}: {} at {}: compiling the graph up to this node crashes OpenVINO, up to the node before "
                           "it does not",
                           model_label, crash, node_label(model.graph().node(*node)));
}

}  // namespace parity::runtime
