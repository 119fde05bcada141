// Polygraphy-style logging: severities and prefixes ([V], [I], [W], [E], [!]...), continuation
// lines indented under the prefix, colours only on a terminal, optional log file.
#pragma once

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace parity {

enum class Severity : int {
  kUltraVerbose = -20,  // [U]
  kSuperVerbose = -10,  // [S]
  kExtraVerbose = 0,    // [X]
  kVerbose = 10,        // [V]
  kInfo = 20,           // [I]
  kStart = 22,          // [I] (cyan)
  kFinish = 28,         // [I] (green)
  kWarning = 30,        // [W]
  kError = 40,          // [E]
  kCritical = 50,       // [!]
};

// Parses "verbose", "info", "VERBOSE", "warning"... (Polygraphy's --verbosity names).
Severity severity_from_name(std::string_view name);

struct LogFormat {
  bool timestamp = false;  // prefix each message with the wall-clock time
  bool line_info = false;  // reserved for parity with Polygraphy's 'line-info' (C++: no frames)
  bool no_colors = false;  // never colour, even on a terminal
};

class Logger {
 public:
  static Logger& global();

  Severity severity() const { return severity_; }
  void set_severity(Severity severity) { severity_ = severity; }
  bool enabled(Severity severity) const { return severity >= severity_; }

  void set_format(LogFormat format) { format_ = format; }
  // Also writes every message (uncoloured) to `path`; throws FileError if it cannot be opened.
  void set_log_file(const std::filesystem::path& path);
  // Where messages go (stdout by default). Colours are used only when it is a terminal.
  void set_stream(std::FILE* stream);
  // Suppresses all output (--silent).
  void set_silent(bool silent) { silent_ = silent; }

  void log(Severity severity, std::string_view message);

  // While alive, messages are indented by `levels` more steps of 4 spaces.
  class Indent {
   public:
    explicit Indent(int levels = 1) : levels_(levels) { Logger::global().indent_ += levels_; }
    ~Indent() { Logger::global().indent_ -= levels_; }
    Indent(const Indent&) = delete;
    Indent& operator=(const Indent&) = delete;
   private:
    int levels_;
  };

 private:
  Logger();
  Severity severity_ = Severity::kInfo;
  LogFormat format_;
  std::FILE* stream_;
  bool colour_ = false;
  bool silent_ = false;
  int indent_ = 0;
  struct FileCloser { void operator()(std::FILE* f) const { if (f) std::fclose(f); } };
  std::unique_ptr<std::FILE, FileCloser> file_;
};

namespace log {
template <typename... A>
void at(Severity s, fmt::format_string<A...> f, A&&... a) {
  auto& logger = Logger::global();
  if (logger.enabled(s)) logger.log(s, fmt::format(f, std::forward<A>(a)...));
}
#define PARITY_LOG_FUNCTION(name, sev)                        \
  template <typename... A>                                    \
  void name(fmt::format_string<A...> f, A&&... a) {           \
    at(sev, f, std::forward<A>(a)...);                        \
  }
PARITY_LOG_FUNCTION(ultra_verbose, Severity::kUltraVerbose)
PARITY_LOG_FUNCTION(super_verbose, Severity::kSuperVerbose)
PARITY_LOG_FUNCTION(extra_verbose, Severity::kExtraVerbose)
PARITY_LOG_FUNCTION(verbose, Severity::kVerbose)
PARITY_LOG_FUNCTION(info, Severity::kInfo)
PARITY_LOG_FUNCTION(start, Severity::kStart)
PARITY_LOG_FUNCTION(finish, Severity::kFinish)
PARITY_LOG_FUNCTION(warning, Severity::kWarning)
PARITY_LOG_FUNCTION(error, Severity::kError)
#undef PARITY_LOG_FUNCTION
}  // namespace log

}  // namespace parity
