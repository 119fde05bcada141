// The HTML page of a debug search (parity/debug/search_html_report.h).
#include "parity/debug/search_html_report.h"

#include <unistd.h>

#include "parity/compare/html_report.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"

namespace parity::debug {
namespace {

constexpr const char* kPage = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Parity search report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin-top:1.5em;border-bottom:1px solid #ccc}
.mono{font-family:ui-monospace,monospace;font-size:12px}
.verdict{display:inline-block;padding:.15em .6em;border-radius:4px;color:#fff;font-weight:bold}
.pass{background:#2a8a3e}.fail{background:#c0392b}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;font-size:13px}
th{background:#f3f3f3}.error{background:#fdecea;border:1px solid #c0392b;padding:.6em;white-space:pre-wrap}
</style></head>
<body><div id="app"></div>
<script id="data" type="application/json">@DATA@</script>
<script>
"use strict";
window.addEventListener("error", function () { document.body.dataset.rendered = "error"; });
var D = JSON.parse(document.getElementById("data").textContent);
var app = document.getElementById("app");
function el(tag, attrs, children) {
  var e = document.createElement(tag);
  for (var k in attrs || {}) { if (k === "text") e.textContent = attrs[k]; else e.setAttribute(k, attrs[k]); }
  (children || []).forEach(function (c) { if (c) e.appendChild(c); });
  return e;
}
function svg(tag, attrs) { var e = document.createElementNS("http://www.w3.org/2000/svg", tag); for (var k in attrs) e.setAttribute(k, attrs[k]); return e; }
function badge(ok, text) { return el("span", {"class": "verdict " + (ok ? "pass" : "fail"), text: text}); }
function table(id, head, rows) {
  return el("table", {id: id}, [el("tr", {}, head.map(function (h) { return el("th", {text: h}); }))].concat(rows.map(function (r) {
    return el("tr", {"class": "row"}, r.map(function (c) { return c instanceof Node ? el("td", {}, [c]) : el("td", {text: String(c)}); }));
  })));
}
app.appendChild(el("h1", {}, [document.createTextNode(D.title + " "), D.error !== undefined ? badge(false, "ERROR") : badge(D.ok, D.outcome)]));
app.appendChild(el("p", {"class": "mono", text: D.command}));
if (D.error !== undefined) {
  app.appendChild(el("h2", {text: "The search ended before its answer"}));
  app.appendChild(el("div", {"class": "error", id: "run-error", text: D.error}));
} else {
  app.appendChild(el("h2", {text: "The answer"}));
  app.appendChild(el("p", {id: "summary", text: D.summary}));
  (D.tables || []).forEach(function (t) {
    app.appendChild(el("h3", {text: t.caption}));
    app.appendChild(table(t.id, t.columns, t.rows));
  });
  var steps = D.steps || [];
  app.appendChild(el("h2", {text: D.steps_caption + " (" + steps.length + ")"}));
  var w = 900, h = 160, pad = 40, max = Math.max.apply(null, steps.map(function (s) { return s.size; }).concat([1]));
  var chart = svg("svg", {width: w, height: h, id: "steps-chart"});
  steps.forEach(function (s, i) {
    var x = pad + (steps.length > 1 ? i / (steps.length - 1) : 0.5) * (w - 2 * pad), y = h - pad - s.size / max * (h - 1.5 * pad);
    var c = svg("circle", {cx: x, cy: y, r: 5, fill: s.passed ? "#2a8a3e" : "#c0392b", "class": "step"});
    var t = svg("title", {}); t.textContent = (i + 1) + ". " + s.candidate + ": " + s.verdict + (s.detail ? " | " + s.detail : "");
    c.appendChild(t); chart.appendChild(c);
  });
  var label = svg("text", {x: w / 2, y: h - 8, "font-size": 11, "text-anchor": "middle"}); label.textContent = "in order; y: " + D.size_axis + " (0 .. " + max + "); green " + D.passed_word + ", red " + D.failed_word; chart.appendChild(label);
  app.appendChild(chart);
  app.appendChild(table("steps", ["#", "candidate", "verdict", "error"], steps.map(function (s, i) {
    return [i + 1, s.candidate, badge(s.passed, s.verdict), s.detail || ""];
  })));
}
document.body.dataset.rendered = "ok";
</script></body></html>
)HTML";

void write_page(const std::filesystem::path& path, const nlohmann::ordered_json& data) {
  compare::write_html_page(path, kPage, data.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

}  // namespace

void check_html_report_path(const std::filesystem::path& path, const std::string& flag) {
  auto folder = path.parent_path();
  if (folder.empty()) folder = ".";
  std::error_code error;
  if (!std::filesystem::is_directory(folder, error))
    raise<FileError>("{} {}: the folder {} does not exist", flag, path.string(), folder.string());
  if (::access(folder.c_str(), W_OK) != 0)
    raise<FileError>("{} {}: the folder {} cannot be written", flag, path.string(), folder.string());
  if (std::filesystem::is_directory(path, error)) raise<FileError>("{} {}: is a folder, not a file", flag, path.string());
}

void save_search_html_report(const std::filesystem::path& path, const nlohmann::ordered_json& view) {
  write_page(path, view);
}

void save_search_html_failure(const std::filesystem::path& path, const std::string& title, const std::string& command,
                              const std::string& message) {
  write_page(path, {{"title", title}, {"command", command}, {"error", message}});
}

}  // namespace parity::debug
