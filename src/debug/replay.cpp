#include "parity/debug/replay.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "parity/core/error.h"
#include "parity/core/json_depth.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"

namespace parity::debug {
namespace {

// Polygraphy's replay: an object whose every key names an iteration ("_N<index>[_<suffix>]").
bool is_polygraphy_replay(const nlohmann::json& json) {
  if (!json.is_object() || json.empty()) return false;
  for (const auto& [key, value] : json.items())
    if (key.rfind("_N", 0) != 0 || !value.is_array()) return false;
  return true;
}

}  // namespace

std::filesystem::path replay_journal_path(const std::filesystem::path& replay) {
  std::filesystem::path journal = replay;
  journal += ".journal";
  return journal;
}

// The saved replay: the steps recorded, the replay file rewritten whole when their count doubles,
// and the steps since then appended to the journal.
class DebugReplay::Writer {
 public:
  Writer(std::filesystem::path save, nlohmann::json header)
      : save_(std::move(save)), journal_(replay_journal_path(save_)), header_(std::move(header)) {}

  ~Writer() {
    if (compacted_ == steps_.size() && !journal_open()) return;
    try {
      compact();
      std::filesystem::remove(journal_);
    } catch (const std::exception& error) {
      log::warning("{}: the debug replay was not written whole ({}); its steps are in {}", save_.string(),
                   error.what(), journal_.string());
    }
    close_journal();
  }

  void record(nlohmann::json step) {
    steps_.push_back(std::move(step));
    if (steps_.size() >= 2 * compacted_) {
      compact();
      return;
    }
    append(steps_.back().dump() + "\n");
  }

 private:
  bool journal_open() const { return fd_ >= 0; }

  // The replay file with every step (atomic), then an empty journal: a crash between the two
  // leaves steps in both, which loading takes once (by key).
  void compact() {
    nlohmann::json json = header_;
    json["steps"] = steps_;
    write_file_atomic(save_, json.dump(2) + "\n");
    compacted_ = steps_.size();
    if (!journal_open()) {
      std::error_code ignored;  // a journal left by an earlier run into this file is obsolete now
      std::filesystem::remove(journal_, ignored);
    } else if (::ftruncate(fd_, 0) != 0) {
      raise<FileError>("{}: cannot empty the debug replay's journal: {}", journal_.string(), std::strerror(errno));
    }
  }

  void append(const std::string& line) {
    if (!journal_open()) {
      fd_ = ::open(journal_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
      if (fd_ < 0) raise<FileError>("{}: cannot write the debug replay's journal: {}", journal_.string(), std::strerror(errno));
    }
    std::size_t done = 0;
    while (done < line.size()) {
      ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) raise<FileError>("{}: cannot write the debug replay's journal: {}", journal_.string(), std::strerror(errno));
      done += static_cast<std::size_t>(n);
    }
    if (::fdatasync(fd_) != 0 && errno != EINVAL)
      raise<FileError>("{}: cannot write the debug replay's journal: {}", journal_.string(), std::strerror(errno));
  }

  void close_journal() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  std::filesystem::path save_, journal_;
  nlohmann::json header_;
  nlohmann::json steps_ = nlohmann::json::array();
  std::size_t compacted_ = 0;  // steps in the replay file
  int fd_ = -1;                // the journal, once a step went there
};

DebugReplay::DebugReplay(std::filesystem::path load, std::filesystem::path save, nlohmann::json header,
                         const std::vector<std::string>& required)
    : load_(std::move(load)) {
  if (!load_.empty()) read(required);
  // Opened after reading: saving to the file loaded (a run resumed in place) starts a new journal.
  if (!save.empty()) writer_ = std::make_unique<Writer>(std::move(save), std::move(header));
}

DebugReplay::~DebugReplay() = default;
DebugReplay::DebugReplay(DebugReplay&&) noexcept = default;
DebugReplay& DebugReplay::operator=(DebugReplay&&) noexcept = default;

void DebugReplay::read(const std::vector<std::string>& required) {
  try {
    std::string text = read_file(load_);
    check_json_depth(text, load_.string());
    loaded_ = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    raise<FileError>("{}: not a debug replay (invalid JSON: {})", load_.string(), e.what());
  }
  if (is_polygraphy_replay(loaded_))
    raise<FileError>("{}: a debug replay written by Polygraphy (its keys are Polygraphy's iterations, \"_N0_...\"); "
                     "Parity replays only its own (--save-debug-replay of the same Parity command)",
                     load_.string());
  bool complete = loaded_.is_object() && loaded_.contains("steps") && loaded_["steps"].is_array();
  for (const auto& field : required) complete = complete && loaded_.contains(field);
  if (!complete) {
    std::string fields = "'steps'";
    for (const auto& field : required) fields += " or '" + field + "'";
    raise<FileError>("{}: not a debug replay (no {})", load_.string(), fields);
  }
  auto take = [&](const nlohmann::json& step, const std::string& where) {
    if (!step.is_object() || !step.contains("key") || !step.contains("failed") || !step["key"].is_string() ||
        !step["failed"].is_boolean())
      raise<FileError>("{}: not a debug replay (a step without a string 'key' and a boolean 'failed': {})", where,
                       step.dump());
    loaded_steps_[step["key"].get<std::string>()] = step;
  };
  for (const auto& step : loaded_["steps"]) take(step, load_.string());
  // The steps a run recorded after the replay file was last written whole.
  const std::filesystem::path journal = replay_journal_path(load_);
  std::error_code error;
  if (!std::filesystem::is_regular_file(journal, error)) return;
  std::istringstream lines(read_file(journal));
  std::string line;
  while (std::getline(lines, line)) {
    if (lines.eof()) break;  // no line break: a write cut short when the run was killed
    nlohmann::json step;
    try {
      step = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      raise<FileError>("{}: not a debug replay's journal (invalid JSON: {})", journal.string(), e.what());
    }
    if (!loaded_steps_.count(step.value("key", std::string()))) loaded_["steps"].push_back(step);
    take(step, journal.string());
  }
}

const nlohmann::json& DebugReplay::loaded_field(const std::string& name) const {
  static const nlohmann::json null;
  if (!loaded_.is_object() || !loaded_.contains(name)) return null;
  return loaded_[name];
}

std::optional<nlohmann::json> DebugReplay::find(const std::string& key) const {
  auto it = loaded_steps_.find(key);
  if (it == loaded_steps_.end()) return std::nullopt;
  // Polygraphy's line for a replayed iteration (its Python bool).
  log::info("Loading iteration information from debug replay: success={}",
            it->second["failed"].get<bool>() ? "False" : "True");
  return it->second;
}

void DebugReplay::record(nlohmann::json step) {
  if (writer_) writer_->record(std::move(step));
}

}  // namespace parity::debug
