// `parity surgeon extract`: cut a subgraph out of an ONNX model between chosen tensors
// (Polygraphy's surgeon extract). Shapes and dtypes given as `auto` come from the model, then (only
// when the model lacks them) ONNX shape inference, then one run of the reference runner
// (runtime::fallback_shape_inference; always, and overriding the model, with
// --force-fallback-shape-inference).
#include <set>

#include "args/data_loader_args.h"
#include "args/model_args.h"
#include "args/model_save_args.h"
#include "args/tensor_meta_parse.h"
#include "command.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/passes.h"
#include "parity/runtime/passes/fallback_shape_inference.h"

namespace parity::cli {
namespace {

class SurgeonExtractCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"surgeon", "extract"}; }
  std::string description() const override {
    return "Extract a subgraph from an ONNX model based on the specified inputs and outputs";
  }
  void add_options(CLI::App& app) override {
    model_.add_to(app);
    const char* group = "Subgraph";
    app.add_option("--inputs", inputs_,
                   "Input metadata for the subgraph: name:shape:dtype (shape like [1,3,224,224]; `auto` for shape "
                   "or dtype to take it from shape inference). Default: the model's inputs")
        ->group(group);
    app.add_option("--outputs", outputs_,
                   "Output metadata for the subgraph: name:dtype (`auto` allowed). Default: the model's outputs")
        ->group(group);
    app.add_flag("--force-fallback-shape-inference", force_fallback_,
                 "Take the metadata of every tensor from one run of the model on the reference runner (inputs from "
                 "the data loader options), not from the model or ONNX shape inference (which is then not run); "
                 "dynamic dims become those of the data")
        ->group("ONNX Model Loading")
        ->excludes("--no-shape-inference");
    data_loader_.add_to(app, DataLoaderFlags{.iterations = false,
                                             .input_shapes = "--model-input-shapes,--model-inputs",
                                             .input_shapes_help = "Shapes of the model's inputs for the fallback run "
                                                                  "(`auto` metadata shape inference cannot give, or "
                                                                  "--force-fallback-shape-inference): name:[dims]"});
    app.add_option("-o,--output", output_, "Path to save the subgraph")->required()->group("ONNX Model Saving");
    save_.add_to(app);
  }

  int run() override {
    std::vector<ParsedTensorArg> inputs, outputs;
    for (const auto& a : inputs_) inputs.push_back(parse_tensor_arg(a, true, true, "--inputs"));
    for (const auto& a : outputs_) outputs.push_back(parse_tensor_arg(a, false, true, "--outputs"));
    data_loader_.parse();
    // As in Polygraphy, shape inference runs only when the metadata asks for it (an `auto` the model
    // does not answer), and never with --force-fallback-shape-inference.
    const bool shape_inference_allowed = model_.shape_inference() && !force_fallback_;
    model_.disable_shape_inference();
    onnx::Model model = model_.load();
    auto& graph = *model->mutable_graph();
    if (inputs_.empty())
      for (const auto& [name, info] : onnx::graph_inputs(graph)) inputs.push_back({name, std::nullopt, std::nullopt});
    if (outputs_.empty())
      for (const auto& [name, info] : onnx::graph_outputs(graph)) outputs.push_back({name, std::nullopt, std::nullopt});
    check_tensors_exist(graph, inputs, outputs);

    auto infos = onnx::known_value_infos(graph);
    // Polygraphy's missing metadata: an input without dtype or shape, an output without dtype.
    auto missing = [&] {
      std::vector<std::string> names;
      auto lacks = [&](const ParsedTensorArg& t, bool wants_shape) {
        auto it = infos.find(t.name);
        bool dtype_missing = !t.dtype && (it == infos.end() || it->second.dtype == DType::kUndefined);
        bool shape_missing = wants_shape && !t.shape && (it == infos.end() || !it->second.shape);
        return dtype_missing || shape_missing;
      };
      for (const auto& t : inputs)
        if (lacks(t, true)) names.push_back(t.name);
      for (const auto& t : outputs)
        if (lacks(t, false)) names.push_back(t.name);
      return names;
    };
    if (shape_inference_allowed && !missing().empty()) {
      log::info("Running shape inference to derive shapes and/or data types for `auto` arguments.\n"
                "To avoid this, you can specify the shapes and data types explicitly.");
      ModelArgs::infer_shapes(model);
      infos = onnx::known_value_infos(graph);
    }
    std::map<std::string, TensorInfo> fallback;
    if (auto unresolved = missing(); !unresolved.empty() || force_fallback_) {
      if (force_fallback_)
        log::info("Forcing fallback shape inference. This will cause dynamic dimensions to become static.");
      else
        log::warning("Shape inference could not resolve {}; running the model on the reference runner to get them. "
                     "This may cause some dynamic dimensions to become static; give the metadata on the command "
                     "line to avoid it",
                     unresolved.size() == 1 ? "'" + unresolved[0] + "'"
                                            : std::to_string(unresolved.size()) + " tensors");
      auto data_loader = data_loader_.data_loader();
      auto metadata = runtime::fallback_shape_inference(model, [&](const TensorMetadata& model_inputs) {
        auto feeds = data_loader(model_inputs);
        if (feeds.empty()) raise<InvalidInputError>("the data loader gave no input for fallback shape inference");
        return feeds.front();
      });
      for (const auto& [name, info] : metadata) fallback[name] = info;
    }

    // What the user gave, else (unless forced) what the model or shape inference says, else the fallback run's.
    auto resolve = [&](const ParsedTensorArg& t, bool is_input) {
      onnx::ExtractTensor out{t.name, t.dtype, is_input ? t.shape : std::nullopt};
      const TensorInfo* info = nullptr;
      if (auto it = infos.find(t.name); it != infos.end() && !force_fallback_) info = &it->second;
      const TensorInfo* ran = nullptr;
      if (auto it = fallback.find(t.name); it != fallback.end()) ran = &it->second;
      if (!out.dtype) {
        if (info && info->dtype != DType::kUndefined) out.dtype = info->dtype;
        else if (ran) out.dtype = ran->dtype;
      }
      // Outputs take the fallback's shape only when it is forced, as in Polygraphy; otherwise an output
      // shape inference left unknown takes the rank the run saw, with unknown dims (ONNX's checker
      // wants a shape on graph outputs; Polygraphy leaves none).
      if (!out.shape && !t.shape) {
        if (info && info->shape) out.shape = info->shape;
        else if (ran && (is_input || force_fallback_)) out.shape = ran->shape;
        else if (ran && ran->shape) out.shape = std::vector<Dim>(ran->shape->size(), Dim::unknown());
      }
      return out;
    };
    std::vector<onnx::ExtractTensor> in_meta, out_meta;
    for (const auto& t : inputs) in_meta.push_back(resolve(t, true));
    for (const auto& t : outputs) out_meta.push_back(resolve(t, false));
    onnx::extract_subgraph(*model, in_meta, out_meta);
    log::info("Extracted subgraph: {} node(s), inputs:\n    {}\n    outputs:\n    {}", graph.node_size(),
              onnx::graph_inputs(graph).to_string(), onnx::graph_outputs(graph).to_string());
    save_.save(model, output_);
    return 0;
  }

 private:
  // Polygraphy: "Tensor: <name> does not exist in the model." before anything runs.
  static void check_tensors_exist(const ::onnx::GraphProto& graph, const std::vector<ParsedTensorArg>& inputs,
                                  const std::vector<ParsedTensorArg>& outputs) {
    std::set<std::string> known;
    for (const auto& n : graph.node())
      for (const auto& o : n.output()) known.insert(o);
    for (const auto& v : graph.input()) known.insert(v.name());
    for (const auto& t : graph.initializer()) known.insert(t.name());
    for (const auto* list : {&inputs, &outputs})
      for (const auto& t : *list)
        if (!known.count(t.name))
          raise<InvalidInputError>("tensor '{}' does not exist in the model (not a graph input, an initializer nor a "
                                   "node output)", t.name);
  }


  ModelArgs model_;
  ModelSaveArgs save_;
  DataLoaderArgs data_loader_;
  std::vector<std::string> inputs_, outputs_;
  bool force_fallback_ = false;
  std::string output_;
};

PARITY_REGISTER_COMMAND(SurgeonExtractCommand);

}  // namespace
}  // namespace parity::cli
