// `parity template onnx-gs`: writes a Python script skeleton that loads an ONNX model into
// onnx-graphsurgeon, leaves room (and commented hints) for editing the graph, and saves it as
// <model>_updated.onnx — Polygraphy's `template onnx-gs`. The script targets onnx-graphsurgeon, as
// Polygraphy's does (its users know that API), and loads the model with `onnx` itself rather than
// through Polygraphy's loaders, so it needs only the `onnx` and `onnx_graphsurgeon` packages.
#include <filesystem>

#include <fmt/format.h>

#include "args/generated_script.h"
#include "args/value_parsing.h"
#include "command.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/onnx/model.h"

namespace parity::cli {
namespace {

// Polygraphy's util.add_file_suffix: the suffix goes before the extension ("a/m.onnx" -> "a/m_updated.onnx").
std::string with_file_suffix(const std::string& path, const std::string& suffix) {
  std::filesystem::path file(path);
  std::filesystem::path name = file.stem().string() + suffix + file.extension().string();
  return file.has_parent_path() ? (file.parent_path() / name).string() : name.string();
}

// What the script does between loading and saving: Polygraphy's hints, word for word.
constexpr const char* kEditingHints = R"(graph = gs.import_onnx(model)

# To edit inputs or outputs:
#
# graph.inputs = [...]
# graph.outputs = [...]

# To access all tensors in the model:
#
# tensor_map = graph.tensors() # tensor_map is a Dict[str, gs.Tensor]

# To walk over nodes:
#
# for node in graph.nodes:
#     print(f"Node: {node.name}, Op: {node.op}\nInputs: {node.inputs}\nOutputs: {node.outputs}")

# Finally, you can re-export and save the edited graph.
#
# TIP: You may want to clean up and topologically sort the graph prior to exporting:
#
# graph.cleanup()
# graph.toposort()
#
)";

class TemplateOnnxGsCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"template", "onnx-gs"}; }
  std::string description() const override {
    return "Generate a template script that edits an ONNX model with ONNX-GraphSurgeon (Polygraphy's `template "
           "onnx-gs`)";
  }

  void add_options(CLI::App& app) override {
    app.add_option("model_file", model_path_, "Path to the ONNX model")->required();
    app.add_option("-o,--output", output_, "Path to save the generated script template ('-' for standard output)")
        ->required();
    const char* loading = "ONNX Model Loading";
    app.add_option("--external-data-dir,--load-external-data,--ext", external_data_dir_,
                   "Folder the script loads the model's external data from (default: the model's folder)")
        ->group(loading);
    app.add_flag("--ignore-external-data", ignore_external_data_,
                 "The script loads the model's structure without its external data")
        ->group(loading);
    app.add_flag("--shape-inference,--do-shape-inference", shape_inference_,
                 "The script runs ONNX shape inference on the model before importing it")
        ->group(loading);
  }

  int run() override {
    if (ignore_external_data_ && !external_data_dir_.empty())
      raise<InvalidInputError>("--ignore-external-data and --external-data-dir contradict each other: give one of "
                               "them");
    // The model must be an ONNX model (Polygraphy: model type onnx); its weights are not read.
    onnx::LoadOptions check_only;
    check_only.ignore_external_data = true;
    check_only.check_dims_and_data = false;
    onnx::load_model(model_path_, check_only);

    std::string text = script_text();
    if (output_ == "-") {
      fmt::print("{}", text);
      std::fflush(stdout);
    } else {
      write_file_atomic(output_, text);
      log::info("Writing script to: {}", output_);
    }
    return 0;
  }

 private:
  std::string script_text() const {
    std::string out = generated_script_header(command_line());
    out += "# Processes an ONNX model.\n";
    out += "import onnx\nimport onnx_graphsurgeon as gs\n\n# Loaders\n";
    const std::string model = python_string(model_path_);
    if (!external_data_dir_.empty()) {
      out += fmt::format("model = onnx.load({}, load_external_data=False)\n", model);
      out += fmt::format("onnx.load_external_data_for_model(model, {})\n", python_string(external_data_dir_));
    } else if (ignore_external_data_) {
      out += fmt::format("model = onnx.load({}, load_external_data=False)\n", model);
    } else {
      out += fmt::format("model = onnx.load({})\n", model);
    }
    if (shape_inference_) out += "model = onnx.shape_inference.infer_shapes(model)\n";
    out += "\n";
    out += kEditingHints;
    const std::string updated = with_file_suffix(model_path_, "_updated");
    out += fmt::format("onnx.save(gs.export_onnx(graph), {})\n", python_string(updated));
    return out;
  }

  std::string model_path_;
  std::string output_;
  std::string external_data_dir_;
  bool ignore_external_data_ = false;
  bool shape_inference_ = false;
};

PARITY_REGISTER_COMMAND(TemplateOnnxGsCommand);

}  // namespace
}  // namespace parity::cli
