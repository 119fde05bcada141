#include "python_scripts.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "parity/core/allocation_limit.h"
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

// Streams the feeds through the pipe whose descriptor is argv[4] as the script yields them: per feed,
// an 8-byte little-endian length, that many bytes of JSON [[name, size], ...], then each array's .npy
// bytes (size bytes each) in that order. A feed is flushed when whole, so Parity runs it while the
// script makes the next; the pipe's end after the last feed (and the exit status) says there are no
// more. A write blocks while the pipe is full: the script runs at most the pipe's size ahead.
constexpr const char* kDataLoaderDriver = R"PY(
import io, struct
data = user_function() if callable(user_function) else user_function
stream = os.fdopen(int(sys.argv[4]), "wb")
# The .npy header of each (dtype, shape) met, as numpy writes it for a C-order array: later arrays of the
# same kind are written as that header and their own bytes, without going through numpy's writer. Both
# caches start again past a few hundred kinds (a loader whose shapes all differ).
headers = {}
records = {}
CACHED_KINDS = 256
for index, feed in enumerate(data):
    if not isinstance(feed, dict):
        sys.exit(f"iteration {index} is a {type(feed).__name__}, expected a dict of input name -> array")
    entries, buffers = [], []
    for name, value in feed.items():
        if not isinstance(name, str):
            sys.exit(f"iteration {index}: input names must be strings, got {name!r}")
        if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
            value = value.detach().cpu().numpy()
        array = np.asarray(value)
        if array.dtype == object:
            sys.exit(f"iteration {index}: input '{name}' is not a numeric array (numpy made an object array of it)")
        key = (array.dtype.str, array.shape)
        header = headers.get(key) if array.flags.c_contiguous else None
        if header is None:
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, array, allow_pickle=False)
            written = buffer.getbuffer()
            if array.flags.c_contiguous:
                if len(headers) >= CACHED_KINDS:
                    headers.clear()
                headers[key] = bytes(written[:len(written) - array.nbytes])
            buffers.append(written)
            entries.append((name, len(written)))
        else:
            buffers += (header, array.reshape(-1).view(np.uint8))  # bytes of any dtype, rank 0 included
            entries.append((name, len(header) + array.nbytes))
    entries = tuple(entries)
    record = records.get(entries)
    if record is None:
        if len(records) >= CACHED_KINDS:
            records.clear()
        record = json.dumps(entries).encode()
        record = records[entries] = struct.pack("<Q", len(record)) + record
    stream.write(record)
    for buffer in buffers:
        stream.write(buffer)
    stream.flush()
stream.close()
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

// Starts the prelude + `driver` on `script` with `folder` as the exchange folder (argv[3]) and `extra`
// after it; the script's output goes to folder/stderr.txt. `descriptors` are passed on to it.
std::unique_ptr<Process> start_driver(const ScriptSpec& script, const char* driver, const fs::path& folder,
                                      const std::string& what, const std::vector<std::string>& extra = {},
                                      const std::vector<int>& descriptors = {},
                                      const std::vector<std::pair<std::string, std::string>>& environment = {}) {
  const std::string python = configured_python();
  ProcessSpec spec;
  spec.program = python;
  spec.arguments = {"-c", std::string(kPrelude) + driver, script.path, script.function, folder.string()};
  spec.arguments.insert(spec.arguments.end(), extra.begin(), extra.end());
  spec.standard_error = ProcessStream::to_file(folder / "stderr.txt");
  spec.standard_output = ProcessStream::same_as_standard_error();  // the script's prints too
  spec.inherited_descriptors = descriptors;
  spec.environment = environment;
  try {
    return std::make_unique<Process>(spec);
  } catch (const ProcessStartError& start_error) {
    raise<InvalidInputError>("{}: cannot start the Python interpreter '{}': {} (set PARITY_PYTHON)", what, python,
                             std::strerror(start_error.error_number()));
  }
}

// After the driver ended: throws InvalidInputError with the end of the script's traceback when it
// failed, else logs what the script printed.
void check_driver_end(const ProcessEnd& end, const fs::path& folder, const std::string& what) {
  const fs::path log_path = folder / "stderr.txt";
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
}

// Runs the driver to its end and returns the JSON file `result` it wrote in `folder`.
nlohmann::json run_driver(const ScriptSpec& script, const char* driver, const fs::path& folder, const char* result,
                          const std::string& what) {
  check_driver_end(start_driver(script, driver, folder, what)->wait(), folder, what);
  std::string text = read_file(folder / result);
  check_json_depth(text, fmt::format("{}: {}", what, result));
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    raise<InternalError>("{}: unreadable {}: {}", what, result, e.what());
  }
}

// A feed record's JSON is a name and a size per input; more than this is not a record.
constexpr uint64_t kMaxRecordBytes = uint64_t{16} << 20;

// The data loader script's feeds, read from its driver's pipe as the script yields them.
class ScriptFeedStream final : public FeedStream {
 public:
  explicit ScriptFeedStream(const ScriptSpec& script)
      : script_(script),
        what_(fmt::format("--data-loader-script {}", script.path)),
        folder_("parity-data-loader", "the data loader script") {
    std::error_code error;
    if (!fs::is_regular_file(script.path, error)) raise<FileError>("{}: no such file", what_);
    log::info("Running data loader script {} (function {}) with {}", script.path, script.function,
              configured_python());
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0)
      raise<ResourceLimitError>("{}: cannot make a pipe: {}", what_, std::strerror(errno));
    read_end_ = ends[0];
    // A larger pipe lets the script run further ahead of the inferences (best effort: the system's
    // limit, /proc/sys/fs/pipe-max-size, may refuse it).
    fcntl(read_end_, F_SETPIPE_SZ, 1 << 20);
    // The script runs beside the inferences, which take the cores: numpy's OpenBLAS, left to itself,
    // starts a thread per core at import (on 2 cores, 0.06 s of CPU of the script's 0.15 s) that a data
    // loader rarely needs. One thread, unless the user's environment says how many.
    std::vector<std::pair<std::string, std::string>> environment;
    if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) environment.emplace_back("OPENBLAS_NUM_THREADS", "1");
    try {
      process_ = start_driver(script, kDataLoaderDriver, folder_.path(), what_, {std::to_string(ends[1])}, {ends[1]},
                              environment);
    } catch (...) {
      close(ends[1]);
      throw;
    }
    close(ends[1]);  // the script holds the only write end: its exit ends the pipe
  }

  ~ScriptFeedStream() override {
    if (read_end_ >= 0) close(read_end_);  // then process_ kills a script still running
  }
  ScriptFeedStream(const ScriptFeedStream&) = delete;
  ScriptFeedStream& operator=(const ScriptFeedStream&) = delete;

  std::optional<NamedTensors> next() override {
    if (ended_) return std::nullopt;
    unsigned char length_bytes[8];
    const std::size_t got = read_up_to(length_bytes, sizeof length_bytes);
    if (got == 0) {
      finish();
      return std::nullopt;
    }
    if (got < sizeof length_bytes) broken();
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = length << 8 | length_bytes[i];
    if (length == 0 || length > kMaxRecordBytes)
      raise<InvalidInputError>("{}: iteration {}: a malformed record in the feeds' pipe (a record of {} bytes; has the "
                               "script written to the pipe's descriptor, sys.argv[4]?)",
                               what_, count_, length);
    std::string record(length, '\0');
    if (read_up_to(record.data(), record.size()) < record.size()) broken();
    // The record is the driver's, but the script shares its process (and could write to the pipe).
    std::vector<std::pair<std::string, std::size_t>> entries;
    try {
      check_json_depth(record, fmt::format("{}: iteration {}", what_, count_));
      for (const auto& entry : nlohmann::json::parse(record))
        entries.emplace_back(entry.at(0).get<std::string>(), entry.at(1).get<std::size_t>());
    } catch (const nlohmann::json::exception& e) {
      raise<InvalidInputError>("{}: iteration {}: an unreadable record in the feeds' pipe: {}", what_, count_, e.what());
    }
    NamedTensors feed;
    for (const auto& [name, size] : entries) {
      const std::string context = fmt::format("{}: iteration {}: input '{}'", what_, count_, name);
      check_allocation(size, context);
      bytes_.resize(size);
      if (read_up_to(bytes_.data(), bytes_.size()) < bytes_.size()) broken();
      feed.emplace_back(name, with_context(context, [&] { return decode_npy(bytes_, context); }));
    }
    ++count_;
    return feed;
  }

 private:
  // Reads `size` bytes, fewer only where the pipe ends first: the count read.
  std::size_t read_up_to(void* into, std::size_t size) {
    auto* out = static_cast<char*>(into);
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = read(read_end_, out + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) raise<InternalError>("{}: reading the feeds: {}", what_, std::strerror(errno));
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
    }
    return done;
  }

  // The pipe ended after the last whole feed: the script's end says whether it gave them all.
  void finish() {
    ended_ = true;
    close(read_end_);
    read_end_ = -1;
    check_driver_end(process_->wait(), folder_.path(), what_);
    if (count_ == 0) raise<InvalidInputError>("{}: '{}' gave no feeds", what_, script_.function);
    log::info("Loaded {} iteration(s) of inputs from {}", count_, script_.path);
  }

  // The pipe ended inside a feed: the script died (its error, when it has one, says why).
  [[noreturn]] void broken() {
    ended_ = true;
    close(read_end_);
    read_end_ = -1;
    check_driver_end(process_->wait(), folder_.path(), what_);
    raise<InvalidInputError>("{}: the script's process ended in the middle of iteration {}", what_, count_);
  }

  ScriptSpec script_;
  std::string what_;
  TemporaryFolder folder_;
  std::unique_ptr<Process> process_;
  int read_end_ = -1;
  std::size_t count_ = 0;
  bool ended_ = false;
  std::string bytes_;
};

}  // namespace

std::unique_ptr<FeedStream> data_loader_script_stream(const ScriptSpec& script) {
  return std::make_unique<ScriptFeedStream>(script);
}

std::vector<NamedTensors> run_data_loader_script(const ScriptSpec& script) {
  std::vector<NamedTensors> feeds;
  auto stream = data_loader_script_stream(script);
  while (auto feed = stream->next()) feeds.push_back(std::move(*feed));
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
