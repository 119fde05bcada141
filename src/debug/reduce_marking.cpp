// debug reduce's default algorithm, Polygraphy's: mark one node's outputs as the graph outputs (bisection or a
// linear scan over the nodes), then, over the nodes left, one node's inputs as the graph inputs; see
// parity/debug/reduce.h.
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "parity/core/logger.h"
#include "reduce_graph.h"

namespace parity::debug::reduce_internal {
namespace {

// Which node to mark next, and the failing candidate with the fewest nodes (the later one on a tie), as
// Polygraphy's BisectMarker and LinearMarker choose them. `invert` (the inputs phase) starts bisection with
// the last position known good, and a linear scan from the first node.
class Marker {
 public:
  Marker(ReduceMode mode, int count, bool invert)
      : mode_(mode), count_(count), invert_(invert), least_bad_nodes_(count + 1) {
    if (mode_ == ReduceMode::kBisect) {
      position_ = count / 2;
      good_ = invert ? count : 0;
      bad_ = invert ? 0 : count;
    } else {
      position_ = invert ? 0 : count - 1;
    }
  }

  int position() const { return position_; }

  void step(bool passed, int nodes) {
    if (!passed && nodes <= least_bad_nodes_) {
      least_bad_nodes_ = nodes;
      best_bad_ = position_;
    }
    if (mode_ == ReduceMode::kLinear) {
      position_ += invert_ ? 1 : -1;
      return;
    }
    // The midpoint rounded towards the bad end after a pass, towards the good end after a failure.
    (passed ? good_ : bad_) = position_;
    position_ = passed ? (good_ + bad_ + 1) / 2 : (good_ + bad_) / 2;
  }

  bool stop() const {
    if (mode_ == ReduceMode::kLinear) return position_ < 0 || position_ >= count_;
    return std::abs(good_ - bad_) <= 1;
  }

  std::optional<int> best_bad() const { return best_bad_ < 0 ? std::nullopt : std::optional<int>(best_bad_); }

 private:
  ReduceMode mode_;
  int count_;
  bool invert_;
  int position_ = 0, good_ = 0, bad_ = 0;
  int least_bad_nodes_;
  int best_bad_ = -1;
};

class MarkingReducer {
 public:
  MarkingReducer(const PreparedGraph& graph, CandidateChecks& checks)
      : graph_(graph), checks_(checks), options_(checks.options()) {}

  ReduceResult run(bool whole_model_passes) {
    ReduceResult result;
    bool failure_found = !whole_model_passes;
    std::vector<std::string> inputs = graph_.graph_inputs(), outputs = graph_.graph_outputs();
    std::vector<int> nodes(static_cast<std::size_t>(graph_.size()));
    for (int i = 0; i < graph_.size(); ++i) nodes[i] = i;

    if (options_.reduce_outputs) {
      auto best = search("outputs", nodes, /*invert=*/false,
                         [&](int node) { return graph_.mark(inputs, graph_.outputs_of(node), freeze()); });
      if (best) {
        outputs = graph_.outputs_of(*best);
        result.failing_node = graph_.describe(*best);
        failure_found = true;
        log::info("Failing node: {} (marking its outputs as the graph outputs gives the smallest failing candidate)",
                  result.failing_node);
      }
      // The nodes left for the inputs phase: those the outputs need.
      nodes = graph_.mark(inputs, outputs, /*freeze=*/false).nodes;
    }

    if (options_.reduce_inputs) {
      auto best = search("inputs", nodes, /*invert=*/true, [&](int node) {
        auto marked = graph_.variable_inputs_of(node);
        return graph_.mark(marked, outputs_without_producers_of(outputs, marked), freeze());
      });
      if (best) {
        inputs = graph_.variable_inputs_of(*best);
        outputs = outputs_without_producers_of(outputs, inputs);
        failure_found = true;
        log::info("Marking model inputs: {} (of {})", fmt::join(inputs, ", "), graph_.describe(*best));
      }
    }

    MarkedCandidate reduced = graph_.mark(inputs, outputs, freeze());
    result.reduced = build(reduced);
    std::set<std::string> original_inputs;
    for (const auto& input : graph_.graph_inputs()) original_inputs.insert(input);
    for (const auto& input : reduced.inputs)
      if (!original_inputs.count(input)) result.frozen_inputs.push_back(input);
    if (freeze()) {
      result.frozen_initializers = reduced.cut_off;
      result.frozen_initializers.insert(result.frozen_initializers.end(), reduced.folded.begin(),
                                        reduced.folded.end());
    }
    result.reduced_fails = failure_found;
    if (failure_found) result.min_good = checks_.last_passing();
    return result;
  }

 private:
  bool freeze() const { return options_.freeze_cut_branches; }

  // Polygraphy's mark_io for inputs: a graph output made by the producer of a marked input is no longer one
  // (the producer is cut off from the input, and would be left with some of its outputs only).
  std::vector<std::string> outputs_without_producers_of(const std::vector<std::string>& outputs,
                                                        const std::vector<std::string>& marked) const {
    std::set<std::string> dropped;
    for (const auto& input : marked)
      if (auto producer = graph_.producer(input)) {
        auto made = graph_.outputs_of(*producer);
        dropped.insert(made.begin(), made.end());
      }
    std::vector<std::string> kept;
    for (const auto& output : outputs)
      if (!dropped.count(output)) kept.push_back(output);
    return kept;
  }

  onnx::Model build(const MarkedCandidate& candidate) const {
    if (freeze()) announce_frozen(options_, candidate.frozen);
    return graph_.build(candidate, freeze());
  }

  // One phase: the marker's walk over `nodes`, each candidate checked; returns the node of the failing
  // candidate with the fewest nodes, if any failed.
  template <typename Mark>
  std::optional<int> search(const char* phase, const std::vector<int>& nodes, bool invert, const Mark& mark) {
    const int count = static_cast<int>(nodes.size());
    if (count == 0) return std::nullopt;
    Marker marker(options_.mode, count, invert);
    do {
      const int node = nodes[marker.position()];
      MarkedCandidate candidate = mark(node);
      std::string what = fmt::format("{} ({}) | marking the {} of {} | node {} of {}", phase,
                                     mode_name(options_.mode), phase, graph_.describe(node), marker.position() + 1,
                                     count);
      const int size = static_cast<int>(candidate.nodes.size());
      bool failed = false;
      if (candidate.nodes.empty()) {
        // Nothing to run (every output was dropped with a marked input's producer): counted as a pass.
        log::info("{} | no node left, counted as a pass without a check", what);
      } else {
        failed = checks_.fails(fmt::format("{}@{}", phase, node), what, size,
                               static_cast<int>(candidate.outputs.size()), [&] { return build(candidate); });
      }
      marker.step(!failed, size);
    } while (!marker.stop());
    auto best = marker.best_bad();
    if (!best) return std::nullopt;
    return nodes[*best];
  }

  const PreparedGraph& graph_;
  CandidateChecks& checks_;
  const ReduceOptions& options_;
};

}  // namespace

ReduceResult reduce_by_marking(const PreparedGraph& graph, CandidateChecks& checks, bool whole_model_passes) {
  return MarkingReducer(graph, checks).run(whole_model_passes);
}

}  // namespace parity::debug::reduce_internal
