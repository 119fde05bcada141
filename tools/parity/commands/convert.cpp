// `parity convert`: model conversions. Today: ONNX float32 -> float16 (--fp-to-fp16).
#include <cmath>

#include "args/compute_args.h"
#include "args/model_args.h"
#include "args/tensor_meta_parse.h"
#include "command.h"
#include "parity/compare/statistics.h"
#include "parity/core/values.h"
#include "parity/runtime/data_loader.h"
#include "parity/runtime/interpreter.h"
#include "parity/core/error.h"
#include "parity/core/half.h"
#include "parity/core/logger.h"
#include "parity/onnx/passes.h"

namespace parity::cli {
namespace {

class ConvertCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"convert"}; }
  std::string description() const override { return "Convert models to other formats or precisions"; }
  void add_options(CLI::App& app) override {
    model_.add_to(app);
    compute_.add_to(app);
    const char* group = "ONNX Conversion";
    app.add_flag("--fp-to-fp16", fp_to_fp16_, "Convert float32 initializers and computation to float16")->group(group);
    app.add_option("--keep-fp32", keep_fp32_,
                   "Op types or node names to leave in float32 (Casts are inserted around them)")
        ->group(group);
    app.add_flag("--no-keep-io-types", no_keep_io_types_,
                 "Make float32 graph inputs and outputs float16 too, instead of keeping them float32 with Casts")
        ->group(group);
    app.add_flag("--report-error", report_error_,
                 "Run the float32 and the float16 model on the reference runner with data-loader inputs and report "
                 "the float16 error of each output")
        ->group(group);
    app.add_option("--input-shapes,--inputs", input_shapes_, "Input shapes for --report-error: name:[dims]")
        ->group(group);
    app.add_option("--val-range", val_ranges_,
                   "Value range of --report-error's inputs: [min,max] for all or name:[min,max] for one")
        ->group(group);
    app.add_option("-o,--output", output_, "Path to save the converted model")->required()->group("ONNX Model Saving");
  }

  int run() override {
    compute_.apply();
    if (!fp_to_fp16_)
      raise<InvalidInputError>("convert: nothing to do; only ONNX-to-ONNX conversion with --fp-to-fp16 is supported "
                               "so far");
    TensorMetadata shapes = parse_input_shapes(input_shapes_, "--input-shapes");
    onnx::Model model = model_.load();
    std::optional<onnx::Model> original;
    if (report_error_) original = onnx::Model{std::make_shared<::onnx::ModelProto>(*model.proto), model.path, model.base_dir};
    if (!model_.shape_inference())
      log::warning("--no-shape-inference: the types of intermediate tensors are unknown, so Casts may be missing");
    onnx::Fp16Options options;
    options.keep_io_types = !no_keep_io_types_;
    options.keep_fp32 = keep_fp32_;
    auto report = onnx::convert_float_to_float16(model, options);
    log::info("Converted to float16: {} initializer(s), {} Cast(s) inserted, {} node(s) kept in float32",
              report.initializers_converted, report.casts_inserted, report.nodes_kept_fp32);
    auto inference = onnx::infer_shapes(*model);
    if (!inference.ok)
      log::warning("ONNX shape inference fails on the float16 model.\nNote: error was: {}", inference.error);
    if (original) report_float16_error(*original, model, shapes, parse_val_ranges(val_ranges_, "--val-range"));
    log::info("Saving ONNX model to: {}", output_);
    onnx::save_model(model, output_);
    return 0;
  }

  static void report_float16_error(const onnx::Model& fp32, const onnx::Model& fp16, const TensorMetadata& shapes,
                                   std::vector<std::pair<std::string, std::pair<double, double>>> val_ranges) {
    runtime::DataLoaderOptions options;
    options.val_ranges = std::move(val_ranges);
    for (const auto& [name, info] : shapes) {
      std::vector<int64_t> dims;
      for (const auto& d : *info.shape) dims.push_back(d.value ? *d.value : -1);
      options.input_shapes.emplace_back(name, dims);
    }
    runtime::DataLoader loader(options);
    auto feed_tensors = loader.generate(onnx::graph_inputs(fp32->graph()), 0);
    auto run = [&](const onnx::Model& model) {
      runtime::Interpreter interpreter(onnx::Model{std::make_shared<::onnx::ModelProto>(*model.proto), model.path,
                                                   model.base_dir},
                                       {});
      runtime::NamedValues feed;
      for (const auto& [name, t] : feed_tensors) {
        const auto* info = onnx::graph_inputs(model->graph()).find(name);
        if (info && info->dtype == DType::kFloat16 && t.dtype() == DType::kFloat32) {
          Tensor half = Tensor::zeros(DType::kFloat16, t.shape());
          for (int64_t i = 0; i < t.size(); ++i)
            half.mutable_data<uint16_t>()[i] = float_to_float16_bits(t.data<float>()[i]);
          feed.emplace_back(name, ops::Value::of(half));
        } else {
          feed.emplace_back(name, ops::Value::of(t));
        }
      }
      return interpreter.run(feed);
    };
    auto expected = run(fp32);
    auto got = run(fp16);
    for (std::size_t o = 0; o < expected.size() && o < got.size(); ++o) {
      if (!expected[o].second.is_tensor() || !got[o].second.is_tensor()) continue;
      const Tensor& a = expected[o].second.tensor();
      const Tensor& b = got[o].second.tensor();
      if (a.shape() != b.shape() || !has_numeric_values(a.dtype()) || !has_numeric_values(b.dtype())) continue;
      // The float32 run is the reference; a NaN or infinite error reads as an infinite one.
      const compare::ErrorSummary error = compare::summarize_error(b.view(), a.view());
      auto largest = [](const compare::TensorSummary& summary) -> double {
        if (summary.nan_count || summary.inf_count()) return INFINITY;
        return summary.finite.state == compare::Statistics::State::kValues ? summary.finite.max : 0.0;
      };
      const compare::TensorSummary& absolute = error.absolute;
      double mean_abs = absolute.nan_count || absolute.inf_count() ? INFINITY
                        : absolute.finite.state == compare::Statistics::State::kValues ? absolute.finite.mean
                                                                                        : 0.0;
      double max_abs = largest(absolute), max_rel = largest(error.relative);
      log::info("float16 vs float32 on the reference runner | {} | max abs error: {:.5g}, mean abs error: {:.5g}, "
                "max rel error: {:.5g}",
                expected[o].first, max_abs, mean_abs, max_rel);
    }
  }

 private:
  ModelArgs model_;
  ComputeArgs compute_;
  bool fp_to_fp16_ = false;
  bool report_error_ = false;
  std::vector<std::string> input_shapes_, val_ranges_;
  bool no_keep_io_types_ = false;
  std::vector<std::string> keep_fp32_;
  std::string output_;
};

PARITY_REGISTER_COMMAND(ConvertCommand);

}  // namespace
}  // namespace parity::cli
