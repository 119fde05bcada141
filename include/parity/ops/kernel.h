// Reference kernels: one function per op (or op family), registered in its own file with
// PARITY_KERNEL(domain, op_type, since_version, function). The interpreter picks, for a node in a
// model importing opset N of the node's domain, the registration with the largest since_version
// <= N. Kernels read the ONNX spec's attribute defaults from ONNX's schemas through KernelContext.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "parity/core/error.h"
#include "parity/ops/value.h"

namespace parity::ops {

// Bytes of physical memory on this machine.
int64_t physical_memory_bytes();
// The reference kernels' BLAS threads (OpenBLAS) follow parity::set_compute_threads
// (parity/core/thread_pool.h); until a setting is made, OpenBLAS keeps its own default.

struct ExecutionLimits {
  // Per tensor, refused before allocating. Default: as many float32 elements as fit in memory.
  int64_t max_elements = physical_memory_bytes() / 4;
  int64_t max_loop_iterations = 100000000;   // Loop trip count bound
  int max_subgraph_depth = 64;
};

class KernelContext {
 public:
  // Runs a subgraph (If/Loop/Scan bodies) with `inputs` bound to its formal inputs in order,
  // outer-scope values visible; returns its outputs in order.
  using SubgraphRunner =
      std::function<std::vector<Value>(const ::onnx::GraphProto&, std::vector<Value>)>;

  KernelContext(const ::onnx::NodeProto& node, int64_t opset, std::vector<const Value*> inputs,
                bool fp64, const ExecutionLimits& limits, SubgraphRunner subgraphs);

  const ::onnx::NodeProto& node() const { return node_; }
  int64_t opset() const { return opset_; }
  bool fp64() const { return fp64_; }  // --ref-precision fp64: compute float ops in double
  const ExecutionLimits& limits() const { return limits_; }

  // --- inputs (an omitted optional input has an empty name or is past the end) ---
  std::size_t num_inputs() const { return inputs_.size(); }
  bool has_input(std::size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Value& input_value(std::size_t i) const;
  const Tensor& input(std::size_t i) const;  // throws naming the node when missing / not a tensor

  // --- outputs ---
  std::size_t num_outputs() const { return static_cast<std::size_t>(node_.output_size()); }
  bool output_requested(std::size_t i) const {
    return i < num_outputs() && !node_.output(static_cast<int>(i)).empty();
  }
  // Allocates (zeroed) output i, checking the element count against the limit first.
  Tensor& allocate_output(std::size_t i, DType dtype, Shape shape);
  void set_output(std::size_t i, Tensor tensor);
  void set_output(std::size_t i, Value value);
  // The outputs produced (a Value of kind kNone for outputs not set); used by the interpreter.
  std::vector<Value> take_outputs();

  // --- attributes (defaults: the argument, else ONNX's schema default) ---
  const ::onnx::AttributeProto* attribute(const std::string& name) const;
  bool has_attribute(const std::string& name) const { return attribute(name) != nullptr; }
  int64_t attr_int(const std::string& name, std::optional<int64_t> fallback = std::nullopt) const;
  float attr_float(const std::string& name, std::optional<float> fallback = std::nullopt) const;
  std::string attr_string(const std::string& name,
                          std::optional<std::string> fallback = std::nullopt) const;
  std::vector<int64_t> attr_ints(const std::string& name,
                                 std::optional<std::vector<int64_t>> fallback = std::nullopt) const;
  std::vector<float> attr_floats(const std::string& name,
                                 std::optional<std::vector<float>> fallback = std::nullopt) const;
  std::vector<std::string> attr_strings(const std::string& name) const;  // empty when absent
  Tensor attr_tensor(const std::string& name) const;                     // throws when absent
  const ::onnx::GraphProto* attr_graph(const std::string& name) const;  // nullptr when absent

  std::vector<Value> run_subgraph(const ::onnx::GraphProto& graph, std::vector<Value> inputs) const {
    return subgraphs_(graph, std::move(inputs));
  }

  // "node 'conv1' (Conv)" for messages.
  std::string label() const;
  template <typename... A>
  [[noreturn]] void fail(fmt::format_string<A...> format, A&&... args) const {
    throw InvalidInputError(label() + ": " + fmt::format(format, std::forward<A>(args)...));
  }
  template <typename... A>
  [[noreturn]] void unsupported(fmt::format_string<A...> format, A&&... args) const {
    throw UnsupportedError(label() + ": " + fmt::format(format, std::forward<A>(args)...));
  }

 private:
  const ::onnx::AttributeProto* schema_default(const std::string& name) const;

  const ::onnx::NodeProto& node_;
  int64_t opset_;
  std::vector<const Value*> inputs_;
  std::vector<Tensor> output_tensors_;
  std::vector<Value> output_values_;
  bool fp64_;
  const ExecutionLimits& limits_;
  SubgraphRunner subgraphs_;
};

using KernelFn = void (*)(KernelContext&);

struct KernelRegistration {
  std::string domain;  // "" for ai.onnx
  std::string op_type;
  int since_version;
  KernelFn fn;
};

void register_kernel(KernelRegistration registration);
// The kernel for op_type in domain at `opset`, or nullptr.
KernelFn find_kernel(const std::string& domain, const std::string& op_type, int64_t opset);
std::vector<KernelRegistration> registered_kernels();

struct KernelRegistrar {
  KernelRegistrar(const char* domain, const char* op_type, int since, KernelFn fn) {
    register_kernel({domain, op_type, since, fn});
  }
};

#define PARITY_KERNEL_CONCAT_(a, b) a##b
#define PARITY_KERNEL_NAME_(id) PARITY_KERNEL_CONCAT_(kParityKernelRegistrar, id)
// Registers fn for (domain, op_type) from opset since_version on.
#define PARITY_KERNEL(domain, op_type, since_version, fn)                                  \
  static const ::parity::ops::KernelRegistrar PARITY_KERNEL_NAME_(__COUNTER__)(domain, op_type, \
                                                                          since_version, fn)

}  // namespace parity::ops
