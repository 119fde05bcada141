#include "python_scripts.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "parity/core/error.h"
#include "parity/core/json_depth.h"
#include "parity/core/temporary_folder.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/core/process.h"
#include "parity/core/python_interpreter.h"

namespace parity::cli {
namespace {

namespace fs = std::filesystem;

// Shared start of every driver: numpy, then the script imported as a module (its folder first on
// sys.path, as `python script.py` would have it) and the function looked up. argv: script,
// function, folder, then the driver's own.
constexpr const char* kPrelude = R"PY(
import importlib.util, json, os, sys
script, function, out = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    import numpy as np
except ImportError:
    sys.exit("numpy is not installed in " + sys.executable + " (set PARITY_PYTHON to a Python that has it)")
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
spec = importlib.util.spec_from_file_location("parity_user_script", script)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
if not hasattr(module, function):
    sys.exit(f"{script} defines no '{function}'")
user_function = getattr(module, function)
)PY";

// Writes every array of every feed as .npy bytes one after another into the one file feeds.npys
// (one file, not one per array: creating thousands of small files costs more than the data), with
// feeds.json listing [[name, offset, size], ...] per iteration in the order the script gave.
constexpr const char* kDataLoaderDriver = R"PY(
data = user_function() if callable(user_function) else user_function
feeds = []
arrays = open(os.path.join(out, "feeds.npys"), "wb")
for index, feed in enumerate(data):
    if not isinstance(feed, dict):
        sys.exit(f"iteration {index} is a {type(feed).__name__}, expected a dict of input name -> array")
    entries = []
    for name, value in feed.items():
        if not isinstance(name, str):
            sys.exit(f"iteration {index}: input names must be strings, got {name!r}")
        if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
            value = value.detach().cpu().numpy()
        array = np.asarray(value)
        if array.dtype == object:
            sys.exit(f"iteration {index}: input '{name}' is not a numeric array (numpy made an object array of it)")
        offset = arrays.tell()
        np.lib.format.write_array(arrays, array, allow_pickle=False)
        entries.append([name, offset, arrays.tell() - offset])
    feeds.append(entries)
arrays.close()
with open(os.path.join(out, "feeds.json"), "w") as f:
    json.dump(feeds, f)
)PY";

// Reads the two results from pair.json, calls the function and writes verdicts.json:
// [[name, passed, repr of what it returned], ...] in the order returned.
constexpr const char* kCompareDriver = R"PY(
class IterationResult(dict):
    def __init__(self, runner_name, items):
        super().__init__(items)
        self.runner_name = runner_name
with open(os.path.join(out, "pair.json")) as f:
    pair = json.load(f)
results = [IterationResult(side["runner_name"], [(name, np.load(os.path.join(out, file))) for name, file in side["outputs"]])
           for side in pair]
returned = user_function(results[0], results[1])
if not hasattr(returned, "items"):
    sys.exit(f"'{function}' returned a {type(returned).__name__}, expected a dict of output name -> result")
verdicts = []
for name, value in returned.items():
    verdicts.append([str(name), bool(value), repr(value)[:200]])
with open(os.path.join(out, "verdicts.json"), "w") as f:
    json.dump(verdicts, f)
)PY";

// Python's repr of the names: 'a', 'b' (as Polygraphy's summary lines print lists of names).
std::vector<std::string> output_names(const compare::IterationComparison& comparison, bool failed_only = false) {
  std::vector<std::string> names;
  for (const auto& output : comparison.outputs)
    if (!failed_only || !output.passed) names.push_back("'" + output.output0 + "'");
  return names;
}

bool is_identifier(const std::string& text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  for (char c : text)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

}  // namespace

ScriptSpec parse_script_spec(const std::string& spec, const std::string& default_function) {
  ScriptSpec out;
  out.path = spec;
  out.function = default_function;
  auto colon = spec.rfind(':');
  if (colon != std::string::npos && is_identifier(spec.substr(colon + 1))) {
    out.path = spec.substr(0, colon);
    out.function = spec.substr(colon + 1);
  }
  return out;
}

namespace {

// Runs the prelude + `driver` on `script` with `folder` as the exchange folder and returns the
// JSON file `result` the driver wrote there. Throws InvalidInputError with the end of the
// script's traceback when it fails.
nlohmann::json run_driver(const ScriptSpec& script, const char* driver, const fs::path& folder, const char* result,
                          const std::string& what) {
  const fs::path log_path = folder / "stderr.txt";
  const std::string python = configured_python();
  ProcessSpec spec;
  spec.program = python;
  spec.arguments = {"-c", std::string(kPrelude) + driver, script.path, script.function, folder.string()};
  spec.standard_error = ProcessStream::to_file(log_path);
  spec.standard_output = ProcessStream::same_as_standard_error();  // the script's prints too
  ProcessEnd end;
  try {
    end = Process(spec).wait();
  } catch (const ProcessStartError& start_error) {
    raise<InvalidInputError>("{}: cannot start the Python interpreter '{}': {} (set PARITY_PYTHON)", what, python,
                             std::strerror(start_error.error_number()));
  }

  std::error_code error;
  std::string output;
  if (fs::exists(log_path, error)) output = read_file(log_path);
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
  if (!end.succeeded()) {
    // The end of the traceback says what went wrong; the whole of it is at verbose level.
    auto last = output.rfind('\n');
    std::string summary = last == std::string::npos ? output : output.substr(last + 1);
    if (!output.empty()) log::verbose("{} wrote:\n{}", what, output);
    raise<InvalidInputError>("{}: the script failed ({}): {}", what,
                             end.signal == 0 ? fmt::format("exit code {}", end.exit_status)
                                             : fmt::format("signal {}", end.signal),
                             summary.empty() ? std::string("no message") : summary);
  }
  if (!output.empty()) log::info("{} printed:\n{}", what, output);
  std::string text = read_file(folder / result);
  check_json_depth(text, fmt::format("{}: {}", what, result));
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    raise<InternalError>("{}: unreadable {}: {}", what, result, e.what());
  }
}

}  // namespace

std::vector<NamedTensors> run_data_loader_script(const ScriptSpec& script) {
  const std::string what = fmt::format("--data-loader-script {}", script.path);
  std::error_code error;
  if (!fs::is_regular_file(script.path, error)) raise<FileError>("{}: no such file", what);
  TemporaryFolder folder("parity-data-loader", "the data loader script");
  log::info("Running data loader script {} (function {}) with {}", script.path, script.function, configured_python());
  nlohmann::json manifest = run_driver(script, kDataLoaderDriver, folder.path(), "feeds.json", what);
  std::ifstream arrays(folder.path() / "feeds.npys", std::ios::binary);
  if (!arrays) raise<InternalError>("{}: the driver wrote no feeds.npys", what);
  std::vector<NamedTensors> feeds;
  std::string bytes;
  for (const auto& iteration : manifest) {
    NamedTensors feed;
    for (const auto& entry : iteration) {
      std::string name = entry.at(0).get<std::string>();
      const std::string context = fmt::format("{}: iteration {}: input '{}'", what, feeds.size(), name);
      bytes.resize(entry.at(2).get<std::size_t>());
      arrays.seekg(entry.at(1).get<std::streamoff>());
      if (!arrays.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
        raise<InternalError>("{}: feeds.npys is shorter than its manifest says", context);
      feed.emplace_back(name, with_context(context, [&] { return decode_npy(bytes, context); }));
    }
    feeds.push_back(std::move(feed));
  }
  if (feeds.empty()) raise<InvalidInputError>("{}: '{}' gave no feeds", what, script.function);
  log::info("Loaded {} iteration(s) of inputs from {}", feeds.size(), script.path);
  return feeds;
}

compare::CompareFunc compare_func_script(const ScriptSpec& script) {
  const std::string what = fmt::format("--compare-func-script {}", script.path);
  std::error_code error;
  if (!fs::is_regular_file(script.path, error)) raise<FileError>("{}: no such file", what);
  return [script, what](const compare::IterationResult& r0, const compare::IterationResult& r1) {
    TemporaryFolder folder("parity-data-loader", "the data loader script");
    nlohmann::json pair = nlohmann::json::array();
    int side = 0;
    for (const compare::IterationResult* result : {&r0, &r1}) {
      nlohmann::json outputs = nlohmann::json::array();
      for (std::size_t i = 0; i < result->outputs.size(); ++i) {
        const auto& [name, tensor] = result->outputs[i];
        std::string file = fmt::format("{}_{}.npy", side, i);
        with_context(fmt::format("{}: output '{}' of {}", what, name, result->runner_name),
                     [&] { save_npy(folder.path() / file, tensor); });
        outputs.push_back({name, file});
      }
      pair.push_back({{"runner_name", result->runner_name}, {"outputs", std::move(outputs)}});
      ++side;
    }
    write_file_atomic(folder.path() / "pair.json", pair.dump());
    log::info("Comparing {} vs. {} with {} (function {})", r0.runner_name, r1.runner_name, script.path,
              script.function);
    nlohmann::json verdicts = run_driver(script, kCompareDriver, folder.path(), "verdicts.json", what);
    compare::IterationComparison comparison;
    std::optional<Logger::Indent> indent;
    indent.emplace();
    for (const auto& verdict : verdicts) {
      compare::OutputComparison output;
      output.kind = "script";
      output.output0 = output.output1 = verdict.at(0).get<std::string>();
      output.passed = verdict.at(1).get<bool>();
      output.compared = true;
      if (const Tensor* t = r0.find(output.output0)) {
        output.dtype0 = t->dtype();
        output.shape0 = t->shape();
      }
      if (const Tensor* t = r1.find(output.output1)) {
        output.dtype1 = t->dtype();
        output.shape1 = t->shape();
      }
      std::string returned = verdict.at(2).get<std::string>();
      if (output.passed) {
        log::finish("PASSED | Output: '{}' | {} returned {}", output.output0, script.function, returned);
      } else {
        output.failure = fmt::format("{} returned {}", script.function, returned);
        log::error("FAILED | Output: '{}' | {} returned {}", output.output0, script.function, returned);
      }
      comparison.outputs.push_back(std::move(output));
    }
    indent.reset();
    if (comparison.passed())
      log::finish("PASSED | All outputs matched | Outputs: [{}]", fmt::join(output_names(comparison), ", "));
    else log::error("FAILED | Mismatched outputs: [{}]", fmt::join(output_names(comparison, true), ", "));
    return comparison;
  };
}

}  // namespace parity::cli
