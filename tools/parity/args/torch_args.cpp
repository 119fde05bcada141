#include "args/torch_args.h"

#include <algorithm>

#include <fmt/format.h>

#include "args/generated_script.h"
#include "args/value_parsing.h"
#include "parity/core/error.h"

namespace parity::cli {
namespace {

const std::vector<std::string> kCompileModes{"none", "default", "reduce-overhead", "max-autotune",
                                             "max-autotune-no-cudagraphs"};

bool valid_device(const std::string& device) {
  if (device == "cpu" || device == "cuda") return true;
  if (!device.starts_with("cuda:") || device.size() == 5) return false;
  return device.find_first_not_of("0123456789", 5) == std::string::npos;
}

// The loader's Python expression for a model source ("ModuleFromScript('net.py', function='build')").
std::string loader_expression(GeneratedScript& script, const runtime::TorchModelSource& source) {
  using Kind = runtime::TorchModelSource::Kind;
  switch (source.kind) {
    case Kind::kScript:
      script.add_import("parity.backend.pyt", "ModuleFromScript");
      return fmt::format("ModuleFromScript({}{})", script.path(source.path),
                         source.function.empty() ? "" : ", function=" + python_string(source.function));
    case Kind::kTorchScript:
      script.add_import("parity.backend.pyt", "ModuleFromTorchScript");
      return fmt::format("ModuleFromTorchScript({})", script.path(source.path));
    case Kind::kExport:
      script.add_import("parity.backend.pyt", "ModuleFromTorchExport");
      return fmt::format("ModuleFromTorchExport({})", script.path(source.path));
  }
  raise<InternalError>("unknown PyTorch model source");
}

}  // namespace

std::string TorchArgs::flag_help() const {
  return "Run a PyTorch model (repeatable): an nn.Module from --torch-model-script, or a TorchScript or torch.export "
         "file from --torch-model, in a Python worker with torch ($PARITY_PYTHON, --torch-python); an ONNX model, "
         "when given, names its inputs and outputs";
}

void TorchArgs::add_runner_options(CLI::App& app) {
  app_ = &app;
  const char* group = "PyTorch Runner";
  const char* per_runner = " (given once: every --torch; once per --torch: each in turn)";
  app.add_option("--torch-model-script", scripts_,
                 std::string("Python file and function returning the torch.nn.Module: file.py[:function] (default "
                             "function: load_model); without an ONNX model, the file's example_inputs() (a tuple or "
                             "dict of tensors) or --input-shapes gives the inputs") + per_runner)
      ->take_all()
      ->group(group);
  app.add_option("--torch-model", models_,
                 std::string("TorchScript file (torch.jit.save; loaded with torch.jit.load) or torch.export program "
                             "(.pt2; torch.export.load(...).module())") + per_runner)
      ->take_all()
      ->group(group);
  app.add_option("--torch-device", devices_, std::string("Device: cpu (default), cuda or cuda:N") + per_runner)
      ->take_all()
      ->group(group);
  app.add_option("--torch-dtype", dtypes_,
                 std::string("Precision: fp32 (default), fp16 or bf16 (reduced-precision outputs are returned as "
                             "float32)") + per_runner)
      ->take_all()
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}))
      ->group(group);
  app.add_option("--torch-dtype-mode", dtype_modes_,
                 std::string("How --torch-dtype fp16/bf16 runs: cast (default: a copy of the module and its floating "
                             "inputs cast to the dtype) or autocast (torch.autocast around forward(), weights float32)") +
                     per_runner)
      ->take_all()
      ->check(CLI::IsMember({"cast", "autocast"}))
      ->group(group);
  app.add_option("--torch-tf32", tf32_,
                 std::string("TF32 for CUDA matmuls and cuDNN convolutions (torch.backends.cuda.matmul.allow_tf32, "
                             "torch.backends.cudnn.allow_tf32): on, off, or default (torch's: matmul off, cuDNN on)") +
                     per_runner)
      ->take_all()
      ->check(CLI::IsMember({"on", "off", "default"}))
      ->group(group);
  app.add_option("--torch-compile", compile_,
                 std::string("torch.compile (inductor) with a mode: default (when no mode follows), "
                             "reduce-overhead, max-autotune, max-autotune-no-cudagraphs, or none (eager, the "
                             "default without the flag)") + per_runner)
      ->expected(0, 1)
      ->default_str("default")
      ->take_all()
      ->check(CLI::IsMember(kCompileModes))
      ->group(group);
  app.add_option("--torch-python", pythons_,
                 std::string("Python interpreter with torch for the PyTorch worker (default: $PARITY_PYTHON, else "
                             "python3 on PATH)") + per_runner)
      ->take_all()
      ->group(group);
}

std::string TorchArgs::value_for(const std::vector<std::string>& values, std::size_t runner,
                                 const std::string& fallback) const {
  if (values.empty()) return fallback;
  return values.size() == 1 ? values[0] : values.at(runner);
}

void TorchArgs::parse_runner_options(int runners, bool) {
  runners_.clear();
  sources_.clear();
  source_of_.clear();
  const std::vector<std::pair<const char*, const std::vector<std::string>*>> options{
      {"--torch-model-script", &scripts_}, {"--torch-model", &models_},      {"--torch-device", &devices_},
      {"--torch-dtype", &dtypes_},         {"--torch-dtype-mode", &dtype_modes_}, {"--torch-tf32", &tf32_},
      {"--torch-compile", &compile_},      {"--torch-python", &pythons_}};
  for (const auto& [flag, values] : options) {
    if (values->empty()) continue;
    if (runners == 0) raise<InvalidInputError>("{} is an option of the PyTorch runner: give --torch", flag);
    if (values->size() != 1 && values->size() != static_cast<std::size_t>(runners))
      raise<InvalidInputError>("{} was given {} times for {} PyTorch runner(s) (--torch): give it once for all, or "
                               "once per --torch",
                               flag, values->size(), runners);
  }
  // --input-shapes (the data loader's), for runs without an ONNX model.
  std::vector<std::pair<std::string, std::vector<int64_t>>> input_shapes;
  if (const CLI::Option* shapes = app_->get_option_no_throw("--input-shapes"); shapes && shapes->count() > 0) {
    for (const auto& arg : shapes->as<std::vector<std::string>>()) {
      auto [name, dims] = split_named_bracket(arg, true, "--input-shapes");
      input_shapes.emplace_back(name, parse_dims(dims, "--input-shapes " + name));
    }
  }
  for (std::size_t i = 0; i < static_cast<std::size_t>(runners); ++i) {
    runtime::TorchOptions options;
    const std::string script = value_for(scripts_, i, "");
    const std::string model = value_for(models_, i, "");
    if (script.empty() == model.empty())
      raise<InvalidInputError>("{} PyTorch runner (--torch): give its model as {}",
                               runners > 1 ? fmt::format("the {} of {}", i + 1, runners) : std::string("the"),
                               script.empty() ? "--torch-model-script file.py[:function] (an nn.Module) or "
                                                "--torch-model model.pt|model.pt2"
                                              : "either --torch-model-script or --torch-model, not both");
    options.model = script.empty() ? runtime::TorchModelSource::from_model_file(model)
                                   : runtime::TorchModelSource::from_script(script);
    options.device = value_for(devices_, i, "cpu");
    if (!valid_device(options.device))
      raise<InvalidInputError>("--torch-device '{}': choose cpu, cuda or cuda:N", options.device);
    options.dtype = value_for(dtypes_, i, "fp32");
    options.dtype_mode = value_for(dtype_modes_, i, "cast");
    const std::string tf32 = value_for(tf32_, i, "default");
    if (tf32 != "default") {
      if (!options.device.starts_with("cuda"))
        raise<InvalidInputError>("--torch-tf32 {}: TF32 is a CUDA setting; the PyTorch runner runs on {} "
                                 "(--torch-device cuda)",
                                 tf32, options.device);
      options.tf32 = tf32 == "on";
    }
    const std::string compile = value_for(compile_, i, "none");
    if (compile != "none") options.compile_mode = compile;
    options.python = value_for(pythons_, i, "");
    options.input_shapes = input_shapes;
    for (const auto& [name, dims] : options.input_shapes)
      for (int64_t dim : dims)
        if (dim < 0)
          raise<InvalidInputError>("--input-shapes {}: a PyTorch runner without an ONNX model needs fixed shapes",
                                   name);
    const auto known = std::find(sources_.begin(), sources_.end(), options.model);
    source_of_.push_back(static_cast<std::size_t>(known - sources_.begin()));
    if (known == sources_.end()) sources_.push_back(options.model);
    runners_.push_back(std::move(options));
  }
}

std::string TorchArgs::loader_variable(std::size_t source) {
  return source == 0 ? "load_torch" : fmt::format("load_torch{}", source + 1);
}

std::unique_ptr<runtime::Runner> TorchArgs::make_runner(const runtime::ModelLoader& model, const std::string&) const {
  if (made_ >= runners_.size()) raise<InternalError>("more PyTorch runners made than --torch given");
  runtime::TorchOptions options = runners_[made_++];
  if (model) options.input_shapes.clear();  // the ONNX model gives the inputs
  return std::make_unique<runtime::TorchRunner>(model, std::move(options));
}

void TorchArgs::add_script_loaders(GeneratedScript& script, const std::string&, bool, int runners,
                                   std::vector<std::string>& loaders) const {
  if (runners == 0) return;
  // One loader per distinct model: each runner's activation loads its own module from it.
  for (std::size_t i = 0; i < sources_.size(); ++i)
    loaders.push_back(fmt::format("{} = {}", loader_variable(i), loader_expression(script, sources_[i])));
}

std::string TorchArgs::add_script_runner(GeneratedScript& script, const std::string& onnx_model) const {
  if (scripted_ >= runners_.size()) raise<InternalError>("more PyTorch runners written than --torch given");
  const std::size_t runner = scripted_++;
  const runtime::TorchOptions& options = runners_[runner];
  std::vector<std::string> arguments{loader_variable(source_of_[runner])};
  if (!onnx_model.empty()) arguments.push_back("onnx_model=" + onnx_model);
  // With --torch-python the module runs in that interpreter's worker (PytWorkerRunner), else in-process.
  const bool worker = !options.python.empty();
  if (onnx_model.empty() && !options.input_shapes.empty()) {
    std::vector<std::string> entries;
    for (const auto& [name, dims] : options.input_shapes)
      entries.push_back(fmt::format("{}: [{}]", python_string(name), fmt::join(dims, ", ")));
    if (worker) {
      arguments.push_back(fmt::format("input_shapes={{{}}}", fmt::join(entries, ", ")));
    } else {
      script.add_import("parity.common", "TensorMetadata");
      script.add_import("numpy", "float32");
      std::string metadata = "TensorMetadata()";
      for (const auto& [name, dims] : options.input_shapes)
        metadata += fmt::format(".add({}, float32, [{}])", python_string(name), fmt::join(dims, ", "));
      arguments.push_back("input_metadata=" + metadata);
    }
  }
  if (options.device != "cpu") arguments.push_back("device=" + python_string(options.device));
  if (options.dtype != "fp32") {
    arguments.push_back("dtype=" + python_string(options.dtype));
    if (options.dtype_mode != "cast") arguments.push_back("dtype_mode=" + python_string(options.dtype_mode));
  }
  if (options.tf32) arguments.push_back(fmt::format("tf32={}", *options.tf32 ? "True" : "False"));
  if (options.compile_mode) arguments.push_back("compile_mode=" + python_string(*options.compile_mode));
  if (worker) {
    script.add_import("parity.backend.pyt", "PytWorkerRunner");
    const bool on_path = options.python.find('/') == std::string::npos;  // a name looked up on PATH
    arguments.push_back("python=" + (on_path ? python_string(options.python) : script.path(options.python)));
    return fmt::format("    PytWorkerRunner({}),", fmt::join(arguments, ", "));
  }
  script.add_import("parity.backend.pyt", "PytRunner");
  return fmt::format("    PytRunner({}),", fmt::join(arguments, ", "));
}

}  // namespace parity::cli
