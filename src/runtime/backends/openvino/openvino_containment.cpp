#include "openvino_containment.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "openvino_request_bytes.h"
#include "parity/core/bisect.h"
#include "parity/core/error.h"
#include "parity/core/interrupt.h"
#include "parity/core/logger.h"
#include "parity/core/process.h"
#include "parity/onnx/model.h"

namespace parity::runtime {
namespace {

// A request's first byte: which call the child makes.
constexpr char kCompile = 'C', kQuery = 'Q';
// The child's answers on its channel: compiled (then it waits for the inputs of an inference) or
// refused by OpenVINO; inferred or failed by OpenVINO's exception; a query's answer (its bytes
// follow) or OpenVINO's exception (its message follows).
constexpr char kCompiled = 'c', kRefused = 'r', kInferred = 'i', kFailed = 'f', kAnswered = 'q';

// The containment server of this process (started with the backend), or nullptr when calls are not contained.
std::unique_ptr<ForkServer>& containment_server() {
  static std::unique_ptr<ForkServer> server;
  return server;
}

void answer(int channel, char byte) { (void)channel_send(channel, &byte, 1); }

// PARITY_TEST_OPENVINO_QUERY_CRASH=<op type>, a test switch: the child of a contained query_model
// kills itself with SIGSEGV, before asking OpenVINO, when the model's main graph has a node of that
// op type. No model is known that crashes OpenVINO's query_model itself; this stands in for one,
// in the child only (the caller's handling of the child's end is the real one).
void crash_for_test(const openvino::QueryRequest& request) {
  const char* op_type = std::getenv("PARITY_TEST_OPENVINO_QUERY_CRASH");
  if (!op_type || !*op_type) return;
  ::onnx::ModelProto model;
  if (!model.ParseFromString(request.model_bytes)) return;
  for (const auto& node : model.graph().node())
    if (node.op_type() == op_type) std::raise(SIGSEGV);
}

// What runs in the server's child for each request.
void serve_request(openvino::Backend& backend, const std::string& bytes, int channel) {
  // A fault ends the child by its signal, whatever handler the parent set: the parent reports it,
  // and the child leaves no core file.
  for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(fault, SIG_DFL);
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  if (bytes.empty()) raise<InternalError>("an empty request to OpenVINO's containment server");
  const std::string body = bytes.substr(1);
  if (bytes[0] == kQuery) {
    const openvino::QueryRequest request = openvino::query_request_from(body);
    crash_for_test(request);
    openvino::QueryResult result;
    try {
      result = backend.query_model(request);
    } catch (const openvino::BackendFailure& failure) {
      answer(channel, kFailed);
      (void)channel_send_string(channel, failure.what());
      return;
    }
    answer(channel, kAnswered);
    (void)channel_send_string(channel, openvino::result_bytes(result));
    return;
  }
  std::unique_ptr<openvino::CompiledModel> compiled;
  try {
    compiled = backend.compile(openvino::compile_request_from(body));
  } catch (const openvino::BackendFailure&) {
    // OpenVINO's own refusal: the caller's compile meets it again and reports it.
    answer(channel, kRefused);
    return;
  }
  answer(channel, kCompiled);
  std::string input_bytes;
  if (!channel_receive_string(channel, input_bytes)) return;  // the caller wants no inference
  std::vector<std::unique_ptr<std::byte[]>> storage;
  const std::vector<openvino::InputBuffer> inputs = openvino::inputs_from(input_bytes, storage);
  // The caller shuts its end of the channel to cancel the inference (Ctrl-C in Python): a thread
  // waits for that and cancels the infer request. The model and the flag outlive this function:
  // the thread may still wake after it returned, until the process ends (it ends right after).
  static std::atomic<bool> inferring{true};
  openvino::CompiledModel* model = compiled.release();
  std::thread([channel, model] {
    char byte = 0;
    while (::recv(channel, &byte, 1, 0) < 0 && errno == EINTR) {
    }
    if (inferring) model->cancel();
  }).detach();
  try {
    (void)model->infer(inputs, /*cancellable=*/true);
  } catch (const openvino::BackendFailure&) {
    inferring = false;
    answer(channel, kFailed);  // the caller's inference meets it again and reports it (or was interrupted)
    return;
  }
  inferring = false;
  answer(channel, kInferred);
}

// The child's first answer; nullopt when its channel ended first (the child died).
std::optional<char> first_answer(ForkServer::Child& child) {
  char byte = 0;
  if (!channel_receive(child.channel(), &byte, 1)) return std::nullopt;
  return byte;
}

// Waits for the child: the signal that killed it, else 0. Rethrows what it threw; InterruptedError
// when Ctrl-C ended it.
int end_signal(ForkServer::Child& child, const char* doing) {
  const ChildProcessEnd end = child.wait();
  if (end.signal == SIGINT) raise<InterruptedError>("interrupted while OpenVINO {} the model", doing);
  if (end.thrown) end.thrown->rethrow();
  return end.signal;
}

// `model` cut to its main graph's first `count` nodes, every tensor they write that none of them
// reads (and every graph output they write) made a graph output, so that no node is dead code;
// `outputs` gets the graph outputs' names.
std::string prefix_model_bytes(const ::onnx::ModelProto& model, int count, std::vector<std::string>& outputs) {
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
  outputs.clear();
  for (const auto& node : graph.node())
    for (const auto& output : node.output()) {
      if (output.empty() || (read.count(output) && !graph_outputs.count(output))) continue;
      ::onnx::ValueInfoProto* info = graph.add_output();
      if (auto it = declared.find(output); it != declared.end()) *info = *it->second;
      else info->set_name(output);
      outputs.push_back(output);
    }
  return onnx::serialize_model(prefix);
}

// `request` for the prefix of `count` nodes of `model`; nothing marked.
openvino::CompileRequest prefix_request(const openvino::CompileRequest& request, const ::onnx::ModelProto& model,
                                        int count) {
  openvino::CompileRequest probe = request;
  probe.keep_conversion = false;
  probe.marked_outputs.clear();
  probe.marked_output_precisions.clear();
  probe.model_bytes = prefix_model_bytes(model, count, probe.graph_outputs);
  return probe;
}

// The signal that killed a child compiling `request` (0: none), and inferring `input_bytes` after
// the compile when given.
int compile_signal(const openvino::CompileRequest& request, const std::string* input_bytes) {
  ForkServer::Child child = containment_server()->start(kCompile + openvino::request_bytes(request));
  if (input_bytes && first_answer(child) == kCompiled && channel_send_string(child.channel(), *input_bytes))
    (void)first_answer(child);
  return end_signal(child, input_bytes ? "inferred" : "compiled");
}

// The first node of the main graph whose prefix of the graph crashes a call, found by bisection;
// nullopt when no prefix of the nodes crashes it (the crash needs the whole model).
std::optional<int> first_crashing_node(const ::onnx::ModelProto& model, const std::function<bool(int)>& crashes) {
  const int count = model.graph().node_size();
  if (count == 0 || !crashes(count)) return std::nullopt;
  return shortest_failing_prefix(count, crashes) - 1;
}

// The error for a call that crashed OpenVINO: `what` says the call ("compiling it"), `prefix` what
// was done to each prefix ("compiling the graph"), `node` the node bisection found.
template <typename ErrorType>
[[noreturn]] void raise_crash(const std::string& model_label, const char* what, const char* prefix, int signal,
                              const ::onnx::ModelProto& model, std::optional<int> node) {
  const std::string crash =
      fmt::format("OpenVINO crashed {} (signal {}{}, in a child process)", what, signal, signal_name(signal));
  if (!node)
    raise<ErrorType>("{}: {}; no prefix of the graph's nodes crashes it alone, so the node is not known",
                             model_label, crash);
  const ::onnx::NodeProto& at = model.graph().node(*node);
  std::string name = at.name();
  if (name.empty() && at.output_size() > 0) name = at.output(0);
  raise<ErrorType>("{}: {} at node '{}' ({}): {} up to this node crashes OpenVINO, up to the node before it does "
                   "not",
                   model_label, crash, name, at.op_type(), prefix);
}

}  // namespace

bool openvino_calls_contained() {
  const char* value = std::getenv("PARITY_OPENVINO_IN_PROCESS");
  return !(value && std::string_view(value) == "1");
}

void start_containment_server(openvino::Backend& backend) {
  if (!openvino_calls_contained() || containment_server()) return;
  containment_server() = std::make_unique<ForkServer>(
      [&backend](const std::string& bytes, int channel) { serve_request(backend, bytes, channel); },
      "OpenVINO's contained calls");
}

ContainedModel::ContainedModel(ForkServer::Child child, openvino::CompileRequest request, std::string model_label)
    : child_(std::move(child)), request_(std::move(request)), model_label_(std::move(model_label)) {
  request_.model_bytes.clear();
  request_.model_bytes.shrink_to_fit();
}

void ContainedModel::infer(const std::vector<openvino::InputBuffer>& inputs,
                           const std::function<::onnx::ModelProto()>& model) {
  if (!child_) return;
  ForkServer::Child child = std::move(*child_);
  child_.reset();
  const std::string input_bytes = openvino::input_bytes(inputs);
  std::optional<char> answered;
  {
    // Ctrl-C where it can interrupt (the Python module) cancels the child's inference.
    std::optional<InterruptWatch> watch;
    if (interrupt_watches_enabled()) watch.emplace([channel = child.channel()] { ::shutdown(channel, SHUT_WR); });
    if (channel_send_string(child.channel(), input_bytes)) answered = first_answer(child);
  }
  const int signal = end_signal(child, "inferred");
  if (interrupt_watches_enabled() && interrupt_requested())
    raise<InterruptedError>("{}: interrupted while OpenVINO inferred it in a child process", model_label_);
  if (answered || signal == 0) return;
  log::verbose("{}: OpenVINO's inference crashed (signal {}{}); looking for the first node that crashes it",
               model_label_, signal, signal_name(signal));
  const ::onnx::ModelProto proto = model();
  const std::optional<int> node = first_crashing_node(proto, [&](int count) {
    return compile_signal(prefix_request(request_, proto, count), &input_bytes) != 0;
  });
  raise_crash<InvalidInputError>(model_label_, "inferring it", "inferring the same inputs on the graph", signal, proto, node);
}

std::unique_ptr<ContainedModel> compile_in_child(const openvino::CompileRequest& request,
                                                 const ::onnx::ModelProto& model, const std::string& model_label) {
  if (!containment_server()) return nullptr;
  // Not into the caller's cache: a compiled model OpenVINO loads from its cache exports bytes it
  // cannot import again (`convert --openvino --ov-cache-dir` would write an unreadable file), so the
  // caller's own compile fills the cache as it would without the child.
  openvino::CompileRequest uncached = request;
  uncached.cache_dir.reset();
  ForkServer::Child child = containment_server()->start(kCompile + openvino::request_bytes(uncached));
  const std::optional<char> answered = first_answer(child);
  if (answered == kCompiled) return std::make_unique<ContainedModel>(std::move(child), std::move(uncached), model_label);
  const int signal = end_signal(child, "compiled");
  if (answered || signal == 0) return nullptr;
  log::verbose("{}: OpenVINO's compile crashed (signal {}{}); looking for the first node that crashes it", model_label,
               signal, signal_name(signal));
  const std::optional<int> node = first_crashing_node(model, [&](int count) {
    return compile_signal(prefix_request(uncached, model, count), nullptr) != 0;
  });
  raise_crash<InvalidInputError>(model_label, "compiling it", "compiling the graph", signal, model, node);
}

std::optional<openvino::QueryResult> query_in_child(const openvino::QueryRequest& request,
                                                    const ::onnx::ModelProto& model, const std::string& model_label) {
  if (!containment_server()) return std::nullopt;
  ForkServer::Child child = containment_server()->start(kQuery + openvino::request_bytes(request));
  const std::optional<char> answered = first_answer(child);
  std::string text;
  if (answered && channel_receive_string(child.channel(), text)) {
    (void)end_signal(child, "queried");
    if (*answered == kFailed) throw openvino::BackendFailure(openvino::BackendFailure::Kind::kOther, text);
    return openvino::query_result_from(text);
  }
  const int signal = end_signal(child, "queried");
  if (signal == 0) raise<InternalError>("{}: OpenVINO's contained query_model ended without an answer", model_label);
  log::verbose("{}: OpenVINO's query_model crashed (signal {}{}); looking for the first node that crashes it",
               model_label, signal, signal_name(signal));
  const std::optional<int> node = first_crashing_node(model, [&](int count) {
    openvino::QueryRequest prefix = request;
    std::vector<std::string> outputs;
    prefix.model_bytes = prefix_model_bytes(model, count, outputs);
    ForkServer::Child probe = containment_server()->start(kQuery + openvino::request_bytes(prefix));
    return end_signal(probe, "queried") != 0;
  });
  // An Error, not an InvalidInputError: a support query takes that for a part of the model that
  // cannot be cut out, and asks about smaller parts.
  raise_crash<Error>(model_label, "asking which of its nodes the device supports (query_model)",
              "asking about the graph", signal, model, node);
}

}  // namespace parity::runtime
