// --report-html PATH: the run as one self-contained HTML page (parity/compare/html_report.h).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "parity/compare/html_report.h"

namespace parity::cli {

class ComparisonArgs;

class ReportHtmlArgs {
 public:
  void add_to(CLI::App& app);
  // Checks that the page can be written (before anything runs: FileError otherwise).
  void parse();
  // Collects each `simple` comparison's pictures (after comparison.parse()).
  void attach(ComparisonArgs& comparison);
  // Runs `body`; an error it throws is written on the page (when one was asked for) and rethrown.
  bool guard(const std::string& command, const std::function<bool()>& body);
  // Shows the error attribution on the page (when one is asked for); nothing for nullptr.
  void add_attribution(const compare::AttributionResult* result, std::size_t top_count);
  // Writes the page of a run that reached its verdict.
  void write(const std::string& command, const compare::Verdict& verdict, std::size_t worst_count);

 private:
  std::string path_;
  std::unique_ptr<compare::HtmlReport> report_;
};

}  // namespace parity::cli
