// Parity's errors as Python exceptions, and its logger routed to Python's sys.stdout.
#include <Python.h>

#include <cstdio>

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "conversion.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::python {

using namespace nb::literals;

namespace {

// Writes each finished message to whatever sys.stdout is at that moment (pytest's capture,
// Jupyter's stream), in the order the logger hands them over. Messages logged while the
// interpreter shuts down go to the C stdout.
class PythonStdoutSink final : public LogSink {
 public:
  void write(Severity, std::string_view text) override {
    if (python_is_finalizing()) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      return;
    }
    nb::gil_scoped_acquire gil;
    try {
      nb::object out = nb::module_::import_("sys").attr("stdout");
      if (out.is_none()) return;
      out.attr("write")(nb::str(text.data(), text.size()));
    } catch (nb::python_error& error) {
      error.discard_as_unraisable("parity's log sink (sys.stdout.write)");
    }
  }
};

}  // namespace

void bind_errors(nb::module_& m) {
  static nb::exception<Error> base(m, "ParityError");
  static nb::exception<InvalidInputError> invalid(m, "InvalidInputError", base);
  static nb::exception<FileError> file(m, "FileError", base);
  static nb::exception<UnsupportedError> unsupported(m, "UnsupportedError", base);
  static nb::exception<ResourceLimitError> limit(m, "ResourceLimitError", base);
  static nb::exception<InternalError> internal(m, "InternalError", base);
}

void bind_logger(nb::module_& m) {
  // Python's Logger decides whether a message is shown (by its caller's file); this only writes it.
  m.def(
      "log",
      [](int severity, const std::string& message) {
        Logger::global().write(static_cast<Severity>(severity), message);
      },
      "severity"_a, "message"_a, nb::call_guard<nb::gil_scoped_release>());
  m.def("log_severity", [] { return static_cast<int>(Logger::global().severity()); });
  m.def("set_log_severity", [](int severity) { Logger::global().set_severity(static_cast<Severity>(severity)); });
  // Per-path rules (Polygraphy's module_severity dict): (path, severity) pairs, paths normalised.
  m.def("log_path_severities", [] {
    std::vector<std::pair<std::string, int>> rules;
    for (const auto& rule : Logger::global().path_severities())
      rules.emplace_back(rule.path, static_cast<int>(rule.severity));
    return rules;
  });
  m.def("set_log_path_severities", [](const std::vector<std::pair<std::string, int>>& rules) {
    std::vector<PathSeverity> converted;
    for (const auto& [path, severity] : rules) converted.push_back(PathSeverity{path, static_cast<Severity>(severity)});
    Logger::global().set_path_severities(converted);
  }, "rules"_a);
  // The severity that applies to messages logged from `path` (a file of Parity's tree).
  m.def("log_severity_at", [](const std::string& path) {
    return static_cast<int>(Logger::global().severity_for_path(path));
  }, "path"_a);
  m.def("set_log_file", [](const std::string& path) { Logger::global().set_log_file(path); },
        nb::call_guard<nb::gil_scoped_release>());
  // While an instance is alive, every message (C++ and Python) is indented by `levels` more steps.
  nb::class_<Logger::Indent>(m, "LogIndent").def(nb::init<int>(), "levels"_a = 1);
  m.def("route_log_to_python", [] { Logger::global().set_sink(std::make_shared<PythonStdoutSink>()); },
        nb::call_guard<nb::gil_scoped_release>());
  m.def("route_log_to_c_stdout", [] { Logger::global().set_sink(nullptr); },
        nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace parity::python
