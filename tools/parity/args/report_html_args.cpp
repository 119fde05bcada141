// --report-html PATH.
#include "args/report_html_args.h"

#include "args/comparison_args.h"
#include "parity/core/logger.h"

namespace parity::cli {

void ReportHtmlArgs::add_to(CLI::App& app) {
  app.add_option("--report-html", path_,
                 "Write the run as one self-contained HTML page (no network requests): the verdict per output with "
                 "its statistics, error histograms and heatmaps; layerwise, the error along the execution order, the "
                 "worst tensors and OpenVINO's fused layers (docs/pictures.md)")
      ->group("Comparator Comparisons");
}

void ReportHtmlArgs::parse() {
  if (!path_.empty() && !report_) report_ = std::make_unique<compare::HtmlReport>(path_);
}

void ReportHtmlArgs::attach(ComparisonArgs& comparison) {
  if (report_) comparison.add_on_compared(report_->observer());
}

bool ReportHtmlArgs::guard(const std::string& command, const std::function<bool()>& body) {
  try {
    return body();
  } catch (const std::exception& error) {
    if (report_) {
      report_->write_failure(command, error.what());
      log::info("Saved HTML report to {}", path_);
    }
    throw;
  }
}

void ReportHtmlArgs::add_attribution(const compare::AttributionResult* result, std::size_t top_count) {
  if (report_ && result) report_->add_attribution(*result, top_count);
}

void ReportHtmlArgs::write(const std::string& command, const compare::Verdict& verdict, std::size_t worst_count) {
  if (!report_) return;
  report_->write(command, verdict, worst_count);
  log::info("Saved HTML report to {}", path_);
}

}  // namespace parity::cli
