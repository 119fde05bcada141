#include "data_loader_script.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"

extern char** environ;

namespace parity::cli {
namespace {

namespace fs = std::filesystem;

// Imports the script as a module (its folder first on sys.path, as `python script.py` would have
// it), calls the function and writes every array of every feed as .npy, with feeds.json listing
// [[name, file], ...] per iteration in the order the script gave.
constexpr const char* kDriver = R"PY(
import importlib.util, json, os, sys
script, function, out = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    import numpy as np
except ImportError:
    sys.exit("numpy is not installed in " + sys.executable + " (set PARITY_PYTHON to a Python that has it)")
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
spec = importlib.util.spec_from_file_location("parity_data_loader_script", script)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
if not hasattr(module, function):
    sys.exit(f"{script} defines no '{function}'")
loader = getattr(module, function)
data = loader() if callable(loader) else loader
feeds = []
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
        file = f"{index}_{len(entries)}.npy"
        np.save(os.path.join(out, file), array, allow_pickle=False)
        entries.append([name, file])
    feeds.append(entries)
with open(os.path.join(out, "feeds.json"), "w") as f:
    json.dump(feeds, f)
)PY";

class TempFolder {
 public:
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "parity-data-loader-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      raise<FileError>("cannot create a temporary folder for the data loader script: {}", std::strerror(errno));
    path_ = pattern;
  }
  ~TempFolder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string python_interpreter() {
  const char* configured = std::getenv("PARITY_PYTHON");
  return configured && *configured ? configured : "python3";
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

std::vector<NamedTensors> run_data_loader_script(const ScriptSpec& script) {
  const std::string what = fmt::format("--data-loader-script {}", script.path);
  std::error_code error;
  if (!fs::is_regular_file(script.path, error)) raise<FileError>("{}: no such file", what);
  TempFolder folder;
  const fs::path log_path = folder.path() / "stderr.txt";
  const std::string python = python_interpreter();
  log::info("Running data loader script {} (function {}) with {}", script.path, script.function, python);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);  // the script's prints too
  std::string folder_text = folder.path().string();
  std::vector<std::string> args{python, "-c", kDriver, script.path, script.function, folder_text};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int spawned = ::posix_spawnp(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    raise<InvalidInputError>("{}: cannot start the Python interpreter '{}': {} (set PARITY_PYTHON)", what, python,
                             std::strerror(spawned));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) raise<InternalError>("{}: waiting for Python failed: {}", what, std::strerror(errno));

  std::string output;
  if (fs::exists(log_path, error)) output = read_file(log_path);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    // The end of the traceback says what went wrong; the whole of it is at verbose level.
    while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
    auto last = output.rfind('\n');
    std::string summary = last == std::string::npos ? output : output.substr(last + 1);
    if (!output.empty()) log::verbose("{} wrote:\n{}", what, output);
    raise<InvalidInputError>("{}: the script failed ({}): {}", what,
                             WIFEXITED(status) ? fmt::format("exit code {}", WEXITSTATUS(status))
                                               : fmt::format("signal {}", WTERMSIG(status)),
                             summary.empty() ? std::string("no message") : summary);
  }
  if (!output.empty()) log::info("{} printed:\n{}", what, output);

  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(read_file(folder.path() / "feeds.json"));
  } catch (const nlohmann::json::exception& e) {
    raise<InternalError>("{}: unreadable list of feeds: {}", what, e.what());
  }
  std::vector<NamedTensors> feeds;
  for (const auto& iteration : manifest) {
    NamedTensors feed;
    for (const auto& entry : iteration) {
      std::string name = entry.at(0).get<std::string>();
      feed.emplace_back(name, with_context(fmt::format("{}: iteration {}: input '{}'", what, feeds.size(), name),
                                           [&] { return load_npy(folder.path() / entry.at(1).get<std::string>()); }));
    }
    feeds.push_back(std::move(feed));
  }
  if (feeds.empty()) raise<InvalidInputError>("{}: '{}' gave no feeds", what, script.function);
  log::info("Loaded {} iteration(s) of inputs from {}", feeds.size(), script.path);
  return feeds;
}

}  // namespace parity::cli
