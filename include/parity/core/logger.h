// Polygraphy-style logging: severities and prefixes ([V], [I], [W], [E], [!]...), continuation
// lines indented under the prefix, colours only on a terminal, optional log file.
//
// Threads: every Logger member may be called from several threads at once (ONNX Runtime's and
// OpenVINO's log callbacks run on their own threads). A message is composed and handed to the sink
// (and the log file) under one mutex, so lines never interleave; the severity, silence and
// indentation are atomics, read without the lock. Indentation is one process-wide setting, as in
// Polygraphy: an Indent alive on one thread also indents the lines other threads log meanwhile.
#pragma once

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "parity/core/severity_rules.h"

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

// Continuation lines of a message always start 4 spaces (plus the indentation) in, under the
// message's first character when no timestamp or location precedes it; Polygraphy lines them up
// under the whole prefix, but Parity keeps one column for them whatever the format.
struct LogFormat {
  bool timestamp = false;  // prefix each message with the wall-clock time: "[2024-01-31 12:00:00] [I] ..."
  bool line_info = false;  // name the logging call's source file and line: "[I] [runner.cpp:42] ..."
  bool no_colors = false;  // never colour, even on a terminal
};

// Where finished messages go. The Logger calls write() once per message, with its mutex held:
// calls never overlap, so a sink needs no locking of its own, but it must not log (that would
// deadlock). `text` is the whole message as printed: prefix, indentation and continuation lines
// applied, lines separated by '\n', ending in '\n'.
//
// Colour: the Logger colours `text` (ANSI escapes, by severity) only for a sink whose
// wants_colour() is true and only when colours are not switched off (--log-format no-colors).
// The default stream sink wants colour when its stream is a terminal; any other sink gets plain
// text unless it overrides wants_colour().
//
// A sink that takes a lock of its own (e.g. Python's GIL, for bindings that route lines to
// sys.stdout) must not be entered by a thread that holds that lock while logging, or the two
// locks deadlock: release the GIL around calls into Parity.
class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void write(Severity severity, std::string_view text) = 0;
  virtual bool wants_colour() const { return false; }
};

// The default sink: writes each message to a C stream (not owned) and flushes it.
class StreamLogSink final : public LogSink {
 public:
  explicit StreamLogSink(std::FILE* stream);
  void write(Severity severity, std::string_view text) override;
  // True when the stream is a terminal.
  bool wants_colour() const override { return terminal_; }

 private:
  std::FILE* stream_;
  bool terminal_;
};

class Logger {
 public:
  static Logger& global();

  // The default severity: calls that no per-path rule covers log at this severity and above.
  Severity severity() const { return severity_.load(std::memory_order_relaxed); }
  void set_severity(Severity severity) { severity_.store(severity, std::memory_order_relaxed); }
  // Whether a message of `severity` logged from `location` (the caller's by default) is shown.
  // Without per-path rules this is one comparison with the default; with them, the rule that
  // covers the location's file decides (looked up once per file, then cached).
  bool enabled(Severity severity, std::source_location location = std::source_location::current()) const {
    if (!has_path_rules_.load(std::memory_order_relaxed)) return severity >= this->severity();
    return severity >= severity_at(location.file_name());
  }

  // Per-path severities (`--verbosity LEVEL path:LEVEL ...`, Polygraphy's module_severity): each
  // rule sets the severity of the logging calls in the folder or file it names (see
  // severity_rules.h), over the default; the most specific rule wins. Replaces the rules set
  // before; an empty list removes them. Throws InvalidInputError for a rule with an empty path.
  void set_path_severities(const std::vector<PathSeverity>& rules);
  std::vector<PathSeverity> path_severities() const;
  // The severity that applies to logging calls in `source_file` (a source location's file name:
  // a static string, whose address keys a cache).
  Severity severity_at(const char* source_file) const;
  // The same for any path of the source tree, held or not (uncached: for callers whose file names
  // are not static, such as Python's logger).
  Severity severity_for_path(std::string_view source_file) const;

  LogFormat format() const;
  void set_format(LogFormat format);
  // Also writes every message (uncoloured) to `path`, whatever the sink and even when silent;
  // throws FileError if it cannot be opened.
  void set_log_file(const std::filesystem::path& path);
  // Sends messages to `stream` (stdout by default) through a StreamLogSink: the same as
  // set_sink(std::make_shared<StreamLogSink>(stream)).
  void set_stream(std::FILE* stream);
  // Sends messages to `sink` instead; nullptr restores the default (a StreamLogSink on stdout).
  void set_sink(std::shared_ptr<LogSink> sink);
  // Suppresses all output to the sink (--silent); the log file still gets every message.
  void set_silent(bool silent) { silent_.store(silent, std::memory_order_relaxed); }

  // `location` is printed with LogFormat::line_info; log::info(...) and friends pass their caller's.
  void log(Severity severity, std::string_view message,
           std::source_location location = std::source_location::current());
  // As log(), for a caller that has already decided the message is shown (Python's logger, which
  // matches the per-path rules against its own caller's file): no severity check.
  void write(Severity severity, std::string_view message,
             std::source_location location = std::source_location::current());

  // While alive, messages are indented by `levels` more steps of 4 spaces.
  class Indent {
   public:
    explicit Indent(int levels = 1) : levels_(levels) { Logger::global().indent_.fetch_add(levels_); }
    ~Indent() { Logger::global().indent_.fetch_sub(levels_); }
    Indent(const Indent&) = delete;
    Indent& operator=(const Indent&) = delete;

   private:
    int levels_;
  };

 private:
  Logger();
  std::atomic<Severity> severity_{Severity::kInfo};
  std::atomic<bool> silent_{false};
  std::atomic<int> indent_{0};
  std::atomic<bool> has_path_rules_{false};
  mutable std::mutex rules_mutex_;  // guards the rules and the cache of each file's rule
  SeverityRules path_rules_;
  // For each source file name seen (a string literal, so its address is stable), the severity of
  // the rule covering it, or nothing when no rule does; cleared when the rules change.
  mutable std::unordered_map<const char*, std::optional<Severity>> rule_of_file_;
  mutable std::mutex mutex_;  // guards everything below, and the writing of each message
  LogFormat format_;
  std::shared_ptr<LogSink> sink_;
  struct FileCloser {
    void operator()(std::FILE* f) const {
      if (f) std::fclose(f);
    }
  };
  std::unique_ptr<std::FILE, FileCloser> file_;
};

namespace log {

// A format string checked at compile time against the argument types (as fmt::format_string),
// together with the source location of the log call it is written in (for LogFormat::line_info).
// Its constructor is consteval, so `log::info("...", args...)` captures the caller's location.
template <typename... A>
class LocatedFormatString {
 public:
  template <typename S>
    requires(std::is_convertible_v<const S&, fmt::string_view> &&
             !std::is_same_v<std::remove_cvref_t<S>, fmt::format_string<A...>>)
  consteval LocatedFormatString(const S& text, std::source_location location = std::source_location::current())
      : format_(text), location_(location) {}
  // An already checked format string (passed on by another function that takes one).
  LocatedFormatString(fmt::format_string<A...> format,
                      std::source_location location = std::source_location::current())
      : format_(format), location_(location) {}

  fmt::format_string<A...> format() const { return format_; }
  const std::source_location& location() const { return location_; }

 private:
  fmt::format_string<A...> format_;
  std::source_location location_;
};

template <typename... A>
using format_string = LocatedFormatString<std::type_identity_t<A>...>;

template <typename... A>
void at(Severity s, format_string<A...> f, A&&... a) {
  auto& logger = Logger::global();
  if (logger.enabled(s, f.location())) logger.log(s, fmt::format(f.format(), std::forward<A>(a)...), f.location());
}
#define PARITY_LOG_FUNCTION(name, sev)                \
  template <typename... A>                            \
  void name(format_string<A...> f, A&&... a) {        \
    at(sev, std::move(f), std::forward<A>(a)...);     \
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
