#include "args/metric_script.h"

#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "parity/core/error.h"
#include "parity/core/python_interpreter.h"
#include "parity/runtime/python_worker.h"

namespace parity::cli {
namespace {

// The script imported once (its folder first on sys.path); tensors cross as "0/<output>",
// "1/<output>" and "in/<input>".
constexpr const char* kMetricCommands = R"PY(
import importlib.util
sys.path.insert(0, os.path.dirname(os.path.abspath(_metric_path)))
_spec = importlib.util.spec_from_file_location("parity_metric_script", _metric_path)
_metric_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_metric_module)
if not callable(getattr(_metric_module, _metric_function, None)):
    raise SystemExit(f"{_metric_path} defines no function '{_metric_function}'")

class IterationResult(dict):
    def __init__(self, runner_name, items):
        super().__init__(items)
        self.runner_name = runner_name

@command("metric")
def _metric(arguments, tensors):
    def part(prefix):
        return [(name[len(prefix):], array.copy()) for name, array in tensors.items() if name.startswith(prefix)]
    result0 = IterationResult(arguments["runner0"], part("0/"))
    result1 = IterationResult(arguments["runner1"], part("1/"))
    returned = getattr(_metric_module, _metric_function)(result0, result1, dict(part("in/")))
    items = returned.items() if hasattr(returned, "items") else [(_metric_function, returned)]
    values = []
    for name, value in items:
        try:
            values.append([str(name), float(value)])
        except (TypeError, ValueError):
            raise CommandFailed(f"{_metric_function} returned {value!r} for '{name}', expected a number")
    return values
)PY";

}  // namespace

compare::MetricFunc metric_script(const ScriptSpec& script) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(script.path, error))
    raise<FileError>("--metric-script {}: no such file", script.path);
  runtime::PythonWorkerOptions options;
  options.name = fmt::format("the metric script {}", script.path);
  options.interpreter = configured_python();
  // JSON strings are Python string literals too.
  options.commands = fmt::format("_metric_path = {}\n_metric_function = {}\n{}", nlohmann::json(script.path).dump(),
                                 nlohmann::json(script.function).dump(), kMetricCommands);
  auto worker = std::make_shared<runtime::PythonWorker>(options);
  return [worker, script](const compare::IterationResult& r0, const compare::IterationResult& r1,
                          const NamedTensors& feed) {
    NamedTensors tensors;
    for (const auto& [name, tensor] : r0.outputs) tensors.emplace_back("0/" + name, tensor);
    for (const auto& [name, tensor] : r1.outputs) tensors.emplace_back("1/" + name, tensor);
    for (const auto& [name, tensor] : feed) tensors.emplace_back("in/" + name, tensor);
    nlohmann::json reply;
    try {
      reply = worker->call("metric", {{"runner0", r0.runner_name}, {"runner1", r1.runner_name}}, tensors).result;
    } catch (const runtime::PythonCommandError& error) {
      raise<InvalidInputError>("{}", error.what());  // "the metric script <path>: metric: <error>"
    }
    std::vector<std::pair<std::string, double>> values;
    for (const auto& entry : reply) values.emplace_back(entry.at(0).get<std::string>(), entry.at(1).get<double>());
    return values;
  };
}

}  // namespace parity::cli
