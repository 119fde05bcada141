// `parity inspect model`: a model's summary, inputs and outputs, and with --show its nodes,
// attributes (subgraphs among them) and weights, in Polygraphy's text by default. With --openvino,
// or for a compiled OpenVINO model file (.ovc), what OpenVINO executes instead
// (parity/runtime/openvino/openvino_engine_report.h).
#include <algorithm>
#include <filesystem>
#include <optional>

#include "args/model_args.h"
#include "args/openvino_args.h"
#include "args/tensor_meta_parse.h"
#include "command.h"
#include "display/parity_onnx_text.h"
#include "display/polygraphy_onnx_text.h"
#include "display/unbounded_dds_text.h"
#include "parity/core/logger.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/runtime/openvino/openvino_compiled_file.h"
#include "parity/runtime/openvino/openvino_engine_report.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::cli {
namespace {

class InspectModelCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"inspect", "model"}; }
  std::string description() const override {
    return "Display information about a model, including inputs and outputs, as well as layers and their "
           "attributes";
  }
  void add_options(CLI::App& app) override {
    model_.add_to(app, /*shape_inference_by_default=*/false);
    app.add_option("--show", show_,
                   "Controls what is displayed: 'layers': basic layer information like name, op, inputs and "
                   "outputs; 'attrs': per-layer attributes, subgraphs among them (needs 'layers'); 'weights': "
                   "all weights in the model, and with 'layers' also per-layer constants. More than one may be "
                   "given")
        ->check(CLI::IsMember({"layers", "attrs", "weights"}))
        ->group("Display");
    app.add_flag("--openvino", openvino_,
                 "Compile the ONNX model with OpenVINO (with the --ov-* options) and show what it executes: a "
                 "summary, and with --show layers the layers in order with their kernels, precisions and the ONNX "
                 "nodes fused into each (--show layers attrs: also OpenVINO's original op names). Implied for a "
                 "compiled model file (.ovc)")
        ->group("OpenVINO Compilation");
    openvino_args_.add_to(app);
    app.add_option("--input-shapes,--inputs", input_shapes_,
                   "With --openvino: input shapes, as run takes them (<name>:[d0,d1,...] ...): the model is "
                   "compiled for these static shapes (as --ov-min-shapes and --ov-max-shapes both set to them)")
        ->group("OpenVINO Compilation");
    app.add_option("--json", json_,
                   "With --openvino or a .ovc file: also write the layers and the summary as JSON to this file")
        ->group("Display");
    app.add_option("--style", style_,
                   "Text layout: 'polygraphy' (default) prints exactly Polygraphy's text; 'parity' adds the IR "
                   "version and producer, functions and sparse initializers, summarises weights (min/max/mean), "
                   "shows subgraphs under their node without 'attrs', and each node's PyTorch module when the "
                   "model records it (torch.onnx.export(dynamo=True))")
        ->check(CLI::IsMember({"polygraphy", "parity"}))
        ->group("Display");
    app.add_flag("--ignore-external-data", ignore_external_data_,
                 "Load the model's structure without its external data (e.g. when the data files are not "
                 "available): layers and weights' names, types and shapes are shown, external weights' values are "
                 "not")
        ->group("ONNX Model Loading");
    app.add_flag("--list-unbounded-dds", list_unbounded_dds_,
                 "List all tensors with unbounded Data-Dependent Shapes (DDS). Only meaningful for models that "
                 "have been constant folded and have shapes inferred (--shape-inference)")
        ->group("Display");
  }
  int run() override {
    const bool compiled_file = runtime::is_openvino_compiled_file(model_.path()) ||
                               std::filesystem::path(model_.path()).extension() == ".ovc";
    openvino_args_.parse(openvino_ || compiled_file ? 1 : 0);
    if (openvino_ || compiled_file) return inspect_openvino(compiled_file);
    if (!json_.empty()) raise<InvalidInputError>("--json describes what OpenVINO executes: give --openvino");
    if (!input_shapes_.empty())
      raise<InvalidInputError>("--input-shapes sets the shapes OpenVINO compiles the model for: give --openvino");
    // Shown as declared, like Polygraphy: negative dims and weights whose data do not match their
    // dims are displayed (the values then as Polygraphy's error placeholder), not refused.
    onnx::LoadOptions load_options;
    load_options.check_dims_and_data = false;
    if (ignore_external_data_ && !model_.external_data_dir().empty())
      raise<InvalidInputError>("--ignore-external-data and --external-data-dir contradict each other: give one of "
                               "them");
    load_options.ignore_external_data = ignore_external_data_;
    onnx::Model model = model_.load(load_options);
    auto has = [&](const char* what) { return std::find(show_.begin(), show_.end(), what) != show_.end(); };
    OnnxTextOptions options{has("layers"), has("attrs"), has("weights")};
    std::string text = style_ == "parity" ? parity_onnx_text(model, options) : polygraphy_onnx_text(model, options);
    log::info("==== ONNX Model ====\n{}", text);
    if (list_unbounded_dds_) log::info("Found tensors with unbounded DDS: {}", unbounded_dds_text(*model.proto));
    return 0;
  }

 private:
  int inspect_openvino(bool compiled_file) {
    auto has = [&](const char* what) { return std::find(show_.begin(), show_.end(), what) != show_.end(); };
    if (has("weights"))
      raise<InvalidInputError>("--show weights describes the ONNX graph's weights; with --openvino or a .ovc file "
                               "give --show layers (the executed layers) and attrs (their original op names)");
    if (has("attrs") && !has("layers"))
      raise<InvalidInputError>("--show attrs needs --show layers (the attributes are shown per layer)");
    if (ignore_external_data_)
      raise<InvalidInputError>("--ignore-external-data: OpenVINO compiles the model with its weights; with --openvino "
                               "or a .ovc file the external data are needed");
    if (list_unbounded_dds_ || style_ != "polygraphy")
      raise<InvalidInputError>("--style and --list-unbounded-dds describe the ONNX graph's text; with --openvino or "
                               "a .ovc file the executed layers are shown");
    std::optional<onnx::Model> model;
    if (!compiled_file) model = model_.load();
    runtime::OpenvinoOptions options = openvino_args_.options();
    if (compiled_file) options.compiled_file = model_.path();
    if (!input_shapes_.empty()) {
      if (!options.min_shapes.empty() || !options.max_shapes.empty())
        raise<InvalidInputError>("--input-shapes gives static shapes; --ov-min-shapes and --ov-max-shapes bounds: "
                                 "give one or the other");
      options.min_shapes = options.max_shapes = parse_input_shapes(input_shapes_, "--input-shapes");
    }
    runtime::OpenvinoRunner runner([&] { return *model; }, options);
    runner.activate();
    runtime::EngineReport report = runtime::describe_openvino_engine(runner, model ? &*model : nullptr);
    if (compiled_file) {  // the ONNX nodes as `convert` mapped them, where the file keeps them
      const std::string map = runtime::read_openvino_compiled_file(model_.path()).onnx_map;
      if (!map.empty()) report.apply_onnx_map(map, model_.path());
    }
    log::info("{}", report.to_text(has("layers"), has("attrs")));
    if (!json_.empty()) {
      write_file_atomic(json_, report.to_json().dump(2) + "\n");
      log::info("Saved the executed layers to {}", json_);
    }
    return 0;
  }

  ModelArgs model_;
  OpenvinoArgs openvino_args_;
  bool openvino_ = false;
  std::string json_;
  std::vector<std::string> show_;
  std::vector<std::string> input_shapes_;
  std::string style_ = "polygraphy";
  bool list_unbounded_dds_ = false;
  bool ignore_external_data_ = false;
};

PARITY_REGISTER_COMMAND(InspectModelCommand);

}  // namespace
}  // namespace parity::cli
