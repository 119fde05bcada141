// `parity surgeon extract`: cut a subgraph out of an ONNX model between chosen tensors
// (Polygraphy's surgeon extract). Shapes and dtypes given as `auto` come from ONNX shape
// inference, or, where it cannot resolve them, from one run of the reference runner.
#include <set>

#include "args/model_args.h"
#include "args/model_save_args.h"
#include "args/tensor_meta_parse.h"
#include "command.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/passes.h"
#include "parity/runtime/data_loader.h"
#include "parity/runtime/interpreter.h"

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
    app.add_option("--model-input-shapes,--model-inputs", model_input_shapes_,
                   "Shapes of the model's inputs for the fallback run that resolves `auto` metadata shape inference "
                   "cannot: name:[dims]")
        ->group(group);
    app.add_option("--seed", seed_, "Seed of the data loader used by the fallback run")->group(group);
    app.add_option("-o,--output", output_, "Path to save the subgraph")->required()->group("ONNX Model Saving");
    save_.add_to(app);
  }

  int run() override {
    std::vector<ParsedTensorArg> inputs, outputs;
    for (const auto& a : inputs_) inputs.push_back(parse_tensor_arg(a, true, true, "--inputs"));
    for (const auto& a : outputs_) outputs.push_back(parse_tensor_arg(a, false, true, "--outputs"));
    TensorMetadata model_shapes = parse_input_shapes(model_input_shapes_, "--model-input-shapes");
    onnx::Model model = model_.load();
    auto& graph = *model->mutable_graph();
    if (inputs_.empty())
      for (const auto& [name, info] : onnx::graph_inputs(graph)) inputs.push_back({name, std::nullopt, std::nullopt});
    if (outputs_.empty())
      for (const auto& [name, info] : onnx::graph_outputs(graph)) outputs.push_back({name, std::nullopt, std::nullopt});

    auto infos = onnx::known_value_infos(graph);
    // What still needs the fallback run.
    std::vector<std::string> unresolved;
    auto needs = [&](const ParsedTensorArg& t, bool wants_shape) {
      auto it = infos.find(t.name);
      bool dtype_missing = !t.dtype && (it == infos.end() || it->second.dtype == DType::kUndefined);
      bool shape_missing = wants_shape && !t.shape && (it == infos.end() || !it->second.shape);
      return dtype_missing || shape_missing;
    };
    for (const auto& t : inputs)
      if (needs(t, true)) unresolved.push_back(t.name);
    for (const auto& t : outputs)
      if (needs(t, true)) unresolved.push_back(t.name);
    std::map<std::string, TensorInfo> fallback;
    if (!unresolved.empty()) fallback = run_fallback(model, unresolved, model_shapes);

    auto resolve = [&](const ParsedTensorArg& t, bool with_shape) {
      onnx::ExtractTensor out{t.name, t.dtype, with_shape ? t.shape : std::nullopt};
      const TensorInfo* info = nullptr;
      if (auto it = infos.find(t.name); it != infos.end()) info = &it->second;
      const TensorInfo* ran = nullptr;
      if (auto it = fallback.find(t.name); it != fallback.end()) ran = &it->second;
      if (!out.dtype) {
        if (info && info->dtype != DType::kUndefined) out.dtype = info->dtype;
        else if (ran) out.dtype = ran->dtype;
      }
      if (with_shape && !out.shape) {
        if (info && info->shape) out.shape = info->shape;
        else if (ran) out.shape = ran->shape;
      }
      if (!with_shape) {  // outputs: the inferred shape, else the rank seen in the fallback run
        if (info && info->shape) {
          out.shape = info->shape;
        } else if (ran && ran->shape) {
          out.shape = std::vector<Dim>(ran->shape->size(), Dim::unknown());
        }
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
  // Runs the whole model once on the reference runner and records the dtype and shape of `names`.
  std::map<std::string, TensorInfo> run_fallback(const onnx::Model& model, const std::vector<std::string>& names,
                                                 const TensorMetadata& model_shapes) {
    log::info("Shape inference could not resolve {}; running the model on the reference runner to get them",
              names.size() == 1 ? "'" + names[0] + "'" : std::to_string(names.size()) + " tensors");
    std::set<std::string> known;
    for (const auto& n : model->graph().node())
      for (const auto& o : n.output()) known.insert(o);
    for (const auto& v : model->graph().input()) known.insert(v.name());
    for (const auto& t : model->graph().initializer()) known.insert(t.name());
    for (const auto& n : names)
      if (!known.count(n))
        raise<InvalidInputError>("tensor '{}' does not exist in the model (not a graph input, an initializer nor a "
                                 "node output)", n);
    runtime::DataLoaderOptions options;
    options.seed = seed_;
    for (const auto& [name, info] : model_shapes) {
      std::vector<int64_t> dims;
      for (const auto& d : *info.shape) dims.push_back(d.value ? *d.value : -1);
      options.input_shapes.emplace_back(name, dims);
    }
    runtime::DataLoader loader(options);
    runtime::Interpreter interpreter(model, runtime::InterpreterOptions{});
    auto feed_tensors = loader.generate(interpreter.input_metadata(), 0);
    runtime::NamedValues feed;
    for (auto& [name, t] : feed_tensors) feed.emplace_back(name, ops::Value::of(t));
    std::vector<std::string> intermediates;
    std::map<std::string, TensorInfo> infos;
    for (const auto& n : names) {
      auto it = std::find_if(feed_tensors.begin(), feed_tensors.end(), [&](const auto& p) { return p.first == n; });
      if (it != feed_tensors.end()) {
        infos[n] = info_of(it->second);
      } else {
        intermediates.push_back(n);
      }
    }
    if (!intermediates.empty()) {
      auto results = interpreter.run(feed, runtime::IntermediateOutputs::list(intermediates));
      for (auto& [name, value] : results)
        if (value.is_tensor() && std::find(names.begin(), names.end(), name) != names.end())
          infos[name] = info_of(value.tensor());
    }
    return infos;
  }

  static TensorInfo info_of(const Tensor& t) {
    TensorInfo info;
    info.dtype = t.dtype();
    std::vector<Dim> dims;
    for (int64_t d : t.shape()) dims.push_back(Dim::fixed(d));
    info.shape = std::move(dims);
    return info;
  }

  ModelArgs model_;
  ModelSaveArgs save_;
  std::vector<std::string> inputs_, outputs_, model_input_shapes_;
  uint32_t seed_ = 1;
  std::string output_;
};

PARITY_REGISTER_COMMAND(SurgeonExtractCommand);

}  // namespace
}  // namespace parity::cli
