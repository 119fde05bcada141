#include "fold_partitions.h"

#include <algorithm>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/graph_order.h"

namespace parity::runtime {

FoldPartitioning parse_fold_partitioning(const std::string& text) {
  if (text == "basic") return FoldPartitioning::kBasic;
  if (text == "recursive") return FoldPartitioning::kRecursive;
  raise<InvalidInputError>("--partitioning: expected 'basic' or 'recursive', got '{}'", text);
}

namespace detail {
namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;

ValueTable evaluate_together(const onnx::Model& owner, const GraphProto& graph, const std::vector<int>& foldable,
                             const ConstantTable& constants, int64_t& failed_evaluations) {
  std::vector<const NodeProto*> nodes;
  for (int index : foldable) nodes.push_back(&graph.node(index));
  try {
    return evaluate_nodes(owner, nodes, constants, {});
  } catch (const Error& error) {
    ++failed_evaluations;
    log::warning("Inference failed. You may want to try enabling partitioning to see better results. "
                 "Note: Error was:\n{}", error.what());
    return {};
  }
}

class PartitionEvaluator {
 public:
  PartitionEvaluator(const onnx::Model& owner, const GraphProto& graph, const std::vector<int>& foldable,
                     const ConstantTable& constants, FoldPartitioning partitioning, int64_t& failed_evaluations)
      : owner_(owner), graph_(graph), constants_(constants), partitioning_(partitioning),
        failed_evaluations_(failed_evaluations) {
    std::unordered_set<int> foldable_set(foldable.begin(), foldable.end());
    for (int index : foldable)
      for (const auto& output : graph.node(index).output())
        if (!output.empty()) producer_[output] = index;
    // A result: a foldable node with an output that a graph output, a node that stays, or nothing reads.
    std::unordered_set<std::string> read_by_kept, read_by_foldable;
    for (int index = 0; index < graph.node_size(); ++index)
      for (const auto& read : onnx::node_reads(graph.node(index)))
        (foldable_set.count(index) ? read_by_foldable : read_by_kept).insert(read);
    for (const auto& output : graph.output()) read_by_kept.insert(output.name());
    for (int index : foldable) {
      const auto& outputs = graph.node(index).output();
      if (std::any_of(outputs.begin(), outputs.end(), [&](const std::string& name) {
            return !name.empty() && (read_by_kept.count(name) || !read_by_foldable.count(name));
          }))
        results_.push_back(index);
    }
  }

  ValueTable evaluate() {
    // Results in topological order; a failing one (recursive mode) queues the producers of its inputs.
    std::vector<int> pending(results_.rbegin(), results_.rend());
    std::unordered_set<int> tried;
    while (!pending.empty()) {
      int result = pending.back();
      pending.pop_back();
      if (!tried.insert(result).second || evaluated(result)) continue;
      std::vector<int> partition = unevaluated_ancestors(result);
      std::vector<const NodeProto*> nodes;
      for (int index : partition) nodes.push_back(&graph_.node(index));
      ValueTable known;
      for (int index : partition)
        for (const auto& read : onnx::node_reads(graph_.node(index)))
          if (auto it = values_.find(read); it != values_.end()) known.emplace(read, it->second);
      try {
        for (auto& [name, value] : evaluate_nodes(owner_, nodes, constants_, known)) values_[name] = std::move(value);
        continue;
      } catch (const Error& error) {
        ++failed_evaluations_;
        log::warning("Inference failed for subgraph: Folding: [{}]. Note: Error was:\n{}", quoted_outputs(result),
                     error.what());
      }
      if (partitioning_ != FoldPartitioning::kRecursive) {
        log::info("You may see better results if you set partitioning='recursive'");
        continue;
      }
      log::verbose("Attempting to recursively partition subgraph");
      const auto& reads = onnx::node_reads(graph_.node(result));
      for (auto it = reads.rbegin(); it != reads.rend(); ++it)
        if (auto producer = producer_.find(*it); producer != producer_.end()) pending.push_back(producer->second);
    }
    return std::move(values_);
  }

 private:
  bool evaluated(int index) const {
    const auto& outputs = graph_.node(index).output();
    return std::all_of(outputs.begin(), outputs.end(),
                       [&](const std::string& name) { return name.empty() || values_.count(name); });
  }

  // `result` and the foldable nodes it depends on whose values are not known yet, in graph order.
  std::vector<int> unevaluated_ancestors(int result) const {
    std::set<int> partition{result};
    std::vector<int> stack{result};
    while (!stack.empty()) {
      int index = stack.back();
      stack.pop_back();
      for (const auto& read : onnx::node_reads(graph_.node(index))) {
        auto producer = producer_.find(read);
        if (producer == producer_.end() || values_.count(read)) continue;
        if (partition.insert(producer->second).second) stack.push_back(producer->second);
      }
    }
    return {partition.begin(), partition.end()};
  }

  std::string quoted_outputs(int index) const {
    std::vector<std::string> names;
    for (const auto& name : graph_.node(index).output())
      if (!name.empty()) names.push_back("'" + name + "'");
    return fmt::format("{}", fmt::join(names, ", "));
  }

  const onnx::Model& owner_;
  const GraphProto& graph_;
  const ConstantTable& constants_;
  FoldPartitioning partitioning_;
  int64_t& failed_evaluations_;
  std::unordered_map<std::string, int> producer_;
  std::vector<int> results_;
  ValueTable values_;
};

}  // namespace

ValueTable evaluate_foldable_nodes(const onnx::Model& owner, const GraphProto& graph,
                                   const std::vector<int>& foldable, const ConstantTable& constants,
                                   FoldPartitioning partitioning, int64_t& failed_evaluations) {
  if (partitioning == FoldPartitioning::kNone)
    return evaluate_together(owner, graph, foldable, constants, failed_evaluations);
  return PartitionEvaluator(owner, graph, foldable, constants, partitioning, failed_evaluations).evaluate();
}

}  // namespace detail
}  // namespace parity::runtime
