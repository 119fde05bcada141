// The remembered answers of the Python interpreters' onnxruntime packages (see ort_library_cache.h).
//
// File layout (text, UTF-8 paths as the system gives them):
//   line 1: "parity onnxruntime-library cache 1"
//   then one record per line, fields separated by tabs:
//     interpreter, interpreter stamp, $PYTHONPATH, $PYTHONHOME, library, library stamp, outcome,
//     then (folder, folder stamp) pairs for the watched sys.path folders.
#include "ort_library_cache.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"

namespace parity::runtime::onnxrt {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kHeader = "parity onnxruntime-library cache 1";
constexpr std::size_t kFixedFields = 7;

std::string environment_value(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    auto at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

bool is_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "missing" or "<digits>:<digits>", as file_stamp writes them.
bool is_stamp(std::string_view text) {
  if (text == "missing") return true;
  auto colon = text.find(':');
  return colon != std::string_view::npos && is_digits(text.substr(0, colon)) && is_digits(text.substr(colon + 1));
}

bool fits_on_one_line(const std::string& field) { return field.find_first_of("\t\n\r") == std::string::npos; }

bool writable(const PythonLibraryRecord& record) {
  if (!fits_on_one_line(record.interpreter) || !fits_on_one_line(record.python_path) ||
      !fits_on_one_line(record.python_home) || !fits_on_one_line(record.library) || !fits_on_one_line(record.outcome))
    return false;
  return std::all_of(record.watched_folders.begin(), record.watched_folders.end(),
                     [](const auto& folder) { return fits_on_one_line(folder.first); });
}

std::optional<PythonLibraryRecord> parse_record(std::string_view line) {
  auto fields = split(line, '\t');
  if (fields.size() < kFixedFields || (fields.size() - kFixedFields) % 2 != 0) return std::nullopt;
  PythonLibraryRecord record;
  record.interpreter = fields[0];
  record.interpreter_stamp = fields[1];
  record.python_path = fields[2];
  record.python_home = fields[3];
  record.library = fields[4];
  record.library_stamp = fields[5];
  record.outcome = fields[6];
  for (std::size_t i = kFixedFields; i < fields.size(); i += 2) {
    if (fields[i].empty() || !is_stamp(fields[i + 1])) return std::nullopt;
    record.watched_folders.emplace_back(fields[i], fields[i + 1]);
  }
  if (record.interpreter.empty() || record.interpreter.front() != '/' || !is_stamp(record.interpreter_stamp))
    return std::nullopt;
  bool found = !record.library.empty();
  if (found ? !is_stamp(record.library_stamp) || record.library.front() != '/'
            : !record.library_stamp.empty() || record.outcome.empty())
    return std::nullopt;
  return record;
}

std::string format_record(const PythonLibraryRecord& record) {
  std::string line = fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}", record.interpreter, record.interpreter_stamp,
                                 record.python_path, record.python_home, record.library, record.library_stamp,
                                 record.outcome);
  for (const auto& [folder, stamp] : record.watched_folders) line += fmt::format("\t{}\t{}", folder, stamp);
  return line;
}

}  // namespace

std::string file_stamp(const fs::path& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) return "missing";
  long long nanoseconds = static_cast<long long>(status.st_mtim.tv_sec) * 1'000'000'000LL + status.st_mtim.tv_nsec;
  return fmt::format("{}:{}", nanoseconds, static_cast<long long>(status.st_size));
}

PythonLibraryRecord record_now(const std::string& interpreter, const std::string& library, const std::string& outcome,
                               const std::vector<std::string>& watched_folders) {
  PythonLibraryRecord record;
  record.interpreter = interpreter;
  record.interpreter_stamp = file_stamp(interpreter);
  record.python_path = environment_value("PYTHONPATH");
  record.python_home = environment_value("PYTHONHOME");
  record.library = library;
  record.library_stamp = library.empty() ? "" : file_stamp(library);
  record.outcome = library.empty() ? outcome : "";
  for (const auto& folder : watched_folders) record.watched_folders.emplace_back(folder, file_stamp(folder));
  return record;
}

std::optional<LibraryCache> LibraryCache::default_cache() {
  std::string base = environment_value("XDG_CACHE_HOME");
  if (base.empty() || base.front() != '/') {  // the XDG spec: a relative value is ignored
    std::string home = environment_value("HOME");
    if (home.empty()) return std::nullopt;
    base = (fs::path(home) / ".cache").string();
  }
  return LibraryCache(fs::path(base) / "parity" / "onnxruntime-library.cache");
}

std::vector<PythonLibraryRecord> LibraryCache::read_all() const {
  std::string text;
  try {
    std::error_code error;
    if (!fs::is_regular_file(file_, error)) return {};
    text = read_file(file_);
  } catch (const Error& error) {
    log::extra_verbose("ONNX Runtime library cache not read: {}", error.what());
    return {};
  }
  auto lines = split(text, '\n');
  if (lines.empty() || lines.front() != kHeader) {
    log::extra_verbose("ONNX Runtime library cache {} does not parse (unknown header); ignoring it", file_.string());
    return {};
  }
  std::vector<PythonLibraryRecord> records;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty() && i + 1 == lines.size()) break;  // the final newline
    auto record = parse_record(lines[i]);
    if (!record) {
      log::extra_verbose("ONNX Runtime library cache {} does not parse (line {}); ignoring it", file_.string(), i + 1);
      return {};
    }
    records.push_back(std::move(*record));
  }
  return records;
}

std::optional<PythonLibraryRecord> LibraryCache::find_valid(const std::string& interpreter) const {
  auto records = read_all();
  auto it = std::find_if(records.rbegin(), records.rend(),
                         [&](const PythonLibraryRecord& record) { return record.interpreter == interpreter; });
  if (it == records.rend()) return std::nullopt;
  std::vector<std::string> folders;
  for (const auto& folder : it->watched_folders) folders.push_back(folder.first);
  if (record_now(it->interpreter, it->library, it->outcome, folders) != *it) {
    log::extra_verbose("ONNX Runtime library cache: the record for {} is out of date", interpreter);
    return std::nullopt;
  }
  return *it;
}

bool LibraryCache::store(const PythonLibraryRecord& record) const {
  if (!writable(record)) {
    log::extra_verbose("ONNX Runtime library cache: not remembering {} (a path with a tab or newline)",
                       record.interpreter);
    return false;
  }
  auto records = read_all();
  std::erase_if(records, [&](const PythonLibraryRecord& old) { return old.interpreter == record.interpreter; });
  records.push_back(record);
  if (records.size() > kMaxRecords) records.erase(records.begin(), records.end() - kMaxRecords);
  std::string text = std::string(kHeader) + "\n";
  for (const auto& kept : records) text += format_record(kept) + "\n";
  try {
    std::error_code error;
    fs::create_directories(file_.parent_path(), error);
    if (error)
      raise<FileError>("cannot create the folder {}: {}", file_.parent_path().string(), error.message());
    write_file_atomic(file_, text);
    return true;
  } catch (const Error& error) {
    log::extra_verbose("ONNX Runtime library cache {} not written: {}", file_.string(), error.what());
    return false;
  }
}

}  // namespace parity::runtime::onnxrt
