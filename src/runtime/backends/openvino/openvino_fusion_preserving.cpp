// OpenvinoRunner::compile_fusion_preserving (`mark fused`): marks that keep OpenVINO's fusions, found
// by compiling with marks and comparing the executed layers against the plain compile's.
#include <algorithm>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "openvino_backend.h"
#include "parity/core/logger.h"
#include "parity/onnx/model.h"
#include "parity/runtime/openvino/openvino_engine_report.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::runtime {
namespace {

// The marks of `layer`'s output tensors and of the layers up to `hops` steps downstream of it
// (`outputs`: fused_layer_outputs()).
std::set<std::string> marks_downstream(const std::string& layer, const std::vector<FusedLayerOutput>& outputs,
                                       int hops) {
  std::set<std::string> layers{layer};
  for (int hop = 0; hop < hops; ++hop) {
    std::set<std::string> tensors;
    for (const auto& output : outputs)
      if (layers.count(output.layer)) tensors.insert(output.tensor);
    std::set<std::string> wider = layers;
    for (const auto& output : outputs)
      for (const auto& input : output.inputs)
        if (tensors.count(input)) wider.insert(output.layer);
    layers = std::move(wider);
  }
  std::set<std::string> marks;
  for (const auto& output : outputs)
    if (layers.count(output.layer)) marks.insert(output.tensor);
  return marks;
}

// True when all a layer's change says is that the marked model executes other layers before it
// or besides (the trace of a change elsewhere: a layer that lost a fused op leaves that op standing
// on its own).
bool only_extra_layers(const ChangedLayer& layer) {
  if (layer.change.rfind("executed in the marked model only", 0) == 0) return true;
  static constexpr std::string_view kExtra = "the marked model executes '";
  std::size_t start = 0;
  while (start < layer.change.size()) {
    if (layer.change.compare(start, kExtra.size(), kExtra) != 0) return false;
    std::size_t end = layer.change.find("; ", start);
    start = end == std::string::npos ? layer.change.size() : end + 2;
  }
  return true;
}

}  // namespace

void OpenvinoRunner::compile_fusion_preserving() {
  fused_marks_.clear();
  marked_precisions_.clear();
  onnx::Model model = loader_();
  fused_model_bytes_ = onnx::serialize_model(*model.proto);
  struct Release {  // the serialized model and the kept conversion, however the compiles end
    OpenvinoRunner& runner;
    ~Release() {
      runner.fused_model_bytes_.clear();
      runner.fused_model_bytes_.shrink_to_fit();
      runner.backend_->drop_kept_conversion();
    }
  } release{*this};
  compile(IntermediateOutputs::none(), /*announce=*/false);
  const std::vector<openvino::ExecutedLayer> plain = executed_layers();
  const EngineReport report = describe_openvino_engine(*this, &model);
  fused_outputs_ = fused_layer_outputs(report, model);
  std::set<std::string> graph_outputs;
  for (const auto& output : model->graph().output()) graph_outputs.insert(output.name());
  std::set<std::string> excluded(options_.exclude_outputs.begin(), options_.exclude_outputs.end());
  std::set<std::string> candidates;
  for (const auto& output : fused_outputs_) {
    if (graph_outputs.count(output.tensor) || excluded.count(output.tensor)) continue;
    candidates.insert(output.tensor);
    if (output.output_precision == "bf16" || output.output_precision == "f16")
      marked_precisions_.emplace(output.tensor, output.output_precision);
  }
  // Marks whose Result changed a layer of the plain model, with the layers that changed. Each
  // round drops the marks around every changed layer at once, widening along the dataflow for a
  // layer that a round before left changed (a mark downstream can keep OpenVINO from moving an op
  // into it), so the rounds stay few however many blocks the model repeats.
  std::set<std::string> dropped;
  constexpr int kMaxRounds = 16, kFusionHops = 2, kMaxHops = 3;
  // Marks known to change their layer are left out before the first marked compile: those of
  // layers computing integers (shape arithmetic, int64 in ONNX and i32 in OpenVINO: a Result makes
  // OpenVINO run a copy of the layer and convert its output), and those of a layer OpenVINO moved
  // a Multiply of its own into (an attention scale moved into the K projection), with the two
  // layers after it, whose marks keep the Multiply from moving.
  std::map<std::string, std::string> left_out;  // tensor -> why
  for (const auto& output : fused_outputs_)
    if (candidates.count(output.tensor) && output.output_precision != "f32" && output.output_precision != "bf16" &&
        output.output_precision != "f16")
      left_out.emplace(output.tensor, fmt::format("OpenVINO computes it in {}", output.output_precision));
  for (std::size_t l = 0; l < report.layers.size(); ++l) {
    const EngineLayer& layer = report.layers[l];
    if (layer.kind != EngineLayer::Kind::kCompute) continue;
    auto is_multiply = [&](const std::string& op) { return op.rfind("Multiply_", 0) == 0 && op != layer.name; };
    if (!layer.onnx_nodes.empty() && std::any_of(layer.openvino_ops.begin(), layer.openvino_ops.end(), is_multiply)) {
      for (const auto& tensor : marks_downstream(layer.name, fused_outputs_, kFusionHops))
        if (candidates.count(tensor))
          left_out.emplace(tensor, fmt::format("OpenVINO moved a Multiply of its own into layer '{}'", layer.name));
      continue;
    }
    // Where OpenVINO's Multiply stands alone (it moved it next to a Split, say), the marks of the
    // layers executed after it up to where it came from keep it from moving: those of the next two
    // marked layers.
    if (layer.onnx_nodes.empty() && layer.dataflow_nodes.empty() && layer.name.rfind("Multiply_", 0) == 0) {
      int found = 0;
      for (std::size_t next = l + 1; next < report.layers.size() && found < kFusionHops; ++next) {
        bool marked = false;
        for (const auto& output : fused_outputs_)
          if (output.layer == report.layers[next].name && candidates.count(output.tensor)) {
            left_out.emplace(output.tensor,
                             fmt::format("OpenVINO moves its '{}' past this layer when it is not marked", layer.name));
            marked = true;
          }
        found += marked;
      }
    }
  }
  for (const auto& [tensor, why] : left_out) dropped.insert(tensor);
  std::vector<ChangedLayer> changed;
  std::map<std::string, int> hops_of;  // changed layer -> the dataflow steps its next drop starts from
  std::set<std::string> narrowed;      // changed layers that lost fused ops, once dropped the marks of those ops
  std::unordered_map<std::string, const ::onnx::NodeProto*> node_named;  // by node name and by output name
  for (const auto& node : model->graph().node()) {
    node_named.emplace(node.name(), &node);
    for (const auto& output : node.output()) node_named.emplace(output, &node);
  }
  int compiles = 1;
  for (int round = 0;; ++round) {
    fused_marks_.clear();
    for (const auto& output : fused_outputs_)
      if (candidates.count(output.tensor) && !dropped.count(output.tensor) &&
          std::find(fused_marks_.begin(), fused_marks_.end(), output.tensor) == fused_marks_.end())
        fused_marks_.push_back(output.tensor);
    compile(IntermediateOutputs::list(fused_marks_), /*announce=*/false);
    ++compiles;
    changed = changed_layers(plain, executed_layers());
    if (changed.empty()) break;
    // A layer that itself changed loses the marks of the tensors it writes and reads; left changed,
    // those ever wider around it; a layer of OpenVINO's own ops, writing no ONNX tensor, the marks of
    // the nearest marked layer after it (else before it) in execution order. Every such layer at
    // once, but for one next to marks this round drops (it may have changed through them), and
    // layers that only execute others before them wait for those to be settled.
    const std::size_t before = dropped.size();
    std::vector<ChangedLayer> causes;
    for (const auto& layer : changed)
      if (!only_extra_layers(layer)) causes.push_back(layer);
    if (causes.empty()) causes = changed;
    std::set<std::string> dropped_now;  // by this round: a layer next to them may have changed through them
    for (const auto& layer : causes) {
      const std::set<std::string> around = marks_around({layer}, fused_outputs_, 0);
      if (std::any_of(around.begin(), around.end(), [&](const std::string& tensor) { return dropped_now.count(tensor); }))
        continue;
      const std::size_t before_layer = dropped.size();
      const std::set<std::string> dropped_before = dropped;
      // A layer that lost fused ops first loses only the marks those ops read and write (a marked
      // residual keeps a convolution from fusing the Add that reads it, while the convolution's own
      // input and output stay markable), and none more where this round already drops one of them;
      // left changed, the marks around it, ever wider.
      if (!layer.lost_ops.empty() && narrowed.insert(layer.layer).second) {
        bool dropped_by_round = false;
        for (const auto& op : layer.lost_ops) {
          auto node = node_named.find(op);
          if (node == node_named.end()) continue;
          std::vector<std::string> tensors(node->second->input().begin(), node->second->input().end());
          tensors.insert(tensors.end(), node->second->output().begin(), node->second->output().end());
          for (const auto& tensor : tensors) {
            if (candidates.count(tensor)) dropped.insert(tensor);
            dropped_by_round = dropped_by_round || dropped_now.count(tensor);
          }
        }
        if (dropped_by_round && dropped.size() == before_layer) continue;
      }
      int& hops = hops_of[layer.layer];
      for (; hops <= kMaxHops && dropped.size() == before_layer; ++hops)
        for (const auto& tensor : marks_around({layer}, fused_outputs_, hops))
          if (candidates.count(tensor)) dropped.insert(tensor);
      for (const auto& tensor : dropped)
        if (!dropped_before.count(tensor)) dropped_now.insert(tensor);
      if (dropped.size() != before_layer) continue;
      auto is_changed = [&](const openvino::ExecutedLayer& executed) { return executed.name == layer.layer; };
      auto position = static_cast<std::size_t>(std::find_if(plain.begin(), plain.end(), is_changed) - plain.begin());
      auto drop_layer = [&](const std::string& name) {
        for (const auto& output : fused_outputs_)
          if (output.layer == name && candidates.count(output.tensor)) dropped.insert(output.tensor);
        return dropped.size() != before_layer;
      };
      bool found = false;
      for (std::size_t p = position + 1; !found && p < plain.size(); ++p) found = drop_layer(plain[p].name);
      for (std::size_t p = position; !found && p-- > 0;) found = drop_layer(plain[p].name);
    }
    std::vector<std::string> lines;
    for (const auto& layer : changed) lines.push_back(fmt::format("\n    layer '{}': {}", layer.layer, layer.change));
    if (dropped.size() == before || round + 1 == kMaxRounds) {
      log::warning("{}: --ov-outputs mark fused: marking still changes {} layer(s) of the plain model, so the "
                   "marked run may compute differently there:{}",
                   name(), changed.size(), fmt::join(lines, ""));
      break;
    }
    log::verbose("{}: --ov-outputs mark fused: marking changed {} layer(s); compiling again without the marks "
                 "around them:{}",
                 name(), changed.size(), fmt::join(lines, ""));
  }
  std::set<std::string> unmarkable(unmarkable_.begin(), unmarkable_.end());
  fused_unmarked_ = dropped;
  fused_unmarked_.insert(unmarkable.begin(), unmarkable.end());
  fused_unmarked_.insert(excluded.begin(), excluded.end());
  std::string lines;
  std::size_t marked = 0;
  for (const auto& output : fused_outputs_) {
    std::string status;
    if (excluded.count(output.tensor)) status = " (excluded)";
    else if (left_out.count(output.tensor))
      status = fmt::format(" (not marked: {}, so marking it changes a layer)", left_out.at(output.tensor));
    else if (dropped.count(output.tensor)) status = " (not marked: marking it changed a layer)";
    else if (unmarkable.count(output.tensor)) status = " (not marked: OpenVINO's model has no such tensor)";
    else ++marked;
    lines += fmt::format("\n    '{}' <- {}{}", output.tensor, output.description(), status);
  }
  log::info("{}: {} | --ov-outputs mark fused: {} of the {} tensor(s) the compiled model's layers write out are "
            "compared{} ({} compiles):{}",
            name(), compiled_line(), marked, fused_outputs_.size(),
            dropped.empty() ? ""
                            : fmt::format("; {} left unmarked because marking them changes a layer", dropped.size()),
            compiles, lines);
}

}  // namespace parity::runtime
