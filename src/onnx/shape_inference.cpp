// ONNX's shape inference, run in a child process so that a crash in it (third-party code that hostile
// but legal models can drive out of bounds) is reported, not fatal.
//
// The child runs onnx::shape_inference::InferShapes on its copy of the model and writes back only
// what inference changes: the input, output and value_info entries of every graph, subgraphs
// included, in a fixed depth-first order. The parent copies them into its own model, which
// inference did not touch. When the child dies of a signal, a bisection over the main graph's node
// prefixes finds the first node whose inference crashes, so the message names it. Inference that
// runs past a time limit (PARITY_SHAPE_INFERENCE_TIME_LIMIT, 60 s) is killed and reported the same way.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "parity/core/bisect.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/core/process.h"
#include "parity/onnx/model.h"
#include "parity/onnx/slice_steps_check.h"

namespace parity::onnx {
namespace {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::ModelProto;

// The model's graphs, the main graph first, then each node's subgraphs depth first in node and
// attribute order: the same order in parent and child, whose models have the same nodes.
void collect_graphs(GraphProto& graph, std::vector<GraphProto*>& graphs) {
  graphs.push_back(&graph);
  for (auto& node : *graph.mutable_node())
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) collect_graphs(*attribute.mutable_g(), graphs);
      for (auto& subgraph : *attribute.mutable_graphs()) collect_graphs(subgraph, graphs);
    }
}

// Runs InferShapes in place; its exception's message, if it threw (the model keeps what inference
// filled in before it stopped).
std::string run_onnx_inference(ModelProto& model, bool data_propagation) {
  try {
    ::onnx::ShapeInferenceOptions options{/*check_type=*/false, /*error_mode=*/0, data_propagation};
    ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(), options);
    return {};
  } catch (const std::exception& error) {
    return error.what();
  }
}

// An anonymous file the child writes and the parent reads once the child has ended (a pipe would
// need reading while the child runs).
class SharedBuffer {
 public:
  SharedBuffer() : fd_(::memfd_create("parity-shape-inference", MFD_CLOEXEC)) {
    if (fd_ < 0) raise<ResourceLimitError>("cannot create a buffer for shape inference: {}", std::strerror(errno));
  }
  ~SharedBuffer() { ::close(fd_); }
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;

  // In the child: false when the bytes could not all be written.
  bool write(const std::string& bytes) const {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<std::size_t>(n);
    }
    return true;
  }

  std::string read() const {
    std::string bytes;
    char chunk[1 << 16];
    off_t offset = 0;
    for (;;) {
      const ssize_t n = ::pread(fd_, chunk, sizeof chunk, offset);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) raise<InternalError>("reading shape inference's result: {}", std::strerror(errno));
      if (n == 0) return bytes;
      bytes.append(chunk, static_cast<std::size_t>(n));
      offset += n;
    }
  }

 private:
  int fd_;
};

// Runs inference in a child process on its own image of `model`, cut to the first `prefix` nodes of
// the main graph when given. How the child crashed ("SIGSEGV", "exit status 1" under a sanitizer that
// reports the fault), or nullopt when it ended normally: then `delta`, when given, holds the graphs'
// entries and, in its `s`, InferShapes' error.
std::optional<std::string> infer_in_child(const ModelProto& model, bool data_propagation, std::optional<int> prefix,
                                          AttributeProto* delta, std::chrono::seconds time_limit) {
  SharedBuffer buffer;
  const ChildProcessEnd end = run_in_child_process(
      [&] {
        // A fault ends the child by its signal, whatever handler the parent set (a fuzzer's, a
        // sanitizer's): the parent reports it.
        for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(fault, SIG_DFL);
        // The child's memory is a copy of the parent's: inferring in place changes only the child's.
        auto& own = const_cast<ModelProto&>(model);
        if (prefix) {
          auto* nodes = own.mutable_graph()->mutable_node();
          nodes->DeleteSubrange(*prefix, nodes->size() - *prefix);
          own.mutable_graph()->clear_output();
        }
        AttributeProto result;
        result.set_type(AttributeProto::GRAPHS);
        result.set_s(run_onnx_inference(own, data_propagation));
        if (!delta) return;
        std::vector<GraphProto*> graphs;
        collect_graphs(*own.mutable_graph(), graphs);
        for (GraphProto* graph : graphs) {
          GraphProto* entries = result.add_graphs();
          entries->mutable_input()->Swap(graph->mutable_input());
          entries->mutable_output()->Swap(graph->mutable_output());
          entries->mutable_value_info()->Swap(graph->mutable_value_info());
        }
        if (!buffer.write(result.SerializeAsString()))
          raise<ResourceLimitError>("cannot pass shape inference's result back: {}", std::strerror(errno));
      },
      "ONNX shape inference", time_limit);
  if (end.timed_out) return fmt::format("it did not end within {} s", time_limit.count());
  if (end.signal != 0) return fmt::format("signal {}{}", end.signal, signal_name(end.signal));
  if (end.thrown) end.thrown->rethrow();
  if (end.exit_status != 0) return fmt::format("exit status {}", end.exit_status);
  if (delta && !delta->ParseFromString(buffer.read()))
    raise<InternalError>("ONNX shape inference's process returned an unreadable result");
  return std::nullopt;
}

// How long ONNX's shape inference may run before it is taken for hung (legal models exist on which
// it never ends): PARITY_SHAPE_INFERENCE_TIME_LIMIT seconds, 60 by default.
std::chrono::seconds inference_time_limit() {
  const char* text = std::getenv("PARITY_SHAPE_INFERENCE_TIME_LIMIT");
  if (!text || !*text) return std::chrono::seconds(60);
  char* end = nullptr;
  errno = 0;
  const long long seconds = std::strtoll(text, &end, 10);
  if (*end != '\0' || errno != 0 || seconds < 1 || seconds > 86'400)
    raise<InvalidInputError>("PARITY_SHAPE_INFERENCE_TIME_LIMIT={}: expected whole seconds from 1 to 86400", text);
  return std::chrono::seconds(seconds);
}

// The first node of the main graph whose inference crashes (or hangs): the shortest prefix of the
// nodes that still does ends with it. nullopt when no prefix does (it needed the whole graph).
// `hung`: the whole model's inference did not end in time; each prefix then gets at most 10 s, as
// inference that ends takes far less on any model, so that the search stays short.
std::optional<int> first_crashing_node(const ModelProto& model, bool data_propagation, bool hung) {
  const int count = model.graph().node_size();
  const std::chrono::seconds limit = hung ? std::min(inference_time_limit(), std::chrono::seconds(10))
                                          : inference_time_limit();
  auto crashes = [&](int prefix) {
    return infer_in_child(model, data_propagation, prefix, nullptr, limit).has_value();
  };
  // A hang of the whole model is not timed again (a crash is: the prefix drops the graph's outputs).
  if (count == 0 || (!hung && !crashes(count))) return std::nullopt;
  return shortest_failing_prefix(count, crashes) - 1;
}

}  // namespace

namespace {

bool data_propagation_is_safe(const ModelProto& model, bool warn) {
  const std::optional<std::string> unsafe_slice = slice_unsafe_for_data_propagation(model);
  if (unsafe_slice && warn) log::warning("Shape inference runs without data propagation: {}", *unsafe_slice);
  return !unsafe_slice.has_value();
}

std::string describe_crash(const ModelProto& model, bool data_propagation, const std::string& how, bool hung) {
  std::string where = "on this model";
  if (const auto index = first_crashing_node(model, data_propagation, hung)) {
    const auto& node = model.graph().node(*index);
    const std::string& name = node.name().empty() && node.output_size() > 0 ? node.output(0) : node.name();
    where = fmt::format("at node '{}' ({})", name, node.op_type());
  }
  if (hung) return fmt::format("ONNX's shape inference hung ({}) {}", how, where);
  return fmt::format("ONNX's shape inference crashed ({}) {}", how, where);
}

}  // namespace

std::optional<std::string> shape_inference_crash(const ModelProto& model) {
  const bool data_propagation = data_propagation_is_safe(model, /*warn=*/false);
  if (const auto crash = infer_in_child(model, data_propagation, std::nullopt, nullptr, inference_time_limit()))
    return describe_crash(model, data_propagation, *crash, crash->starts_with("it did not end"));
  return std::nullopt;
}

ShapeInferenceResult infer_shapes(ModelProto& model) {
  ShapeInferenceResult result;
  const bool data_propagation = data_propagation_is_safe(model, /*warn=*/true);
  AttributeProto delta;
  if (const auto crash = infer_in_child(model, data_propagation, std::nullopt, &delta, inference_time_limit())) {
    result.ok = false;
    result.error = describe_crash(model, data_propagation, *crash, crash->starts_with("it did not end")) +
                   "; no shapes were inferred";
    return result;
  }
  std::vector<GraphProto*> graphs;
  collect_graphs(*model.mutable_graph(), graphs);
  if (static_cast<std::size_t>(delta.graphs_size()) != graphs.size())
    raise<InternalError>("shape inference returned {} graphs for a model of {}", delta.graphs_size(), graphs.size());
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    GraphProto& entries = *delta.mutable_graphs(static_cast<int>(i));
    graphs[i]->mutable_input()->Swap(entries.mutable_input());
    graphs[i]->mutable_output()->Swap(entries.mutable_output());
    graphs[i]->mutable_value_info()->Swap(entries.mutable_value_info());
  }
  if (!delta.s().empty()) {
    result.ok = false;
    result.error = delta.s();
  }
  return result;
}

}  // namespace parity::onnx
