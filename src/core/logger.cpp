#include "parity/core/logger.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <string>

#include "parity/core/error.h"
#include "parity/core/log_file_status.h"

namespace parity {
namespace {

// The log file's path and, once a write to it failed, why (both written under the Logger's mutex;
// the failure is read after the command, when no thread logs any more).
std::string log_file_path;
std::optional<std::string> log_file_error;

struct SeverityStyle {
  Severity severity;
  const char* name;
  const char* prefix;
  const char* colour;  // ANSI escape, empty for none
};

constexpr SeverityStyle kStyles[] = {
    {Severity::kUltraVerbose, "ultra_verbose", "[U]", "\033[90m"},
    {Severity::kSuperVerbose, "super_verbose", "[S]", "\033[90m"},
    {Severity::kExtraVerbose, "extra_verbose", "[X]", "\033[90m"},
    {Severity::kVerbose, "verbose", "[V]", "\033[90m"},
    {Severity::kInfo, "info", "[I]", ""},
    {Severity::kStart, "start", "[I]", "\033[96m"},
    {Severity::kFinish, "finish", "[I]", "\033[92m"},
    {Severity::kWarning, "warning", "[W]", "\033[93m"},
    {Severity::kError, "error", "[E]", "\033[91m"},
    {Severity::kCritical, "critical", "[!]", "\033[91m"},
};

const SeverityStyle& style_of(Severity severity) {
  for (const auto& style : kStyles)
    if (style.severity == severity) return style;
  return kStyles[4];
}

}  // namespace

Severity severity_from_name(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& style : kStyles)
    if (lower == style.name) return style.severity;
  raise<InvalidInputError>(
      "unknown verbosity '{}' (expected one of ultra_verbose, super_verbose, extra_verbose, verbose, "
      "info, start, finish, warning, error, critical)",
      name);
}

StreamLogSink::StreamLogSink(std::FILE* stream) : stream_(stream), terminal_(stream && ::isatty(::fileno(stream))) {}

void StreamLogSink::write(Severity /*severity*/, std::string_view text) {
  if (!stream_) return;
  std::fwrite(text.data(), 1, text.size(), stream_);
  std::fflush(stream_);
}

Logger& Logger::global() {
  static Logger logger;
  return logger;
}

Logger::Logger() : sink_(std::make_shared<StreamLogSink>(stdout)) {}

LogFormat Logger::format() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return format_;
}

void Logger::set_format(LogFormat format) {
  std::lock_guard<std::mutex> lock(mutex_);
  format_ = format;
}

void Logger::set_stream(std::FILE* stream) { set_sink(std::make_shared<StreamLogSink>(stream)); }

void Logger::set_sink(std::shared_ptr<LogSink> sink) {
  if (!sink) sink = std::make_shared<StreamLogSink>(stdout);
  std::lock_guard<std::mutex> lock(mutex_);
  sink_ = std::move(sink);
}

void Logger::set_log_file(const std::filesystem::path& path) {
  // As Polygraphy does, the file's folder is created when missing.
  std::error_code ignored;  // an uncreatable folder makes fopen fail just below, with the path named
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ignored);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) raise<FileError>("cannot open log file '{}' for writing", path.string());
  std::lock_guard<std::mutex> lock(mutex_);
  file_.reset(f);
  log_file_path = path.string();
  log_file_error.reset();
}

void Logger::set_path_severities(const std::vector<PathSeverity>& rules) {
  SeverityRules checked(rules);
  std::lock_guard<std::mutex> lock(rules_mutex_);
  path_rules_ = std::move(checked);
  rule_of_file_.clear();
  has_path_rules_.store(!path_rules_.empty(), std::memory_order_relaxed);
}

std::vector<PathSeverity> Logger::path_severities() const {
  std::lock_guard<std::mutex> lock(rules_mutex_);
  return path_rules_.rules();
}

Severity Logger::severity_at(const char* source_file) const {
  std::optional<Severity> rule;
  {
    std::lock_guard<std::mutex> lock(rules_mutex_);
    auto found = rule_of_file_.find(source_file);
    if (found == rule_of_file_.end())
      found = rule_of_file_.emplace(source_file, path_rules_.match(source_rule_path(source_file))).first;
    rule = found->second;
  }
  return rule.value_or(severity());
}

Severity Logger::severity_for_path(std::string_view source_file) const {
  const std::string rule_path = source_rule_path(source_file);
  std::optional<Severity> rule;
  {
    std::lock_guard<std::mutex> lock(rules_mutex_);
    rule = path_rules_.match(rule_path);
  }
  return rule.value_or(severity());
}

void Logger::log(Severity severity, std::string_view message, std::source_location location) {
  if (enabled(severity, location)) write(severity, message, location);
}

void Logger::write(Severity severity, std::string_view message, std::source_location location) {
  const auto& style = style_of(severity);
  // Continuation lines line up after the "[I] " prefix; Indent adds 4 spaces per level.
  std::string indent(static_cast<std::size_t>(std::max(indent_.load(), 0)) * 4, ' ');
  std::string body = indent;
  body.reserve(indent.size() + message.size());
  for (std::size_t start = 0; start < message.size();) {
    const std::size_t end = std::min(message.find('\n', start), message.size());
    body.append(message, start, end - start);
    if (end == message.size()) break;
    body.append("\n    ").append(indent);
    start = end + 1;
  }

  std::lock_guard<std::mutex> lock(mutex_);
  std::string prefix = style.prefix;
  if (format_.timestamp) {
    std::time_t now = std::time(nullptr);
    std::tm local{};
    ::localtime_r(&now, &local);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "[%Y-%m-%d %H:%M:%S] ", &local);
    prefix = stamp + prefix;
  }
  // Polygraphy's line-info: "[I] [file:line] message", the file by its base name.
  if (format_.line_info) {
    std::string_view file = location.file_name();
    if (auto slash = file.find_last_of("/\\"); slash != std::string_view::npos) file.remove_prefix(slash + 1);
    prefix += fmt::format(" [{}:{}]", file, location.line());
  }
  std::string plain = prefix + " " + body + "\n";
  if (!silent_.load(std::memory_order_relaxed)) {
    bool coloured = sink_->wants_colour() && !format_.no_colors && style.colour[0] != '\0';
    if (coloured)
      sink_->write(severity, std::string(style.colour) + prefix + " " + body + "\033[0m\n");
    else
      sink_->write(severity, plain);
  }
  if (file_) {
    errno = 0;
    const bool written = std::fwrite(plain.data(), 1, plain.size(), file_.get()) == plain.size() &&
                         std::fflush(file_.get()) == 0;
    if (!written) {
      log_file_error = fmt::format("'{}': {}", log_file_path, std::strerror(errno != 0 ? errno : EIO));
      file_.reset();
    }
  }
}

std::optional<std::string> log_file_failure() { return log_file_error; }

}  // namespace parity
