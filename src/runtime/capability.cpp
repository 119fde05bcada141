#include "parity/runtime/capability.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/node_range.h"
#include "parity/onnx/passes.h"

namespace parity::runtime {
namespace {

bool is_control_flow(const ::onnx::NodeProto& node) {
  for (const auto& attribute : node.attribute())
    if (attribute.has_g() || attribute.graphs_size() > 0) return true;
  return false;
}

std::string node_label(const ::onnx::NodeProto& node, int index) {
  return node.name().empty() ? fmt::format("<node {}>", index) : node.name();
}

// `written` names `wanted` when equal, or when it is `wanted` behind a prefix the backend added
// ending in "__" (OpenVINO names inlined body nodes "If_0_then_branch__Inline_0__<name>").
bool names(const std::string& written, const std::string& wanted) {
  if (wanted.empty()) return false;
  if (written == wanted) return true;
  if (written.size() <= wanted.size() + 2 ||
      written.compare(written.size() - wanted.size(), wanted.size(), wanted))
    return false;
  return written.compare(written.size() - wanted.size() - 2, 2, "__") == 0;
}

// The body nodes (recursively) that `blamed` names.
void find_blamed(const ::onnx::NodeProto& node, const std::string& prefix,
                 const SupportAnswer& answer, std::vector<BodyNodeFailure>& found, int depth) {
  if (depth > 64) return;
  for (const auto& attribute : node.attribute()) {
    std::vector<const ::onnx::GraphProto*> bodies;
    if (attribute.has_g()) bodies.push_back(&attribute.g());
    for (const auto& graph : attribute.graphs()) bodies.push_back(&graph);
    for (const auto* body : bodies) {
      const std::string path = prefix.empty() ? attribute.name() : prefix + "/" + attribute.name();
      for (int index = 0; index < body->node_size(); ++index) {
        const auto& inner = body->node(index);
        for (const auto& [written, reason] : answer.blamed) {
          bool hit = names(written, inner.name());
          for (const auto& output : inner.output()) hit = hit || names(written, output);
          if (hit) found.push_back({path, node_label(inner, index), inner.op_type(), reason});
        }
        for (const auto& [op_type, reason] : answer.blamed_op_types)
          if (inner.op_type() == op_type)
            found.push_back({path, node_label(inner, index), inner.op_type(), reason});
        find_blamed(inner, path, answer, found, depth + 1);
      }
    }
  }
}

struct Range {
  bool supported;
  int begin, end;
};

class Partitioner {
 public:
  Partitioner(const onnx::Model& model, SupportQuery& query, CapabilityReport& report)
      : model_(model), query_(query), report_(report) {}

  std::vector<Range> partition(int begin, int end) {
    SupportAnswer answer = ask(begin, end);
    if (answer.converted) return per_op(begin, end, answer);
    if (end - begin == 1) {
      record_unsupported(begin, answer);
      return {{false, begin, end}};
    }
    const int middle = begin + (end - begin) / 2;
    std::vector<Range> left = partition(begin, middle);
    std::vector<Range> right = partition(middle, end);
    if (left.back().supported && right.front().supported) {
      SupportAnswer joined = ask(left.back().begin, right.front().end);
      if (joined.converted && joined.unsupported_tensors.empty()) {
        left.back().end = right.front().end;
        right.erase(right.begin());
      } else {
        report_.notes.push_back(
            fmt::format("{} and {} convert apart but not together: {}",
                        onnx::describe_node_range(left.back().begin, left.back().end),
                        onnx::describe_node_range(right.front().begin, right.front().end),
                        joined.converted ? joined.unsupported_reason : joined.reason));
      }
    }
    left.insert(left.end(), right.begin(), right.end());
    return left;
  }

 private:
  SupportAnswer ask(int begin, int end) {
    ++queries_;
    try {
      onnx::Model part = begin == 0 && end == model_->graph().node_size()
                             ? model_
                             : onnx::extract_node_range(model_, begin, end);
      SupportAnswer answer = query_.query(part);
      log::verbose("{}: {} {}", report_.backend, onnx::describe_node_range(begin, end),
                   answer.converted ? "convert" : "do not convert: " + answer.reason);
      return answer;
    } catch (const InvalidInputError& error) {
      SupportAnswer answer;
      answer.converted = false;
      answer.reason = fmt::format("cannot be cut out of the model: {}", error.what());
      answer.detail = answer.reason;
      return answer;
    }
  }

  std::vector<Range> per_op(int begin, int end, const SupportAnswer& answer) {
    std::set<std::string> unsupported(answer.unsupported_tensors.begin(),
                                      answer.unsupported_tensors.end());
    std::vector<Range> ranges;
    for (int index = begin; index < end; ++index) {
      const auto& node = model_->graph().node(index);
      bool supported =
          std::none_of(node.output().begin(), node.output().end(),
                       [&](const std::string& output) { return unsupported.count(output) > 0; });
      if (!supported) {
        SupportAnswer refusal;
        refusal.converted = false;
        refusal.reason = refusal.detail = answer.unsupported_reason;
        record_unsupported(index, refusal);
      }
      if (!ranges.empty() && ranges.back().supported == supported)
        ranges.back().end = index + 1;
      else
        ranges.push_back({supported, index, index + 1});
    }
    return ranges;
  }

  void record_unsupported(int index, const SupportAnswer& answer) {
    const auto& node = model_->graph().node(index);
    UnsupportedNode unsupported;
    unsupported.index = index;
    unsupported.name = node_label(node, index);
    unsupported.op_type = node.op_type();
    unsupported.reason = answer.reason;
    unsupported.detail = answer.detail;
    unsupported.control_flow = is_control_flow(node);
    if (unsupported.control_flow) find_blamed(node, "", answer, unsupported.body_failures, 0);
    report_.unsupported.push_back(std::move(unsupported));
  }

  const onnx::Model& model_;
  SupportQuery& query_;
  CapabilityReport& report_;
  int queries_ = 0;
};

std::string pad(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

}  // namespace

std::string CapabilityPartition::file_name() const {
  return fmt::format("{}_subgraph-nodes-{}-{}.onnx", supported ? "supported" : "unsupported", begin,
                     end - 1);
}

onnx::Model prepare_for_partitioning(onnx::Model model, bool infer_shapes) {
  onnx::Model prepared;
  prepared.proto = std::make_shared<::onnx::ModelProto>(*model.proto);
  prepared.path = model.path;
  prepared.base_dir = model.base_dir;
  onnx::load_external_data(prepared);
  onnx::toposort(*prepared->mutable_graph());
  if (!infer_shapes) return prepared;
  auto inference = onnx::infer_shapes(*prepared.proto);
  if (!inference.ok)
    log::warning("Shape inference stopped early ({}); cuts at untyped tensors will fail",
                 inference.error);
  return prepared;
}

CapabilityReport analyze_capability(const onnx::Model& prepared, SupportQuery& query) {
  CapabilityReport report;
  report.backend = query.backend_name();
  const auto& graph = prepared->graph();
  report.node_count = graph.node_size();
  if (report.node_count == 0)
    raise<InvalidInputError>("the graph of {} has no nodes", prepared.path.string());
  std::set<std::string> initializers;
  for (const auto& initializer : graph.initializer()) initializers.insert(initializer.name());
  for (const auto& input : graph.input()) {
    if (initializers.count(input.name())) continue;
    if (!input.type().has_tensor_type())
      raise<InvalidInputError>("input '{}' of {} is not a tensor: {} takes tensors only",
                               input.name(), prepared.path.string(), report.backend);
    auto dtype = static_cast<DType>(input.type().tensor_type().elem_type());
    if (auto refusal = query.refuse_input_type(dtype))
      raise<InvalidInputError>(
          "input '{}' of {} is {}: {}; the nodes reading it cannot be placed on {} and a "
          "graph input cannot be handed to it from another backend",
          input.name(), prepared.path.string(), dtype_name(dtype), *refusal, report.backend);
  }
  Partitioner partitioner(prepared, query, report);
  for (const Range& range : partitioner.partition(0, report.node_count)) {
    if (!report.partitions.empty() && !range.supported && !report.partitions.back().supported)
      report.partitions.back().end = range.end;
    else
      report.partitions.push_back({range.supported, range.begin, range.end});
  }
  return report;
}

std::string CapabilityReport::summary() const {
  if (fully_supported())
    return fmt::format("Graph is fully supported by {}; Will not generate subgraphs.", backend);
  // Rows per (op type, reason), in the order first met.
  struct Row {
    std::string op_type, reason;
    std::vector<std::string> nodes;
  };
  std::vector<Row> rows;
  for (const auto& node : unsupported) {
    auto row = std::find_if(rows.begin(), rows.end(), [&](const Row& row) {
      return row.op_type == node.op_type && row.reason == node.reason;
    });
    if (row == rows.end())
      rows.push_back({node.op_type, node.reason, {node.name}});
    else
      row->nodes.push_back(node.name);
  }
  std::size_t op_width = std::string("Operator ").size(),
              reason_width = std::string("Reason").size();
  for (const auto& row : rows) {
    op_width = std::max(op_width, row.op_type.size());
    reason_width = std::max(reason_width, row.reason.size());
  }
  std::string text = "===== Summary =====\n";
  std::string header = fmt::format("{}| {:7} | {} | Nodes\n", pad("Operator", op_width), "Count",
                                   pad("Reason", reason_width));
  text += header + std::string(header.size() - 1, '-') + "\n";
  for (const auto& row : rows)
    text += fmt::format("{}| {:7} | {} | {}\n", pad(row.op_type, op_width), row.nodes.size(),
                        pad(row.reason, reason_width), fmt::join(row.nodes, ", "));
  for (const auto& node : unsupported) {
    if (!node.control_flow) continue;
    text += fmt::format(
        "\n{} ({}) is unsupported as a whole: a control-flow node runs on one backend, bodies "
        "included.",
        node.name, node.op_type);
    if (node.body_failures.empty()) {
      text += fmt::format(" {}'s message names none of its body nodes.\n", backend);
      continue;
    }
    text += fmt::format(" {} fails on these nodes of its bodies:\n", backend);
    for (const auto& failure : node.body_failures)
      text += fmt::format("    {}: {} ({}): {}\n", failure.body, failure.node_name, failure.op_type,
                          failure.reason);
  }
  if (!notes.empty()) {
    text += "\n";
    for (const auto& note : notes) text += note + "\n";
  }
  text += "\nSubgraphs, in topological order:\n";
  for (const auto& partition : partitions)
    text += fmt::format("    {} {}{}\n", pad(partition.file_name(), 44),
                        onnx::describe_node_range(partition.begin, partition.end),
                        partition.supported ? "" : " (unsupported)");
  return text;
}

}  // namespace parity::runtime
