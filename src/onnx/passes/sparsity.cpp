#include "parity/onnx/sparsity.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "parity/core/dtype.h"
#include "parity/core/error.h"
#include "parity/core/half.h"
#include "parity/core/logger.h"
#include "parity/onnx/tensor_proto.h"

namespace parity::onnx {
namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

bool is_sparsity_dtype(int32_t data_type) {
  return data_type == TensorProto::FLOAT || data_type == TensorProto::FLOAT16 ||
         data_type == TensorProto::BFLOAT16;
}

// Collects the weights the main graph's MatMul/Gemm/Conv nodes read, with the axis of their runs.
class CandidateWalk {
 public:
  explicit CandidateWalk(const GraphProto& graph) : graph_(graph) {
    for (const auto& tensor : graph.initializer()) initializers_.emplace(tensor.name(), &tensor);
    for (const auto& node : graph.node())
      for (const auto& output : node.output()) producers_[output] = &node;
  }

  // Follows `name` back through axis-preserving producers (and Transpose) to an initializer.
  void track(std::string name, int64_t axis) {
    // Each step moves to a producer's input; a graph has no cycles, but a malformed one might.
    for (int step = 0; step <= graph_.node_size(); ++step) {
      if (initializers_.count(name)) {
        log::super_verbose("Tracking weight: ({})", name);
        auto [it, inserted] = axes_.emplace(name, axis);
        if (inserted) order_.push_back(name);
        else it->second = axis;
        return;
      }
      auto producer = producers_.find(name);
      if (producer == producers_.end()) return;
      const NodeProto& node = *producer->second;
      const std::string& op = node.op_type();
      static const std::set<std::string> kAxisPreserving = {"QuantizeLinear", "DequantizeLinear",
                                                            "TRT_FP8QuantizeLinear", "TRT_FP8DequantizeLinear", "Cast"};
      static const std::set<std::string> kStops = {"LayerNormalization", "Reshape", "Concat", "Slice", "Shape",
                                                   "Unsqueeze", "Gather", "Mul", "Add"};
      if (kAxisPreserving.count(op) && node.input_size() > 0) {
        log::ultra_verbose("({}) is produced by {}, looking back", name, op);
        name = node.input(0);
      } else if (op == "Transpose" && node.input_size() > 0) {
        log::ultra_verbose("({}) is produced by {}, checking attributes", name, op);
        auto perm_attribute = std::find_if(node.attribute().begin(), node.attribute().end(),
                                           [](const auto& attribute) { return attribute.name() == "perm"; });
        if (perm_attribute == node.attribute().end()) {
          log::warning("{} doesn't have <perm> attribute!", op);
          return;
        }
        std::vector<int64_t> perm(perm_attribute->ints().begin(), perm_attribute->ints().end());
        auto found = std::find(perm.begin(), perm.end(), axis);
        if (found == perm.end()) {
          log::warning("({}) produced by {}: <perm> {} does not contain axis {}", name, node.name(),
                       fmt::format("[{}]", fmt::join(perm, ", ")), axis);
          return;
        }
        int64_t new_axis = found - perm.begin();
        log::ultra_verbose("attribute <perm> is [{}], axis {} -> {}", fmt::join(perm, ", "), axis, new_axis);
        axis = new_axis;
        name = node.input(0);
      } else if (kStops.count(op)) {
        log::ultra_verbose("({}) produced by {} type {}. Stopping backward analysis.", name, node.name(), op);
        return;
      } else {
        log::warning("({}) produced by {} type: {} is unsupported!", name, node.name(), op);
        return;
      }
    }
  }

  void visit(const NodeProto& node) {
    const std::string& op = node.op_type();
    auto input = [&](int index) -> std::string { return index < node.input_size() ? node.input(index) : ""; };
    if (op == "MatMul") {
      track(input(0), 1);
      track(input(1), 0);
    } else if (op == "Gemm") {
      bool trans_a = false, trans_b = false;
      for (const auto& attribute : node.attribute()) {
        if (attribute.name() == "transA") trans_a = attribute.i() == 1;
        if (attribute.name() == "transB") trans_b = attribute.i() == 1;
      }
      track(input(0), trans_a ? 0 : 1);
      track(input(1), trans_b ? 1 : 0);
    } else if (op == "Conv") {
      track(input(1), 1);
    }
  }

  std::vector<SparsityCandidate> collected() const {
    std::vector<SparsityCandidate> out;
    for (const auto& name : order_) out.push_back({name, axes_.at(name)});
    return out;
  }
  const TensorProto& initializer(const std::string& name) const { return *initializers_.at(name); }

 private:
  const GraphProto& graph_;
  std::map<std::string, const TensorProto*> initializers_;
  std::map<std::string, const NodeProto*> producers_;
  std::map<std::string, int64_t> axes_;
  std::vector<std::string> order_;
};

// Outer count, length of the axis and stride of the axis for `shape` split at `axis`.
struct AxisLayout {
  int64_t outer = 1, length = 0, stride = 1;
};

AxisLayout layout_of(const Shape& shape, int64_t axis) {
  AxisLayout layout;
  layout.length = shape.at(axis);
  for (int64_t i = 0; i < axis; ++i) layout.outer *= shape[i];
  for (std::size_t i = axis + 1; i < shape.size(); ++i) layout.stride *= shape[i];
  return layout;
}

double magnitude_at(const TensorView& values, int64_t index) {
  switch (values.dtype()) {
    case DType::kFloat32:
      return std::fabs(static_cast<double>(values.data<float>()[index]));
    case DType::kFloat16:
      return std::fabs(static_cast<double>(float16_bits_to_float(values.data<uint16_t>()[index])));
    case DType::kBFloat16:
      return std::fabs(static_cast<double>(bfloat16_bits_to_float(values.data<uint16_t>()[index])));
    default:
      raise<UnsupportedError>("2:4 sparsity supports float32, float16 and bfloat16, not {}",
                              dtype_name(values.dtype()));
  }
}

// Calls fn(element indices of one run of 4) for every run along the axis.
template <typename Fn>
void for_each_run(const TensorView& values, int64_t axis, Fn&& fn) {
  if (axis < 0 || axis >= values.rank())
    raise<InvalidInputError>("axis {} is out of range for a tensor of rank {}", axis, values.rank());
  AxisLayout layout = layout_of(values.shape(), axis);
  if (layout.length % 4 != 0)
    raise<InvalidInputError>("axis {} has length {}, not a multiple of 4", axis, layout.length);
  const int64_t outer_stride = layout.length * layout.stride;
  for (int64_t outer = 0; outer < layout.outer; ++outer)
    for (int64_t inner = 0; inner < layout.stride; ++inner)
      for (int64_t start = 0; start < layout.length; start += 4) {
        std::array<int64_t, 4> indices;
        for (int64_t k = 0; k < 4; ++k) indices[k] = outer * outer_stride + (start + k) * layout.stride + inner;
        if (!fn(indices)) return;
      }
}

// The two smallest magnitudes of a run as Polygraphy finds them: Python's min() (the first of
// equal values; a NaN in first place wins), then min() again with the first one set to DBL_MAX.
struct TwoSmallest {
  int first = 0, second = 0;
  double first_magnitude = 0, second_magnitude = 0;
};

TwoSmallest two_smallest(const TensorView& values, const std::array<int64_t, 4>& indices) {
  std::array<double, 4> magnitudes;
  for (int k = 0; k < 4; ++k) magnitudes[k] = magnitude_at(values, indices[k]);
  auto python_min = [&] {
    int position = 0;
    for (int k = 1; k < 4; ++k)
      if (magnitudes[k] < magnitudes[position]) position = k;
    return position;
  };
  TwoSmallest result;
  result.first = python_min();
  result.first_magnitude = magnitudes[result.first];
  magnitudes[result.first] = DBL_MAX;
  result.second = python_min();
  result.second_magnitude = magnitudes[result.second];
  return result;
}

std::string python_list(const google::protobuf::RepeatedField<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

}  // namespace

std::vector<SparsityCandidate> find_sparsity_candidates(const GraphProto& graph, const std::set<std::string>& skip) {
  log::verbose("Walking graph to collect weights candidates.");
  CandidateWalk walk(graph);
  const int count = graph.node_size();
  for (int i = 0; i < count; ++i) {
    const auto& node = graph.node(i);
    log::super_verbose("Processing node {}/{} ({}): {}", i, count, node.op_type(), node.name());
    walk.visit(node);
  }
  auto collected = walk.collected();
  log::verbose("Collected {} weights candidates.", collected.size());
  log::verbose("Skipping tensors that are not eligible for pruning.");
  std::vector<SparsityCandidate> eligible;
  for (std::size_t i = 0; i < collected.size(); ++i) {
    const auto& candidate = collected[i];
    log::super_verbose("Processing tensor {}/{}: {} (axis {})", i + 1, collected.size(), candidate.name,
                       candidate.axis);
    const TensorProto& tensor = walk.initializer(candidate.name);
    if (skip.count(tensor.name())) {
      log::warning("Skipping tensor: {} since it was marked to skip pruning", tensor.name());
      continue;
    }
    if (!is_sparsity_dtype(tensor.data_type())) {
      log::warning("Skipping tensor: {} due to unsupported type: {}", tensor.name(),
                   dtype_name(dtype_from_onnx(tensor.data_type())));
      continue;
    }
    if (candidate.axis >= tensor.dims_size()) {
      // Polygraphy stops on an assertion here (a MatMul's 1-D A input, for one).
      log::warning("Skipping tensor: {} since it has no axis {} (dims {})", tensor.name(), candidate.axis,
                   python_list(tensor.dims()));
      continue;
    }
    int64_t length = tensor.dims(static_cast<int>(candidate.axis));
    if (length % 4 != 0) {
      log::verbose("Skipping {} since the length of axis {} ({} in {}) is not a multiple of 4. ", tensor.name(),
                   candidate.axis, length, python_list(tensor.dims()));
      continue;
    }
    eligible.push_back(candidate);
  }
  log::extra_verbose("Skipped {} of {} tensor(s) since they are not eligible for pruning. ",
                     collected.size() - eligible.size(), collected.size());
  log::info("Found: {} weight tensor(s) eligible for pruning.", eligible.size());
  return eligible;
}

bool follows_2_4_sparsity(const TensorView& values, int64_t axis) {
  bool sparse = true;
  for_each_run(values, axis, [&](const std::array<int64_t, 4>& indices) {
    TwoSmallest smallest = two_smallest(values, indices);
    sparse = smallest.first_magnitude == 0 && smallest.second_magnitude == 0;
    return sparse;
  });
  return sparse;
}

void prune_2_4(Tensor& values, int64_t axis) {
  const std::size_t element_size = storage_bytes(values.dtype(), 1);
  auto* bytes = static_cast<std::byte*>(values.mutable_raw());
  TensorView view = values.view();
  for_each_run(view, axis, [&](const std::array<int64_t, 4>& indices) {
    TwoSmallest smallest = two_smallest(view, indices);
    std::memset(bytes + indices[smallest.first] * element_size, 0, element_size);
    std::memset(bytes + indices[smallest.second] * element_size, 0, element_size);
    return true;
  });
}

namespace {

const TensorProto& main_graph_initializer(const GraphProto& graph, const std::string& name) {
  for (const auto& tensor : graph.initializer())
    if (tensor.name() == name) return tensor;
  raise<InternalError>("initializer '{}' not found", name);
}

}  // namespace

std::set<std::string> check_sparsity(const Model& model) {
  const GraphProto& graph = model->graph();
  auto candidates = find_sparsity_candidates(graph);
  log::start("Checking the sparsity pattern of {} tensors.", candidates.size());
  std::set<std::string> sparse;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& candidate = candidates[i];
    log::extra_verbose("Checking tensor {}/{}: {}", i + 1, candidates.size(), candidate.name);
    const TensorProto& proto = main_graph_initializer(graph, candidate.name);
    bool is_sparse = with_context(fmt::format("initializer '{}'", candidate.name), [&] {
      return follows_2_4_sparsity(tensor_from_proto(proto, model.base_dir).view(), candidate.axis);
    });
    if (is_sparse) {
      log::info("Found sparse tensor: {}", candidate.name);
      sparse.insert(candidate.name);
    } else {
      log::warning("Found non-sparse tensor: {}", candidate.name);
    }
  }
  log::finish("Finished checking {} tensors. ", candidates.size());
  return sparse;
}

int64_t prune_sparsity(Model& model, const std::set<std::string>& skip) {
  GraphProto& graph = *model->mutable_graph();
  auto candidates = find_sparsity_candidates(graph, skip);
  const int64_t count = static_cast<int64_t>(candidates.size());
  log::start("Pruning {} tensors.", count);
  std::map<std::string, TensorProto> pruned;
  for (int64_t i = 0; i < count; ++i) {
    const auto& candidate = candidates[i];
    log::extra_verbose("Pruning tensor {}/{}: {}", i + 1, count, candidate.name);
    const TensorProto& proto = main_graph_initializer(graph, candidate.name);
    with_context(fmt::format("initializer '{}'", candidate.name), [&] {
      Tensor values = Tensor::copy_of(tensor_from_proto(proto, model.base_dir).view());
      prune_2_4(values, candidate.axis);
      TensorProto replaced = tensor_to_proto(values.view(), proto.name());
      replaced.set_doc_string(proto.doc_string());
      pruned.emplace(candidate.name, std::move(replaced));
    });
  }
  log::finish("Finished pruning {} tensors. ", count);
  if (pruned.empty()) {
    log::verbose("No need to build new model object");
    return 0;
  }
  log::info("Replacing weights to build new model object...");
  for (auto& tensor : *graph.mutable_initializer())
    if (auto it = pruned.find(tensor.name()); it != pruned.end()) tensor = std::move(it->second);
  model->set_producer_name("parity surgeon prune");
  return count;
}

}  // namespace parity::onnx
