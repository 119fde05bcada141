// ai.onnx.ml TreeEnsemble (opset 5): interior nodes compare one feature (LEQ, LT, GTE, GT, EQ,
// NEQ, set MEMBER), leaves add a weight to one target; per-target aggregation SUM / AVERAGE /
// MIN / MAX (a target no leaf reached stays 0, as in onnxruntime), then an optional post
// transform numbered as the spec says (onnxruntime swaps SOFTMAX=1 and LOGISTIC=2).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "parity/ops/dispatch.h"
#include "parity/ops/kernel.h"

namespace parity::ops {
namespace {

std::vector<double> tensor_doubles(const KernelContext& ctx, const Tensor& t) {
  std::vector<double> v(static_cast<std::size_t>(t.size()));
  dispatch<NumericTypes>(t.dtype(), ctx, [&]<typename T>() {
    for (int64_t i = 0; i < t.size(); ++i)
      v[static_cast<std::size_t>(i)] = static_cast<double>(static_cast<compute_t<T>>(t.data<T>()[i]));
  });
  return v;
}

struct Ensemble {
  std::vector<double> splits;
  std::vector<int64_t> features, modes, true_ids, false_ids, true_leaf, false_leaf, missing_true;
  std::vector<std::vector<double>> members;  // per node (MEMBER nodes only)
  std::vector<double> leaf_weights;
  std::vector<int64_t> leaf_targets;
  std::vector<int64_t> roots;
};

bool compare(const Ensemble& e, std::size_t node, double x) {
  if (std::isnan(x) && e.missing_true[node]) return true;
  const double s = e.splits[node];
  switch (e.modes[node]) {
    case 0: return x <= s;
    case 1: return x < s;
    case 2: return x >= s;
    case 3: return x > s;
    case 4: return x == s;
    case 5: return x != s;
    default: {
      const auto& m = e.members[node];
      return std::find(m.begin(), m.end(), x) != m.end();
    }
  }
}

void tree_ensemble(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.rank() != 2 && X.rank() != 1) ctx.fail("X must be [N, F], found shape {}", shape_to_string(X.shape()));
  const int64_t N = X.rank() == 2 ? X.shape()[0] : 1;
  const int64_t F = X.shape().back();
  Ensemble e;
  e.splits = tensor_doubles(ctx, ctx.attr_tensor("nodes_splits"));
  e.features = ctx.attr_ints("nodes_featureids");
  e.modes.clear();
  for (double m : tensor_doubles(ctx, ctx.attr_tensor("nodes_modes"))) e.modes.push_back(static_cast<int64_t>(m));
  e.true_ids = ctx.attr_ints("nodes_truenodeids");
  e.false_ids = ctx.attr_ints("nodes_falsenodeids");
  e.true_leaf = ctx.attr_ints("nodes_trueleafs");
  e.false_leaf = ctx.attr_ints("nodes_falseleafs");
  const std::size_t nodes = e.features.size();
  e.missing_true = ctx.has_attribute("nodes_missing_value_tracks_true")
                       ? ctx.attr_ints("nodes_missing_value_tracks_true")
                       : std::vector<int64_t>(nodes, 0);
  e.leaf_weights = tensor_doubles(ctx, ctx.attr_tensor("leaf_weights"));
  e.leaf_targets = ctx.attr_ints("leaf_targetids");
  e.roots = ctx.attr_ints("tree_roots");
  const int64_t targets = ctx.attr_int("n_targets");
  if (e.splits.size() != nodes || e.modes.size() != nodes || e.true_ids.size() != nodes ||
      e.false_ids.size() != nodes || e.true_leaf.size() != nodes || e.false_leaf.size() != nodes ||
      e.missing_true.size() != nodes)
    ctx.fail("the nodes_* attributes must all have {} entries", nodes);
  if (e.leaf_weights.size() != e.leaf_targets.size()) ctx.fail("leaf_weights and leaf_targetids differ in length");
  for (int64_t t : e.leaf_targets)
    if (t < 0 || t >= targets) ctx.fail("leaf target id {} is outside [0, {})", t, targets);
  for (std::size_t i = 0; i < nodes; ++i) {
    if (e.modes[i] < 0 || e.modes[i] > 6) ctx.fail("node {} has unknown mode {}", i, e.modes[i]);
    if (e.features[i] < 0 || e.features[i] >= F) ctx.fail("node {} uses feature {}, X has {}", i, e.features[i], F);
    auto check = [&](int64_t id, int64_t leaf) {
      const std::size_t limit = leaf ? e.leaf_weights.size() : nodes;
      if (id < 0 || static_cast<std::size_t>(id) >= limit)
        ctx.fail("node {} branches to invalid {} {}", i, leaf ? "leaf" : "node", id);
    };
    check(e.true_ids[i], e.true_leaf[i]);
    check(e.false_ids[i], e.false_leaf[i]);
  }
  // Set members, NaN-delimited, in the order MEMBER nodes appear.
  e.members.resize(nodes);
  if (std::count(e.modes.begin(), e.modes.end(), 6) > 0) {
    if (!ctx.has_attribute("membership_values")) ctx.fail("set membership nodes need 'membership_values'");
    std::vector<double> mv = tensor_doubles(ctx, ctx.attr_tensor("membership_values"));
    std::size_t pos = 0;
    for (std::size_t i = 0; i < nodes; ++i) {
      if (e.modes[i] != 6) continue;
      while (pos < mv.size() && !std::isnan(mv[pos])) e.members[i].push_back(mv[pos++]);
      if (pos >= mv.size()) ctx.fail("membership_values has fewer NaN-delimited sets than member nodes");
      ++pos;
    }
  }
  for (int64_t r : e.roots)
    if (r < 0 || static_cast<std::size_t>(r) >= nodes) ctx.fail("tree root {} is out of range", r);

  const int64_t agg = ctx.attr_int("aggregate_function");
  const int64_t post = ctx.attr_int("post_transform");
  if (agg < 0 || agg > 3) ctx.fail("aggregate_function {} is not one of 0..3", agg);
  if (post < 0 || post > 4) ctx.fail("post_transform {} is not one of 0..4", post);

  dispatch<FloatTypes>(X.dtype(), ctx, [&]<typename T>() {
    Tensor& out = ctx.allocate_output(0, X.dtype(), {N, targets});
    T* po = out.mutable_data<T>();
    const T* px = X.data<T>();
    std::vector<double> acc(static_cast<std::size_t>(targets));
    std::vector<char> hit(static_cast<std::size_t>(targets));
    for (int64_t n = 0; n < N; ++n) {
      std::fill(acc.begin(), acc.end(), 0.0);
      std::fill(hit.begin(), hit.end(), 0);
      const T* row = px + n * F;
      for (int64_t root : e.roots) {
        auto node = static_cast<std::size_t>(root);
        int64_t leaf = -1;
        if (e.true_leaf[node] && e.false_leaf[node] && e.true_ids[node] == e.false_ids[node]) leaf = e.true_ids[node];
        for (std::size_t steps = 0; leaf < 0; ++steps) {
          if (steps > nodes) ctx.fail("tree from root {} has a cycle", root);
          double x = static_cast<double>(static_cast<compute_t<T>>(row[e.features[node]]));
          bool go_true = compare(e, node, x);
          int64_t next = go_true ? e.true_ids[node] : e.false_ids[node];
          if (go_true ? e.true_leaf[node] : e.false_leaf[node]) leaf = next;
          else node = static_cast<std::size_t>(next);
        }
        const double w = e.leaf_weights[static_cast<std::size_t>(leaf)];
        const auto target = static_cast<std::size_t>(e.leaf_targets[static_cast<std::size_t>(leaf)]);
        double& a = acc[target];
        if (agg == 0) a += w / static_cast<double>(e.roots.size());
        else if (agg == 1) a += w;
        else if (agg == 2) a = hit[target] ? std::min(a, w) : w;
        else a = hit[target] ? std::max(a, w) : w;
        hit[target] = 1;
      }
      // Post transform.
      if (post == 1 || post == 3) {
        double mx = -std::numeric_limits<double>::infinity();
        for (double v : acc) mx = std::max(mx, v);
        double sum = 0.0;
        for (double& v : acc) {
          v = (post == 3 && v == 0.0) ? 0.0 : std::exp(v - mx);
          sum += v;
        }
        for (double& v : acc) v = sum > 0 ? v / sum : 0.0;
      } else if (post == 2) {
        for (double& v : acc) v = 1.0 / (1.0 + std::exp(-v));
      } else if (post == 4) {
        // probit: sqrt(2) * erfinv(2p - 1), by Newton iterations on erf.
        for (double& v : acc) {
          double y = 2.0 * v - 1.0, z = 0.0;
          if (y <= -1.0) z = -std::numeric_limits<double>::infinity();
          else if (y >= 1.0) z = std::numeric_limits<double>::infinity();
          else
            for (int it = 0; it < 60; ++it)
              z -= (std::erf(z) - y) / (2.0 / std::sqrt(std::numbers::pi) * std::exp(-z * z));
          v = std::sqrt(2.0) * z;
        }
      }
      for (int64_t t = 0; t < targets; ++t) po[n * targets + t] = convert<T>(acc[static_cast<std::size_t>(t)]);
    }
  });
}

}  // namespace

PARITY_KERNEL("ai.onnx.ml", "TreeEnsemble", 5, tree_ensemble);

}  // namespace parity::ops
