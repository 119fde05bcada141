// `--report-html report.html`: one self-contained HTML file of a run (no network requests: its
// script, style and pictures are inline; a Content-Security-Policy forbids anything else). It shows
// the verdict per output with the statistics of the JSON report, each compared tensor's error
// histogram and heatmap, and for a layerwise run the error along the execution order (tolerance
// and first divergence marked, hover for tensor, node, op and OpenVINO layer), the worst tensors
// linking to their histograms, and OpenVINO's executed layers with the ONNX nodes fused into each.
// With error attribution (parity/compare/attribution.h), the chart shows each tensor's local error
// as a second series beside its total error, and a table lists the top introducers.
// A run that fails before any comparison gets a page that says what happened.
//
// Pictures are collected while `simple` compares (SimpleOptions::on_compared), reduced so a 700-tensor
// run stays small: a histogram of each tensor's absolute error in decades (1e-12 .. 1e+4, plus zero
// and NaN/Inf counts), and a heatmap of at most 48 x 48 cells, each the largest absolute error of
// the block of elements it covers (the tensor seen as rows = all dimensions but the last, columns =
// the last), on a log scale quantized to 256 levels. Rank 0 and 1 get no heatmap (the page says so).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "parity/compare/attribution.h"
#include "parity/compare/compare_func.h"
#include "parity/compare/judge.h"

namespace parity::compare {

// Writes `page`, an HTML template whose <script type="application/json"> holds the marker @DATA@, to `path`
// (atomically), the marker replaced by `json` with every "</" escaped so that it cannot end the script.
// The run's page below and the debug commands' search page are written through it.
void write_html_page(const std::filesystem::path& path, std::string page, const std::string& json);

class HtmlReport {
 public:
  // Refuses (FileError) a path whose folder does not exist or cannot be written, before anything runs.
  explicit HtmlReport(std::filesystem::path path);

  // Collects the pictures of one compared pair; the first iteration's are kept.
  void collect(const ComparedPair& pair);
  ComparedPairObserver observer() {
    return [this](const ComparedPair& pair) { collect(pair); };
  }

  // Shows `result` on the page (its report JSON, to_json(result, top_count)): the local error of
  // each tensor beside its total error, and the top introducers.
  void add_attribution(const AttributionResult& result, std::size_t top_count);

  // Writes the page of a run that reached its verdict (atomically: no half-written file).
  void write(const std::string& command, const Verdict& verdict, std::size_t worst_count) const;
  // Writes the page of a run that ended with an error before its verdict.
  void write_failure(const std::string& command, const std::string& message) const;

  const std::filesystem::path& path() const { return path_; }

 private:
  struct Pictures {
    std::vector<int64_t> histogram;  // zero, decades 1e-12..1e+4 (17 bins: below, 16 decades), NaN/Inf
    int rows = 0, cols = 0;          // heatmap cells; 0: none
    std::string no_heatmap;          // why there is none
    double low = 0, high = 0;        // the heatmap's log10 range of positive finite errors
    std::string cells;               // rows*cols bytes, base64: 0 = zero error, 255 = NaN/Inf
  };
  void write_page(const nlohmann::json& data) const;

  std::filesystem::path path_;
  std::map<std::string, Pictures> pictures_;
  nlohmann::json attribution_;  // null without attribution
};

}  // namespace parity::compare
