// `parity convert`: model conversions: ONNX float32 -> float16 / bfloat16 (--fp-to-fp16, --fp-to-bf16), ONNX
// float32 -> int8 Q/DQ with calibration data from the data loader (--int8, args/int8_args.h), and
// ONNX -> a compiled OpenVINO model file (--openvino, parity/runtime/openvino/openvino_compiled_file.h); --onnx-outputs
// and
// --onnx-exclude-outputs change the saved ONNX model's outputs (alone: the model saved with new outputs).
#include <cmath>

#include "args/thread_args.h"
#include "args/data_loader_args.h"
#include "args/int8_args.h"
#include "args/model_args.h"
#include "args/model_save_args.h"
#include "args/openvino_args.h"
#include "args/output_marks.h"
#include "command.h"
#include "parity/compare/comparator.h"
#include "parity/core/values.h"
#include "parity/runtime/data_loader.h"
#include "parity/runtime/ref/ref_runner.h"
#include "parity/statistics/statistics.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/passes.h"
#include "parity/onnx/precision_keep_list.h"
#include "parity/onnx/reduced_precision.h"
#include "parity/runtime/openvino/openvino_compiled_file.h"
#include "parity/runtime/openvino/openvino_engine_report.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::cli {
namespace {

// While alive, only critical messages are logged.
class SilentLog {
 public:
  SilentLog() : saved_(Logger::global().severity()) { Logger::global().set_severity(Severity::kCritical); }
  ~SilentLog() { Logger::global().set_severity(saved_); }
  SilentLog(const SilentLog&) = delete;
  SilentLog& operator=(const SilentLog&) = delete;

 private:
  Severity saved_;
};

class ConvertCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"convert"}; }
  std::string description() const override { return "Convert models to other formats or precisions"; }
  void add_options(CLI::App& app) override {
    model_.add_to(app);
    compute_.add_to(app);
    const char* group = "ONNX Conversion";
    auto* fp16 = app.add_flag("--fp-to-fp16", fp_to_fp16_, "Convert float32 initializers and computation to float16")
                     ->group(group);
    app.add_flag("--fp-to-bf16", fp_to_bf16_, "Convert float32 initializers and computation to bfloat16")
        ->group(group)
        ->excludes(fp16);
    app.add_option("--keep-fp32", keep_fp32_,
                   "Nodes to leave in float32 (Casts go only where they meet converted nodes). Each entry is an op "
                   "type if ONNX defines an operator of that name, otherwise a node name; 'op:TYPE' and 'node:NAME' "
                   "say which explicitly; 're:PATTERN' is a regular expression (ECMAScript) searched in node names; "
                   "'@FILE' reads entries from a file, one a line, '#' starting a comment. A node name or pattern "
                   "matching no node is an error, an op type absent from the model a warning")
        ->group(group);
    app.add_flag("--no-default-keep", no_default_keep_,
                 fmt::format("Do not keep the default op types in float32 ({}; docs/reduced-precision.md says why)",
                             fmt::join(onnx::PrecisionKeepList::default_op_types(), " ")))
        ->group(group);
    app.add_flag("--no-keep-io-types", no_keep_io_types_,
                 "Make float32 graph inputs and outputs float16/bfloat16 too, instead of keeping them float32 with "
                 "Casts")
        ->group(group);
    app.add_flag("--report-error", report_error_,
                 "Run the float32 and the converted model on the reference runner with data-loader inputs and "
                 "report the error of each output")
        ->group(group);
    data_loader_.add_to(app, {.warm_up = false,
                              .input_shapes_help = "Input shapes of the data loader (--report-error, --int8): "
                                                   "<name>:[d0,d1,...] ..."});
    int8_.add_to(app, "Quantize to int8: Q/DQ nodes (activations per tensor, weights per channel, symmetric), the "
                      "activation scales calibrated on the data loader's inputs (docs/int8.md)");
    app.add_flag("--openvino", openvino_,
                 "Compile the model with OpenVINO for this machine's CPU (with the --ov-* precision and shape "
                 "options) and save the compiled model with Parity's header (a .ovc file that `parity run "
                 "--openvino` and `parity inspect model` read)")
        ->group("OpenVINO Compilation")
        ->excludes(fp16)
        ->excludes("--fp-to-bf16");
    openvino_args_.add_to(app);
    outputs_.add_to(app);
    app.add_option("-o,--output", output_, "Path to save the converted model")->required()->group("ONNX Model Saving");
    save_.add_to(app);
    app_ = &app;
  }

  int run() override {
    compute_.apply();
    data_loader_.parse();
    int8_.parse();
    if (!int8_.enabled() && !report_error_)
      for (const char* flag : {"--seed", "--iterations", "--data-loader-backend-module", "--val-range",
                               "--input-shapes", "--load-inputs", "--data-loader-script"})
        if (app_->count(flag))
          raise<InvalidInputError>("convert: {} feeds the data loader, which only --int8 (calibration) and "
                                   "--report-error use",
                                   flag);
    if (int8_.enabled()) return convert_to_int8();
    openvino_args_.parse(openvino_ ? 1 : 0);
    if (openvino_ && save_.external_data_requested())
      raise<InvalidInputError>("--save-external-data applies to ONNX models; --openvino writes a compiled model");
    if (openvino_) return compile_for_openvino();
    if (!fp_to_fp16_ && !fp_to_bf16_ && !outputs_.given())
      raise<InvalidInputError>("convert: nothing to do; give --fp-to-fp16, --fp-to-bf16, --int8, --openvino or "
                               "--onnx-outputs/--onnx-exclude-outputs");
    onnx::Model model = model_.load();
    outputs_.apply(model, model_.path());  // before any conversion, as Polygraphy's loader does
    if (!fp_to_fp16_ && !fp_to_bf16_) {
      save_.save(model, output_);
      return 0;
    }
    std::optional<onnx::Model> original;
    if (report_error_)
      original = onnx::Model{std::make_shared<::onnx::ModelProto>(*model.proto), model.path, model.base_dir};
    if (!model_.shape_inference())
      log::warning("--no-shape-inference: the types of intermediate tensors are unknown, so Casts may be missing");
    onnx::ReducedPrecisionOptions options;
    options.precision = fp_to_bf16_ ? onnx::ReducedPrecision::kBFloat16 : onnx::ReducedPrecision::kFloat16;
    options.keep_io_types = !no_keep_io_types_;
    options.keep_fp32 = keep_fp32_;
    options.default_keep = !no_default_keep_;
    auto report = onnx::convert_float_to_reduced_precision(model, options);
    const auto precision = onnx::reduced_precision_name(options.precision);
    log::info("Converted to {}: {} initializer(s), {} Cast(s) inserted, {} node(s) kept in float32", precision,
              report.initializers_converted, report.casts_inserted,
              report.nodes_kept_by_list + report.nodes_kept_by_schema);
    if (report.nodes_kept_by_schema)
      log::info("{} node(s) kept in float32 because ONNX defines no {} version of their op at the model's opset: {}",
                report.nodes_kept_by_schema, precision, fmt::join(report.op_types_kept_by_schema, ", "));
    auto inference = onnx::infer_shapes(*model);
    if (!inference.ok)
      log::warning("ONNX shape inference fails on the {} model.\nNote: error was: {}", precision, inference.error);
    if (original)
      report_reduced_precision_error(*original, model, precision, data_loader_.data_loader());
    save_.save(model, output_);
    return 0;
  }

  int convert_to_int8() {
    if (fp_to_fp16_ || fp_to_bf16_ || openvino_ || report_error_ || no_default_keep_ || no_keep_io_types_)
      raise<InvalidInputError>("convert --int8: --fp-to-fp16, --fp-to-bf16, --openvino, --report-error, "
                               "--no-default-keep and --no-keep-io-types do not apply");
    // A data loader script's interpreter starts while the model loads.
    const FeedStreamFunc feeds =
        int8_.calibrates() ? data_loader_.feed_stream_started_now() : data_loader_.feed_stream();
    onnx::Model model = model_.load();
    outputs_.apply(model, model_.path());
    int8_.quantize(model, keep_fp32_, feeds);
    save_.save(model, output_);
    return 0;
  }

  int compile_for_openvino() {
    if (report_error_ || !keep_fp32_.empty() || no_default_keep_ || no_keep_io_types_)
      raise<InvalidInputError>("convert --openvino: --report-error, --keep-fp32, --no-default-keep and "
                               "--no-keep-io-types apply to --fp-to-fp16/--fp-to-bf16 only");
    if (outputs_.given())
      raise<InvalidInputError>("convert --openvino: a compiled model file marks no tensors (--onnx-outputs, "
                               "--onnx-exclude-outputs); convert the ONNX model with them first");
    if (openvino_args_.marks_tensors())
      raise<InvalidInputError>("convert --openvino: a compiled model file marks no tensors (--ov-outputs, "
                               "--ov-exclude-outputs)");
    runtime::OpenvinoRunner runner([this] { return model_.load_once({.lazy_weights = true}); },
                                   openvino_args_.options());
    runner.activate();
    runtime::OpenvinoCompiledFile file = runner.compiled_file();
    // Which ONNX nodes each layer covers, kept in the header for `inspect model` on the file (the
    // model the runner loaded: load_once keeps it).
    onnx::LoadOptions lazy;
    lazy.lazy_weights = true;
    const onnx::Model model = model_.load_once(lazy);
    file.onnx_map = runtime::describe_openvino_engine(runner, &model).onnx_map_text();
    runtime::write_openvino_compiled_file(output_, file);
    log::info("Saved compiled OpenVINO model ({} bytes, inference precision {}, OpenVINO {}) to: {}",
              file.compiled.size(), file.inference_precision, file.openvino_version, output_);
    return 0;
  }

  static void report_reduced_precision_error(const onnx::Model& fp32, const onnx::Model& reduced,
                                             std::string_view precision, const compare::DataLoaderFunc& data_loader) {
    const std::vector<NamedTensors> all = data_loader(onnx::graph_inputs(fp32->graph()));
    if (all.empty()) raise<InvalidInputError>("--report-error: the data loader gave no inputs");
    const NamedTensors& feeds = all.front();
    // Each model on its own run of the Comparator, so each gets the feed cast to its inputs' types
    // (float16/bfloat16 inputs under --no-keep-io-types); its log lines are not this report's.
    auto run = [&](const onnx::Model& model) {
      SilentLog silent;
      runtime::RefRunner runner([&model] { return model; });
      return std::move(compare::Comparator::run({&runner}, compare::data_loader_from(std::vector<NamedTensors>{feeds}))
                           .at(0)
                           .iterations.at(0)
                           .outputs);
    };
    const NamedTensors expected = run(fp32);
    const NamedTensors got = run(reduced);
    for (std::size_t o = 0; o < expected.size() && o < got.size(); ++o) {
      const Tensor& a = expected[o].second;
      const Tensor& b = got[o].second;
      if (a.shape() != b.shape() || !has_numeric_values(a.dtype()) || !has_numeric_values(b.dtype())) continue;
      // The float32 run is the reference; a NaN or infinite error reads as an infinite one.
      const statistics::ErrorSummary error = statistics::summarize_error(b.view(), a.view());
      auto largest = [](const statistics::TensorSummary& summary) -> double {
        if (summary.nan_count || summary.inf_count()) return INFINITY;
        return summary.finite.state == statistics::Statistics::State::kValues ? summary.finite.max : 0.0;
      };
      const statistics::TensorSummary& absolute = error.absolute;
      double mean_abs = absolute.nan_count || absolute.inf_count() ? INFINITY
                        : absolute.finite.state == statistics::Statistics::State::kValues ? absolute.finite.mean
                                                                                        : 0.0;
      double max_abs = largest(absolute), max_rel = largest(error.relative);
      log::info("{} vs float32 on the reference runner | {} | max abs error: {:.5g}, mean abs error: {:.5g}, "
                "max rel error: {:.5g}",
                precision, expected[o].first, max_abs, mean_abs, max_rel);
    }
  }

 private:
  CLI::App* app_ = nullptr;
  ModelArgs model_;
  ModelSaveArgs save_;
  ThreadArgs compute_;
  OpenvinoArgs openvino_args_;
  SavedOutputsArgs outputs_{"onnx-"};
  bool openvino_ = false;
  bool fp_to_fp16_ = false;
  bool fp_to_bf16_ = false;
  bool no_default_keep_ = false;
  bool report_error_ = false;
  DataLoaderArgs data_loader_;
  Int8Args int8_;
  bool no_keep_io_types_ = false;
  std::vector<std::string> keep_fp32_;
  std::string output_;
};

PARITY_REGISTER_COMMAND(ConvertCommand);

}  // namespace
}  // namespace parity::cli
