#include "parity/runtime/dataset_source.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "parity/core/error.h"
#include "parity/runtime/python_worker.h"

namespace parity::runtime {
namespace {

namespace fs = std::filesystem;

class NpzFolderDataset : public DatasetSource {
 public:
  explicit NpzFolderDataset(const fs::path& folder) : folder_(folder) {
    std::error_code error;
    for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error))
      if (it->path().extension() == ".npz" && it->is_regular_file(error)) files_.push_back(it->path());
    if (error) raise<FileError>("--dataset {}: cannot list the folder: {}", folder.string(), error.message());
    if (files_.empty()) raise<InvalidInputError>("--dataset {}: the folder holds no .npz files", folder.string());
    std::sort(files_.begin(), files_.end());
  }
  std::size_t size() const override { return files_.size(); }
  NamedTensors load(std::size_t index) override {
    const fs::path& file = files_.at(index);
    return with_context(fmt::format("--dataset: sample {} ({})", index, file.string()), [&] { return load_npz(file); });
  }
  std::string describe() const override {
    return fmt::format("folder {} ({} .npz files)", folder_.string(), files_.size());
  }

 private:
  fs::path folder_;
  std::vector<fs::path> files_;
};

// The worker's commands: the script imported once (its folder first on sys.path, as `python
// script.py` would have it), then num_samples() and load(i).
constexpr const char* kScriptCommands = R"PY(
import importlib.util
sys.path.insert(0, os.path.dirname(os.path.abspath(_dataset_path)))
_spec = importlib.util.spec_from_file_location("parity_dataset_script", _dataset_path)
_dataset = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_dataset)

@command("describe")
def _describe(arguments, tensors):
    missing = [name for name in ("num_samples", "load") if not callable(getattr(_dataset, name, None))]
    if missing:
        raise CommandFailed(f"{_dataset_path} defines no {' or '.join(missing)} "
                            "(a dataset script defines num_samples() and load(i))")
    count = _dataset.num_samples()
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise CommandFailed(f"{_dataset_path}: num_samples() returned {count!r}, expected a non-negative int")
    return count

@command("load")
def _load(arguments, tensors):
    feed = _dataset.load(arguments["index"])
    if not isinstance(feed, dict):
        raise CommandFailed(f"load({arguments['index']}) returned a {type(feed).__name__}, "
                            "expected a dict of input name -> array")
    for name in feed:
        if not isinstance(name, str):
            raise CommandFailed(f"load({arguments['index']}): input names must be strings, got {name!r}")
    return Reply(None, feed)
)PY";

class ScriptDataset : public DatasetSource {
 public:
  ScriptDataset(const fs::path& script, const std::string& python) : script_(script) {
    PythonWorkerOptions options;
    options.name = fmt::format("the dataset script {}", script.string());
    options.interpreter = python;
    // The script's path as a JSON string, which is also a Python string literal.
    options.commands = fmt::format("_dataset_path = {}\n{}", nlohmann::json(script.string()).dump(), kScriptCommands);
    worker_ = std::make_unique<PythonWorker>(options);
    try {
      size_ = worker_->call("describe").result.get<std::size_t>();
    } catch (const PythonCommandError& error) {
      raise<InvalidInputError>("--dataset {}: {}", script.string(), last_part(error.what()));
    }
  }
  std::size_t size() const override { return size_; }
  NamedTensors load(std::size_t index) override {
    try {
      return worker_->call("load", {{"index", index}}).tensors;
    } catch (const PythonCommandError& error) {
      raise<InvalidInputError>("--dataset {}: sample {}: {}", script_.string(), index, last_part(error.what()));
    }
  }
  std::string describe() const override { return fmt::format("script {} ({} samples)", script_.string(), size_); }

 private:
  // PythonCommandError's message is "<worker>: <command>: <error>"; the error is what users need.
  static std::string last_part(const std::string& message) {
    auto at = message.find(": describe: ");
    if (at == std::string::npos) at = message.find(": load: ");
    return at == std::string::npos ? message : message.substr(message.find(": ", at + 2) + 2);
  }

  fs::path script_;
  std::unique_ptr<PythonWorker> worker_;
  std::size_t size_ = 0;
};

}  // namespace

std::unique_ptr<DatasetSource> open_dataset(const std::string& spec, const std::string& python) {
  std::error_code error;
  const fs::path path(spec);
  if (fs::is_directory(path, error)) return std::make_unique<NpzFolderDataset>(path);
  if (!fs::exists(path, error)) raise<FileError>("--dataset {}: no such file or folder", spec);
  if (path.extension() != ".py")
    raise<InvalidInputError>("--dataset {}: expected a folder of .npz files or a Python script (.py) defining "
                             "num_samples() and load(i)",
                             spec);
  return std::make_unique<ScriptDataset>(path, python);
}

}  // namespace parity::runtime
