#include "args/reduced_precision_run_args.h"

#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::cli {
namespace {

// The conversion reads intermediate types from value_info: shape inference first.
void convert(onnx::Model& model, const onnx::ReducedPrecisionOptions& options) {
  auto inference = onnx::infer_shapes(*model.proto);
  if (!inference.ok)
    raise<InvalidInputError>("{} conversion needs the types of the model's tensors, and ONNX shape inference fails: {}",
                             onnx::reduced_precision_name(options.precision), inference.error);
  onnx::convert_float_to_reduced_precision(model, options);
}

}  // namespace

void ReducedPrecisionRunArgs::add_to(CLI::App& app) {
  const char* group = "Reduced Precision";
  auto* fp16 = app.add_flag("--fp-to-fp16", fp16_,
                            "The first runner runs the float32 model, the reference; the others the model converted "
                            "to float16 as `convert --fp-to-fp16` converts it (default keep list, inputs and outputs "
                            "float32; docs/reduced-precision.md)")
                   ->group(group);
  app.add_flag("--fp-to-bf16", bf16_, "As --fp-to-fp16, to bfloat16")->group(group)->excludes(fp16);
}

void ReducedPrecisionRunArgs::check(bool int8, bool dataset) const {
  if (!enabled()) return;
  const auto flag = fp16_ ? "--fp-to-fp16" : "--fp-to-bf16";
  if (int8) raise<InvalidInputError>("{} converts the float32 model the runners under test run: leave out --int8", flag);
  if (dataset)
    raise<InvalidInputError>("{} cannot be used with --dataset (the dataset's runners run the model as it is)", flag);
}

onnx::ReducedPrecisionOptions ReducedPrecisionRunArgs::options() const {
  onnx::ReducedPrecisionOptions options;
  options.precision = bf16_ ? onnx::ReducedPrecision::kBFloat16 : onnx::ReducedPrecision::kFloat16;
  return options;
}

void ReducedPrecisionRunArgs::convert_runners_under_test(std::vector<std::unique_ptr<runtime::Runner>>& live,
                                                         const RunnerArgs& runners, const ModelArgs& model_args) const {
  if (!enabled() || live.empty()) return;
  const auto flag = fp16_ ? "--fp-to-fp16" : "--fp-to-bf16";
  if (model_args.path().empty()) raise<InvalidInputError>("{} converts an ONNX model: give one", flag);
  auto model = std::make_shared<onnx::Model>(model_args.load());
  convert(*model, options());
  const std::string suffix = fp16_ ? "-fp16" : "-bf16";
  auto converted = runners.make_runners([model] { return *model; });
  const std::size_t first = live.size() == 1 ? 0 : 1;
  for (std::size_t i = first; i < live.size(); ++i) {
    converted[i]->set_name(live[i]->name() + suffix);
    live[i] = std::move(converted[i]);
  }
  if (first == 1)
    log::info("{}: {} runs the float32 model (the reference); {} the {} model", flag, live[0]->name(),
              live.size() == 2 ? live[1]->name() : fmt::format("the {} others", live.size() - 1),
              onnx::reduced_precision_name(options().precision));
}

std::function<void(onnx::Model&)> ReducedPrecisionRunArgs::converter() const {
  if (!enabled()) return nullptr;
  return [options = options()](onnx::Model& model) { convert(model, options); };
}

}  // namespace parity::cli
