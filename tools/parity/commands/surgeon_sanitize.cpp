// `parity surgeon sanitize`: clean up, constant-fold (evaluated by the reference interpreter),
// override input shapes and topologically sort an ONNX model (Polygraphy's surgeon sanitize).
#include <charconv>
#include <chrono>
#include <map>
#include <optional>
#include <set>

#include <fmt/ranges.h>

#include "args/thread_args.h"
#include "args/data_loader_args.h"
#include "args/model_args.h"
#include "args/model_save_args.h"
#include "args/output_marks.h"
#include "args/tensor_meta_parse.h"
#include "command.h"
#include "parity/core/python_format.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/passes.h"
#include "parity/onnx/unbounded_dds.h"
#include "parity/runtime/passes/fallback_shape_inference.h"
#include "parity/runtime/passes/fold_constants.h"
#include "parity/runtime/onnxrt/symbolic_shape_inference.h"

namespace parity::cli {
namespace {

class SurgeonSanitizeCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"surgeon", "sanitize"}; }
  std::string description() const override {
    return "Clean up, sanitize, constant-fold and topologically sort an ONNX model";
  }
  void add_options(CLI::App& app) override {
    model_.allow_onnxruntime_shape_inference();  // as Polygraphy's sanitize infers shapes
    model_.add_to(app);
    compute_.add_to(app);
    app.add_option("--override-input-shapes,--override-inputs", override_shapes_,
                   "Override input shapes: name:[d0,d1,...] (symbols for dynamic dims)")
        ->group("ONNX Model Loading");
    outputs_.add_to(app);
    app.add_option("--set-unbounded-dds-upper-bound", upper_bounds_,
                   "Bound tensors with unbounded data-dependent shapes (those `inspect model --list-unbounded-dds` "
                   "lists) by a Min node: [<tensor>:]<bound>. A bound without a name applies to every such tensor "
                   "not named; a named tensor is bounded even if it is not listed. Meant for models that are "
                   "constant-folded and shape-inferred")
        ->group("ONNX Model Loading");
    app.add_flag("--force-fallback-shape-inference", force_fallback_,
                 "Take every tensor's dtype and shape from one run of the model on the reference runner (inputs "
                 "from the data loader options), replacing the model's and ONNX shape inference's (which is then "
                 "not run); dynamic dims become those of the data")
        ->group("ONNX Model Loading")
        ->excludes("--no-shape-inference");
    data_loader_.add_to(app, DataLoaderFlags{.iterations = false, .input_shapes = ""});
    const char* fold = "Constant Folding";
    app.add_flag("--fold-constants", fold_constants_, "Fold constants (evaluated by the reference runner)")
        ->group(fold);
    fold_options_.push_back(app.add_option("--num-passes,--num-const-fold-passes", num_passes_,
                   "Number of constant folding passes (default: until nothing changes)")
        ->check(CLI::PositiveNumber)
        ->group(fold));
    fold_options_.push_back(app.add_option("--partitioning", partitioning_,
                   "What a node that fails to evaluate keeps from folding: by default, everything in its graph "
                   "(that pass); 'basic': only the partition it is in (a foldable result and the foldable nodes "
                   "it depends on); 'recursive': only the nodes that depend on it (failing partitions are split "
                   "again)")
        ->check(CLI::IsMember({"basic", "recursive"}))
        ->group(fold));
    fold_options_.push_back(app.add_flag("--no-fold-shapes", no_fold_shapes_,
                 "Do not fold Shape nodes (nor Gather/Slice of shapes) from inferred static shapes")
        ->group(fold));
    fold_options_.push_back(app.add_flag("--no-per-pass-shape-inference", no_per_pass_inference_,
                 "Run shape inference only before the first folding pass")
        ->group(fold));
    fold_options_.push_back(app.add_option("--fold-size-threshold", fold_size_threshold_,
                   "Largest tensor, in bytes, to fold (K, M, G suffixes allowed); larger ones stay computed")
        ->group(fold));
    const char* other = "Surgeon";
    app.add_flag("--cleanup", cleanup_, "Remove unused nodes, initializers and graph inputs")->group(other);
    app.add_flag("--toposort", toposort_, "Topologically sort the nodes")->group(other);
    app.add_option("-o,--output", output_, "Path to save the sanitized model")->required()->group("ONNX Model Saving");
    save_.add_to(app);
  }

  int run() override {
    compute_.apply();
    data_loader_.parse();
    if (!fold_constants_)
      for (const CLI::Option* option : fold_options_)
        if (option->count() > 0)
          log::warning("Argument: '{}' will be ignored since constant folding is not enabled.\n"
                       "This argument is only valid when the `--fold-constants` option is provided.",
                       option->get_name());
    // Polygraphy: no ONNX shape inference when the fallback gives the shapes.
    if (force_fallback_) model_.disable_shape_inference();
    std::optional<int64_t> threshold;
    if (!fold_size_threshold_.empty()) threshold = parse_num_bytes(fold_size_threshold_, "--fold-size-threshold");
    std::optional<onnx::UpperBounds> upper_bounds;
    if (!upper_bounds_.empty()) upper_bounds = parse_upper_bounds();
    onnx::Model model = model_.load();
    auto& graph = *model->mutable_graph();
    // As Polygraphy's loader does: the outputs first, then the bounds (on the graph they give).
    outputs_.apply(model, model_.path());
    if (upper_bounds) set_upper_bounds(graph, *upper_bounds);
    TensorMetadata overrides = parse_input_shapes(override_shapes_, "--override-input-shapes");
    if (!overrides.empty()) {
      cut_at_non_inputs(graph, overrides);
      onnx::override_input_shapes(graph, overrides);
      log::info("Overriding input shapes to:\n{}", onnx::graph_inputs(graph).to_string());
      // Every shape downstream of the inputs is stale, the graph outputs' included: shape inference
      // (when on) derives them again from the new input shapes, as in Polygraphy. A graph output that
      // is now a graph input too is the input's tensor, with its shape.
      onnx::clear_value_info(graph);
      std::map<std::string, ::onnx::TypeProto> input_types;
      for (const auto& input : graph.input()) input_types.emplace(input.name(), input.type());
      for (auto& output : *graph.mutable_output()) {
        if (auto input = input_types.find(output.name()); input != input_types.end())
          *output.mutable_type() = input->second;
        else if (output.type().has_tensor_type())
          output.mutable_type()->mutable_tensor_type()->clear_shape();
      }
      if (model_.shape_inference()) runtime::infer_shapes(model, model_.onnxruntime_shape_inference());
    }
    if (force_fallback_) {
      auto data_loader = data_loader_.data_loader();
      auto metadata = runtime::fallback_shape_inference(model, [&](const TensorMetadata& inputs) {
        auto feeds = data_loader(inputs);
        if (feeds.empty()) raise<InvalidInputError>("the data loader gave no input for fallback shape inference");
        return feeds.front();
      });
      runtime::set_shapes_from_metadata(graph, metadata);
    }
    if (fold_constants_) {
      runtime::FoldOptions options;
      if (!partitioning_.empty()) options.partitioning = runtime::parse_fold_partitioning(partitioning_);
      options.num_passes = num_passes_;
      options.size_threshold = threshold;
      options.fold_shapes = !no_fold_shapes_;
      options.per_pass_shape_inference = !no_per_pass_inference_;
      options.shape_inference = model_.shape_inference();
      options.allow_onnxruntime_shape_inference = model_.onnxruntime_shape_inference();
      options.log_passes = true;
      auto start = std::chrono::steady_clock::now();
      auto report = runtime::fold_constants(model, options);
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      log::info("    Total Nodes | Original: {:5}, After Folding: {:5} | {:5} Nodes Folded ({} pass(es), {} "
                "tensor(s) computed, {} from static shapes, {} If node(s) inlined) in {:.3f} s",
                report.nodes_before, report.nodes_after, report.nodes_before - report.nodes_after, report.passes,
                report.tensors_folded, report.shapes_folded, report.ifs_inlined, seconds);
      if (report.failed_evaluations)
        log::warning("{} evaluation(s) failed; the nodes they held were left in the graph (see the warnings above)",
                     report.failed_evaluations);
    }
    if (cleanup_) {
      auto report = onnx::cleanup(graph, onnx::CleanupOptions{.remove_unused_graph_inputs = true,
                                                              .recurse_subgraphs = true});
      log::info("Cleanup: removed {} node(s), {} initializer(s), {} unused graph input(s)", report.nodes_removed,
                report.initializers_removed, report.inputs_removed);
    }
    if (toposort_) {
      onnx::toposort(graph);
      // ONNX's shape inference reads nodes in order: sorted, it reaches the tensors an unsorted graph hid.
      if (model_.shape_inference()) runtime::infer_shapes(model, model_.onnxruntime_shape_inference());
    }
    save_.save(model, output_);
    return 0;
  }

 private:
  // --override-input-shapes naming a tensor that nodes compute but that is no graph input: as
  // Polygraphy does, the graph is cut there and the tensor becomes a graph input (appended after the
  // model's own), so the nodes only it needed are removed; a warning says so. A name that is no
  // tensor at all (or an initializer) is left for override_input_shapes to refuse (Polygraphy:
  // "Tensor: ... does not exist in the model").
  void cut_at_non_inputs(::onnx::GraphProto& graph, const TensorMetadata& requested) const {
    TensorMetadata inputs = onnx::graph_inputs(graph);
    std::set<std::string> computed;
    for (const auto& node : graph.node()) computed.insert(node.output().begin(), node.output().end());
    std::vector<std::string> cut;
    for (const auto& [name, info] : requested)
      if (!inputs.contains(name) && computed.count(name)) cut.push_back(name);
    if (cut.empty()) return;
    int64_t nodes_before = graph.node_size();
    with_context(fmt::format("--override-input-shapes ({})", model_.path()),
                 [&] { onnx::make_graph_inputs(graph, cut); });
    std::vector<std::string> quoted;
    for (const auto& name : cut) quoted.push_back(fmt::format("'{}'", name));
    log::warning("--override-input-shapes: {} not among the inputs of {}: the graph is cut there and the tensor(s) "
                 "become graph inputs, as in Polygraphy; {} node(s) that no graph output needs any more were removed",
                 fmt::join(quoted, ", "), model_.path(), nodes_before - graph.node_size());
  }

  // --set-unbounded-dds-upper-bound: "[<tensor>:]<bound>", the last colon splitting the name off.
  onnx::UpperBounds parse_upper_bounds() const {
    const char* flag = "--set-unbounded-dds-upper-bound";
    onnx::UpperBounds bounds;
    for (const auto& arg : upper_bounds_) {
      auto colon = arg.rfind(':');
      std::string name = colon == std::string::npos ? "" : arg.substr(0, colon);
      std::string text = colon == std::string::npos ? arg : arg.substr(colon + 1);
      int64_t bound = 0;
      auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), bound);
      if (text.empty() || error != std::errc() || end != text.data() + text.size())
        raise<InvalidInputError>("{}: '{}': the bound must be an integer, as in [<tensor>:]<bound> (1000, "
                                 "cast_out_6:4000)",
                                 flag, arg);
      if (name.empty()) {
        bounds.default_bound = bound;  // the last one given wins, as in Polygraphy
      } else {
        bounds.per_tensor.emplace_back(name, bound);
      }
    }
    return bounds;
  }

  void set_upper_bounds(::onnx::GraphProto& graph, const onnx::UpperBounds& bounds) const {
    auto report = with_context(fmt::format("--set-unbounded-dds-upper-bound ({})", model_.path()),
                               [&] { return onnx::set_unbounded_dds_upper_bounds(graph, bounds); });
    for (const auto& name : report.not_unbounded)
      log::warning("--set-unbounded-dds-upper-bound: tensor '{}' has no unbounded data-dependent shape; it is "
                   "bounded as asked",
                   name);
    std::vector<std::string> applied;
    for (const auto& [name, bound] : report.applied)
      applied.push_back(fmt::format("{}: {}", python_str_repr(name), bound));
    log::info("Set tensor upper bounds: {{{}}}", fmt::join(applied, ", "));
  }

  ModelArgs model_;
  SavedOutputsArgs outputs_{""};
  std::vector<std::string> upper_bounds_;
  ModelSaveArgs save_;
  ThreadArgs compute_;
  DataLoaderArgs data_loader_;
  bool force_fallback_ = false;
  std::string partitioning_;
  std::vector<const CLI::Option*> fold_options_;  // meaningful only with --fold-constants
  std::vector<std::string> override_shapes_;
  bool fold_constants_ = false;
  int num_passes_ = 0;
  bool no_fold_shapes_ = false;
  bool no_per_pass_inference_ = false;
  std::string fold_size_threshold_;
  bool cleanup_ = false;
  bool toposort_ = false;
  std::string output_;
};

PARITY_REGISTER_COMMAND(SurgeonSanitizeCommand);

}  // namespace
}  // namespace parity::cli
