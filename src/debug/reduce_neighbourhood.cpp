// debug reduce --reduce-neighbourhood: Parity's three phases (outputs, neighbourhood, inputs) over the prepared
// graph; see parity/debug/reduce.h.
#include <fmt/format.h>

#include "parity/core/logger.h"
#include "reduce_graph.h"

namespace parity::debug::reduce_internal {
namespace {

class NeighbourhoodReducer {
 public:
  NeighbourhoodReducer(const PreparedGraph& graph, CandidateChecks& checks)
      : graph_(graph), checks_(checks), options_(checks.options()) {}

  ReduceResult run(bool whole_model_passes) {
    ReduceResult result;
    const int total = graph_.size();
    std::vector<int> all(static_cast<std::size_t>(total));
    for (int i = 0; i < total; ++i) all[i] = i;
    bool failure_found = !whole_model_passes;
    std::vector<int> nodes = all;
    std::vector<std::string> outputs = graph_.graph_outputs();

    if (options_.reduce_outputs && total > 1) {
      // Phase 1: the shortest failing prefix. `pass` is a prefix length known to pass, `fail` one
      // known to fail.
      int pass = 0, fail = total;
      auto try_prefix = [&](int length) {
        std::vector<int> prefix(all.begin(), all.begin() + length);
        return fails("outputs:" + std::to_string(length),
                     fmt::format("outputs ({}) | window [{}, {}] | first {} of {} nodes", mode_name(options_.mode),
                                 pass, fail, length, total),
                     prefix, graph_.unread_outputs(prefix));
      };
      if (options_.mode == ReduceMode::kBisect) {
        while (fail - pass > 1) {
          int middle = pass + (fail - pass) / 2;
          (try_prefix(middle) ? fail : pass) = middle;
        }
      } else {
        for (int length = total - 1; length > 0; --length) {
          if (!try_prefix(length)) {
            pass = length;
            break;
          }
          fail = length;
        }
      }
      // With a passing whole model, `fail` still at the end means that no prefix failed either.
      if (whole_model_passes && fail == total) {
        log::info("No prefix of the nodes fails the check: the graph outputs stay as they are");
      } else {
        failure_found = true;
        reduce_to_failing_node(fail, pass, all, nodes, outputs, result);
      }
    }

    if (options_.reduce_inputs && nodes.size() > 1) {
      // Phase 3: the shortest failing suffix; the outputs made by removed nodes are dropped.
      const int count = static_cast<int>(nodes.size());
      int fail = 0, pass = count;
      auto suffix_outputs = [&](int start) {
        std::set<std::string> made;
        for (int i = start; i < count; ++i)
          for (const auto& output : graph_.node(nodes[i]).output()) made.insert(output);
        std::vector<std::string> kept;
        for (const auto& output : outputs)
          if (made.count(output)) kept.push_back(output);
        return kept;
      };
      auto try_suffix = [&](int start) {
        std::vector<int> suffix(nodes.begin() + start, nodes.end());
        auto kept = suffix_outputs(start);
        suffix = graph_.needed(suffix, kept);
        if (kept.empty() || suffix.empty()) return false;
        return fails("inputs:" + std::to_string(start),
                     fmt::format("inputs ({}) | window [{}, {}] | last {} of {} nodes", mode_name(options_.mode),
                                 fail, pass, count - start, count),
                     suffix, kept);
      };
      if (options_.mode == ReduceMode::kBisect) {
        while (pass - fail > 1) {
          int middle = fail + (pass - fail) / 2;
          (try_suffix(middle) ? fail : pass) = middle;
        }
      } else {
        for (int start = 1; start < count; ++start) {
          if (!try_suffix(start)) break;
          fail = start;
        }
      }
      if (fail > 0) failure_found = true;
      outputs = suffix_outputs(fail);
      nodes = graph_.needed(std::vector<int>(nodes.begin() + fail, nodes.end()), outputs);
    }

    result.reduced = graph_.build(nodes, outputs, &result.frozen_inputs, options_.freeze_cut_branches,
                                  &result.frozen_initializers);
    result.reduced_fails = failure_found;
    // With no failing candidate there is no failure for a passing model to be close to.
    if (failure_found) result.min_good = checks_.last_passing();
    return result;
  }

 private:
  // Phases 1's outcome and phase 2: the prefix of `fail` nodes fails and that of `pass` nodes passes, so
  // the prefix's last node is the failing node; then only its ancestors, with only its outputs.
  void reduce_to_failing_node(int fail, int pass, const std::vector<int>& all, std::vector<int>& nodes,
                              std::vector<std::string>& outputs, ReduceResult& result) {
    const int failing = fail - 1;
    result.failing_node = graph_.describe(failing);
    log::info("Failing node: {} (the check passes on the {} node(s) before it and fails once it is added)",
              result.failing_node, pass);
    nodes.assign(all.begin(), all.begin() + fail);
    outputs = graph_.unread_outputs(nodes);
    std::vector<int> ancestors = graph_.ancestors(failing);
    std::vector<std::string> node_outputs = graph_.outputs_of(failing);
    if (ancestors.size() < nodes.size() || node_outputs.size() < outputs.size()) {
      if (fails("neighbourhood:" + std::to_string(failing),
                fmt::format("neighbourhood | the {} ancestor(s) of {}", ancestors.size(), result.failing_node),
                ancestors, node_outputs)) {
        nodes = std::move(ancestors);
        outputs = std::move(node_outputs);
      } else {
        log::info("The failing node's ancestors alone pass; keeping the prefix's outputs");
      }
    }
  }

  onnx::Model build(const std::vector<int>& nodes, const std::vector<std::string>& outputs) const {
    if (!options_.freeze_cut_branches) return graph_.build(nodes, outputs);
    std::vector<std::string> frozen;
    onnx::Model candidate = graph_.build(nodes, outputs, nullptr, true, &frozen);
    announce_frozen(options_, frozen);
    return candidate;
  }

  bool fails(const std::string& key, const std::string& what, const std::vector<int>& nodes,
             const std::vector<std::string>& outputs) {
    return checks_.fails(key, what, static_cast<int>(nodes.size()), static_cast<int>(outputs.size()),
                         [&] { return build(nodes, outputs); });
  }

  const PreparedGraph& graph_;
  CandidateChecks& checks_;
  const ReduceOptions& options_;
};

}  // namespace

ReduceResult reduce_by_neighbourhood(const PreparedGraph& graph, CandidateChecks& checks, bool whole_model_passes) {
  return NeighbourhoodReducer(graph, checks).run(whole_model_passes);
}

}  // namespace parity::debug::reduce_internal
