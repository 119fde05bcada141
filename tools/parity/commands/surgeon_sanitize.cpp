// `parity surgeon sanitize`: clean up, constant-fold (evaluated by the reference interpreter),
// override input shapes and topologically sort an ONNX model (Polygraphy's surgeon sanitize); the
// passes and their order are the library's (parity/runtime/passes/sanitize.h).
#include <charconv>
#include <optional>

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
#include "parity/onnx/unbounded_dds.h"
#include "parity/runtime/passes/sanitize.h"

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
    // As Polygraphy's loader does: the outputs first, then the bounds (on the graph they give).
    auto graph_outputs = [&model] {
      std::string text;
      for (const auto& output : model->graph().output()) text += output.SerializeAsString();
      return text;
    };
    const std::string loaded_outputs = graph_outputs();
    outputs_.apply(model, model_.path());
    if (upper_bounds) set_upper_bounds(*model->mutable_graph(), *upper_bounds);
    // The loader's shapes are inference's for the graph folding starts from, unless outputs or bounds changed it.
    const bool shapes_inferred = model_.shape_inference() && !upper_bounds &&
                                 graph_outputs() == loaded_outputs;
    runtime::SanitizeOptions options;
    options.model_name = model_.path();
    options.input_shapes = parse_input_shapes(override_shapes_, "--override-input-shapes");
    if (force_fallback_) {
      options.fallback_feed = [data_loader = data_loader_.data_loader()](const TensorMetadata& inputs) {
        auto feeds = data_loader(inputs);
        if (feeds.empty()) raise<InvalidInputError>("the data loader gave no input for fallback shape inference");
        return feeds.front();
      };
    }
    if (fold_constants_) {
      runtime::FoldOptions fold;
      if (!partitioning_.empty()) fold.partitioning = runtime::parse_fold_partitioning(partitioning_);
      fold.num_passes = num_passes_;
      fold.size_threshold = threshold;
      fold.fold_shapes = !no_fold_shapes_;
      fold.per_pass_shape_inference = !no_per_pass_inference_;
      fold.shape_inference = model_.shape_inference();
      fold.shapes_inferred = shapes_inferred;
      fold.allow_onnxruntime_shape_inference = model_.onnxruntime_shape_inference();
      fold.log_passes = true;
      options.fold = fold;
    }
    options.cleanup = cleanup_;
    options.toposort = toposort_;
    options.shape_inference = model_.shape_inference();
    options.allow_onnxruntime_shape_inference = model_.onnxruntime_shape_inference();
    runtime::sanitize(model, options);
    save_.save(model, output_);
    return 0;
  }

 private:
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
