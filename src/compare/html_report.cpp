// `--report-html`: the self-contained HTML page of a run (parity/compare/html_report.h).
#include "parity/compare/html_report.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "html_report_page.h"
#include "parity/compare/layerwise.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/values.h"

namespace parity::compare {
namespace {

constexpr int kMaxCells = 48;
constexpr int kLowestDecade = -12;  // histogram bins: zero, < 1e-12, [1e-12,1e-11) .. [1e3,1e4), >= 1e4, NaN/Inf
constexpr int kDecades = 16;

std::string base64(const std::vector<unsigned char>& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const unsigned v = (bytes[i] << 16) | (i + 1 < bytes.size() ? bytes[i + 1] << 8 : 0) |
                       (i + 2 < bytes.size() ? bytes[i + 2] : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

// The histogram bin of a finite error > 0: 1 below 10^kLowestDecade, 2 + k for [10^(kLowestDecade+k),
// 10^(kLowestDecade+k+1)), kDecades + 2 from 10^(kLowestDecade+kDecades) up. A search among the edges
// rather than a log10 per element: this loop sees every element of every compared tensor.
std::size_t decade_bin(double error) {
  static const std::array<double, kDecades + 1> edges = [] {
    std::array<double, kDecades + 1> e{};
    for (int k = 0; k <= kDecades; ++k) e[static_cast<std::size_t>(k)] = std::pow(10.0, kLowestDecade + k);
    return e;
  }();
  return 1 + static_cast<std::size_t>(std::upper_bound(edges.begin(), edges.end(), error) - edges.begin());
}

// A JSON number, or null for NaN/Inf (JSON has neither).
nlohmann::json number(double value) { return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(); }

}  // namespace

HtmlReport::HtmlReport(std::filesystem::path path) : path_(std::move(path)) {
  auto folder = path_.parent_path();
  if (folder.empty()) folder = ".";
  std::error_code error;
  if (!std::filesystem::is_directory(folder, error))
    raise<FileError>("--report-html {}: the folder {} does not exist", path_.string(), folder.string());
  if (::access(folder.c_str(), W_OK) != 0)
    raise<FileError>("--report-html {}: the folder {} cannot be written", path_.string(), folder.string());
  if (std::filesystem::is_directory(path_, error))
    raise<FileError>("--report-html {}: is a folder, not a file", path_.string());
}

void HtmlReport::collect(const ComparedPair& pair) {
  if (pictures_.count(pair.name0)) return;
  Pictures& pictures = pictures_[pair.name0];
  pictures.histogram.assign(kDecades + 4, 0);
  const TensorView& out0 = pair.out0;
  const TensorView& out1 = pair.out1;
  const int64_t size = static_cast<int64_t>(out0.size());
  const Shape& shape = out0.shape();
  const bool heatmap = shape.size() >= 2 && size > 0;
  int64_t rows = 1, cols = heatmap ? shape.back() : 1;
  for (std::size_t d = 0; heatmap && d + 1 < shape.size(); ++d) rows *= shape[d];
  if (heatmap) {
    pictures.rows = static_cast<int>(std::min<int64_t>(rows, kMaxCells));
    pictures.cols = static_cast<int>(std::min<int64_t>(cols, kMaxCells));
  } else {
    pictures.no_heatmap = size == 0 ? "empty output" : fmt::format("rank {}: no rows and columns", shape.size());
  }
  // Each cell: the largest absolute error of its block; -1 marks NaN/Inf.
  std::vector<double> cells(static_cast<std::size_t>(pictures.rows) * pictures.cols, 0.0);
  const bool floats = out0.dtype() == DType::kFloat32 && out1.dtype() == DType::kFloat32;
  const float* f0 = floats ? out0.data<float>() : nullptr;
  const float* f1 = floats ? out1.data<float>() : nullptr;
  auto value0 = [&](int64_t i) { return floats ? static_cast<double>(f0[i]) : element_as_double(out0, i); };
  auto value1 = [&](int64_t i) { return floats ? static_cast<double>(f1[i]) : element_as_double(out1, i); };
  // Column i of the tensor falls in heatmap column column_cell[i] (the row's cell is computed once a row).
  std::vector<int64_t> column_cell(static_cast<std::size_t>(cols));
  for (int64_t c = 0; c < cols; ++c) column_cell[static_cast<std::size_t>(c)] = c * pictures.cols / cols;
  const int64_t row_count = heatmap ? rows : size;
  const int64_t row_length = heatmap ? cols : 1;
  for (int64_t row = 0; row < row_count; ++row) {
    double* row_cells = heatmap ? &cells[static_cast<std::size_t>(row * pictures.rows / rows * pictures.cols)] : nullptr;
    for (int64_t column = 0; column < row_length; ++column) {
      const int64_t i = row * row_length + column;
      double error;
      try {
        error = std::fabs(value0(i) - value1(i));
      } catch (const Error&) {
        pictures_.erase(pair.name0);  // a dtype without numbers (strings): no pictures
        return;
      }
      if (pair.infinities_compare_equal && std::isinf(value0(i)) && value0(i) == value1(i)) error = 0;
      std::size_t bin;
      if (!std::isfinite(error))
        bin = kDecades + 3;
      else if (error == 0)
        bin = 0;
      else
        bin = decade_bin(error);
      ++pictures.histogram[bin];
      if (!heatmap) continue;
      double& cell = row_cells[column_cell[static_cast<std::size_t>(column)]];
      if (!std::isfinite(error))
        cell = -1;
      else if (cell >= 0)
        cell = std::max(cell, error);
    }
  }
  if (!heatmap) return;
  double low = INFINITY, high = -INFINITY;
  for (double cell : cells)
    if (cell > 0) low = std::min(low, std::log10(cell)), high = std::max(high, std::log10(cell));
  if (!(low <= high)) low = high = 0;
  pictures.low = low;
  pictures.high = high;
  std::vector<unsigned char> bytes(cells.size());
  for (std::size_t k = 0; k < cells.size(); ++k) {
    if (cells[k] < 0)
      bytes[k] = 255;
    else if (cells[k] == 0)
      bytes[k] = 0;
    else
      bytes[k] = static_cast<unsigned char>(
          1 + std::lround(high > low ? (std::log10(cells[k]) - low) / (high - low) * 253 : 253));
  }
  pictures.cells = base64(bytes);
}

void HtmlReport::add_attribution(const AttributionResult& result, std::size_t top_count) {
  attribution_ = nlohmann::json::parse(
      to_json(result, top_count).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void HtmlReport::write(const std::string& command, const Verdict& verdict, std::size_t worst_count) const {
  nlohmann::json data;
  data["command"] = command;
  data["passed"] = verdict.passed;
  data["report"] = nlohmann::json::parse(verdict.report(worst_count).dump(-1, ' ', false,
                                                                          nlohmann::json::error_handler_t::replace));
  nlohmann::json layerwise = nlohmann::json::array();
  for (const auto& result : verdict.layerwise) {
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& e : result.entries) {
      nlohmann::json j = {{"tensor", e.tensor},         {"node", e.node},
                          {"op", e.op},                 {"iteration", e.iteration},
                          {"passed", e.comparison.passed},
                          {"max_abs", number(e.max_abs_error())},
                          {"max_rel", number(e.max_rel_error())},
                          {"excess", number(e.excess())}};
      if (!e.engine_layer.empty()) j["engine_layer"] = e.engine_layer;
      if (!e.not_a_divergence.empty()) j["not_a_divergence"] = e.not_a_divergence;
      if (e.comparison.simple) j["atol"] = number(e.comparison.simple->atol), j["rtol"] = number(e.comparison.simple->rtol);
      entries.push_back(std::move(j));
    }
    const LayerwiseEntry* first = result.first_divergence();
    layerwise.push_back({{"runner0", result.runner0},
                         {"runner1", result.runner1},
                         {"first_divergence", first ? nlohmann::json(first->tensor) : nlohmann::json()},
                         {"entries", std::move(entries)}});
  }
  data["layerwise"] = std::move(layerwise);
  nlohmann::json pictures = nlohmann::json::object();
  for (const auto& [name, p] : pictures_) {
    nlohmann::json j = {{"histogram", p.histogram}};
    if (p.rows > 0)
      j["heatmap"] = {{"rows", p.rows}, {"cols", p.cols}, {"low", p.low}, {"high", p.high}, {"cells", p.cells}};
    else
      j["no_heatmap"] = p.no_heatmap;
    pictures[name] = std::move(j);
  }
  data["pictures"] = std::move(pictures);
  data["histogram_lowest_decade"] = kLowestDecade;
  if (!attribution_.is_null()) data["attribution"] = attribution_;
  write_page(data);
}

void HtmlReport::write_failure(const std::string& command, const std::string& message) const {
  write_page({{"command", command}, {"passed", false}, {"error", message}});
}

void write_html_page(const std::filesystem::path& path, std::string page, const std::string& json) {
  // Inside <script>, "</" could end the element: JSON allows "<\/".
  std::string escaped;
  escaped.reserve(json.size());
  for (std::size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') {
      escaped += "<\\/";
      ++i;
    } else {
      escaped += json[i];
    }
  }
  const std::string marker = "@DATA@";
  page.replace(page.find(marker), marker.size(), escaped);
  write_file_atomic(path, page);
}

void HtmlReport::write_page(const nlohmann::json& data) const {
  write_html_page(path_, kHtmlReportPage, data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace parity::compare
