#include "parity/core/logger.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <string>

#include "parity/core/error.h"

namespace parity {
namespace {

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

Logger& Logger::global() {
  static Logger logger;
  return logger;
}

Logger::Logger() { set_stream(stdout); }

void Logger::set_stream(std::FILE* stream) {
  stream_ = stream;
  colour_ = stream && ::isatty(::fileno(stream));
}

void Logger::set_log_file(const std::filesystem::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) raise<FileError>("cannot open log file '{}' for writing", path.string());
  file_.reset(f);
}

void Logger::log(Severity severity, std::string_view message) {
  if (!enabled(severity)) return;
  const auto& style = style_of(severity);
  std::string prefix = style.prefix;
  if (format_.timestamp) {
    std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "[%Y-%m-%d %H:%M:%S] ", std::localtime(&now));
    prefix = stamp + prefix;
  }
  // Continuation lines line up after the "[I] " prefix; Indent adds 4 spaces per level.
  std::string indent(static_cast<std::size_t>(indent_) * 4, ' ');
  std::string continuation(4, ' ');
  std::string body = indent;
  for (char c : message) {
    body += c;
    if (c == '\n') body += continuation + indent;
  }
  std::string plain = prefix + " " + body + "\n";
  if (!silent_ && stream_) {
    bool coloured = colour_ && !format_.no_colors && style.colour[0] != '\0';
    std::string line = coloured ? std::string(style.colour) + prefix + " " + body + "\033[0m\n" : plain;
    std::fwrite(line.data(), 1, line.size(), stream_);
    std::fflush(stream_);
  }
  if (file_) {
    std::fwrite(plain.data(), 1, plain.size(), file_.get());
    std::fflush(file_.get());
  }
}

}  // namespace parity
