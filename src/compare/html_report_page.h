// The page `--report-html` writes (html_report.cpp puts the run's JSON where @DATA@ stands). Everything
// is inline; the Content-Security-Policy lets the page load nothing from anywhere.
#pragma once

namespace parity::compare {

inline constexpr const char* kHtmlReportPage = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Parity report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin-top:1.5em;border-bottom:1px solid #ccc}
code,.mono{font-family:ui-monospace,monospace;font-size:12px}
.verdict{display:inline-block;padding:.15em .6em;border-radius:4px;color:#fff;font-weight:bold}
.pass{background:#2a8a3e}.fail{background:#c0392b}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;font-size:13px}
th{background:#f3f3f3}tr.failed td:first-child{border-left:3px solid #c0392b}
details{margin:.3em 0;border:1px solid #e3e3e3;border-radius:4px;padding:.2em .5em}
summary{cursor:pointer}.pics{display:flex;gap:1.5em;flex-wrap:wrap;align-items:flex-start}
canvas.heat{width:240px;image-rendering:pixelated;border:1px solid #999}
.note{color:#666;font-size:12px}#tip{position:fixed;pointer-events:none;background:#fff;border:1px solid #888;
padding:4px 6px;font-size:12px;display:none;max-width:480px;box-shadow:2px 2px 6px #0003}
.error{background:#fdecea;border:1px solid #c0392b;padding:.6em;white-space:pre-wrap}
</style></head>
<body>
<div id="app"></div><div id="tip"></div>
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
function svg(tag, attrs) {
  var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  return e;
}
function fmt(v) { return v === null || v === undefined ? "NaN/Inf" : (typeof v === "number" ? Number(v.toPrecision(5)).toString() : String(v)); }
function verdict(passed) { return el("span", {"class": "verdict " + (passed ? "pass" : "fail"), text: passed ? "PASSED" : "FAILED"}); }
var ids = {};
function tensorId(name) { if (!(name in ids)) ids[name] = "t" + Object.keys(ids).length; return ids[name]; }

function histogram(counts) {
  var lowest = D.histogram_lowest_decade, w = 360, h = 120, n = counts.length, bw = w / n;
  var labels = ["0", "<1e" + lowest];
  for (var d = lowest; d < lowest + n - 4; d++) labels.push("1e" + d);
  labels.push(">=1e" + (lowest + n - 4)); labels.push("NaN/Inf");
  var max = Math.max.apply(null, counts.concat([1]));
  var s = svg("svg", {width: w, height: h + 40, "class": "hist"});
  counts.forEach(function (c, i) {
    var bh = c ? Math.max(1, Math.sqrt(c / max) * h) : 0;
    var r = svg("rect", {x: i * bw + 1, y: h - bh, width: bw - 2, height: bh, fill: i === n - 1 ? "#c0392b" : "#3b6ea8"});
    var t = svg("title", {}); t.textContent = labels[i] + ": " + c + " element(s)"; r.appendChild(t); s.appendChild(r);
    if (i % 2 === 0 || i === n - 1) {
      var tx = svg("text", {x: i * bw + bw / 2, y: h + 12, "font-size": 9, "text-anchor": "end", transform: "rotate(-45 " + (i * bw + bw / 2) + " " + (h + 12) + ")"});
      tx.textContent = labels[i]; s.appendChild(tx);
    }
  });
  return el("div", {}, [el("div", {"class": "note", text: "absolute error per decade (bar height: square root of the count)"}), s]);
}
function colour(v) {  // 1..254 on a dark-to-yellow scale; 0 zero error; 255 NaN/Inf
  if (v === 0) return [20, 20, 40]; if (v === 255) return [255, 0, 255];
  var t = (v - 1) / 253;
  return [Math.round(60 + 195 * t), Math.round(20 + 210 * t * t), Math.round(140 * (1 - t) + 30)];
}
function heatmap(p) {
  if (!p.heatmap) return el("div", {"class": "note", text: "No heatmap: " + p.no_heatmap});
  var hm = p.heatmap, bytes = atob(hm.cells);
  var c = el("canvas", {"class": "heat", width: hm.cols, height: hm.rows});
  var ctx = c.getContext("2d"), img = ctx.createImageData(hm.cols, hm.rows);
  for (var i = 0; i < bytes.length; i++) {
    var rgb = colour(bytes.charCodeAt(i));
    img.data[4 * i] = rgb[0]; img.data[4 * i + 1] = rgb[1]; img.data[4 * i + 2] = rgb[2]; img.data[4 * i + 3] = 255;
  }
  ctx.putImageData(img, 0, 0);
  return el("div", {}, [el("div", {"class": "note", text: "largest |error| per cell (" + hm.rows + " x " + hm.cols +
    " cells), log scale 1e" + hm.low.toFixed(1) + " (dark) .. 1e" + hm.high.toFixed(1) + " (yellow); black: 0, magenta: NaN/Inf"}), c]);
}
function pictures(name) {
  var p = (D.pictures || {})[name];
  if (!p) return el("div", {"class": "note", text: "No pictures (not compared with simple, or no numeric values)"});
  return el("div", {"class": "pics"}, [histogram(p.histogram), heatmap(p)]);
}
function lazyDetails(name, summaryNodes, open, extra) {
  var d = el("details", {id: tensorId(name), "class": "tensor"}, [el("summary", {}, summaryNodes)]);
  var filled = false;
  function fill() { if (!filled) { filled = true; if (extra) d.appendChild(extra()); d.appendChild(pictures(name)); } }
  d.addEventListener("toggle", function () { if (d.open) fill(); });
  if (open) { d.open = true; fill(); }
  return d;
}
function statsTable(o) {
  var s = o.simple;
  if (!s) return el("div", {"class": "note", text: o.failure || ""});
  var rows = [["tolerance", "abs=" + fmt(s.atol) + " rel=" + fmt(s.rtol) + " (" + s.check_error_stat + ")"],
    ["required tolerance", "abs=" + fmt(s.required_tolerance_finite.abs) + " rel=" + fmt(s.required_tolerance_finite.rel)],
    ["max abs / rel error", fmt(s.max_absdiff) + " / " + fmt(s.max_reldiff)],
    ["mean abs / rel error", fmt(s.mean_absdiff) + " / " + fmt(s.mean_reldiff)],
    ["median abs / rel error", fmt(s.median_absdiff) + " / " + fmt(s.median_reldiff)],
    ["mismatching elements", s.mismatches + " of " + s.elements],
    ["zero references / NaN-Inf errors", s.zero_reference + " / " + s.nonfinite_errors]];
  return el("table", {"class": "stats"}, rows.map(function (r) { return el("tr", {}, [el("th", {text: r[0]}), el("td", {text: r[1]})]); }));
}
function outputsSection(report) {
  var acc = report.accuracy; if (!acc || !acc.pairs) return null;
  var box = el("section", {id: "outputs"}, [el("h2", {text: "Verdict per output"})]);
  acc.pairs.forEach(function (pair) {
    box.appendChild(el("p", {}, [el("b", {text: pair.runner0 + " vs. " + pair.runner1 + " "}), verdict(pair.passed)]));
    var many = 0; pair.iterations.forEach(function (it) { many += it.outputs.length; });
    pair.iterations.forEach(function (it, index) {
      it.outputs.forEach(function (o) {
        var label = o.output0 + (pair.iterations.length > 1 ? " (iteration " + index + ")" : "");
        box.appendChild(lazyDetails(o.output0, [verdict(o.passed), document.createTextNode(" " + label + " " + o.dtype0 + " " + JSON.stringify(o.shape0))],
          many <= 8 && index === 0, function () { return statsTable(o); }));
      });
    });
  });
  return box;
}
function num(v) { return typeof v === "number" ? v : null; }  // the attribution's "inf" and null: off the scale
function attributed(tensor) { return D.attribution ? (attributedBy[tensor] || null) : null; }
var attributedBy = {};
(D.attribution ? D.attribution.tensors : []).forEach(function (t) { attributedBy[t.tensor] = t; });
function chart(result) {
  var es = result.entries, w = 1100, h = 260, pad = 50;
  var vals = es.map(function (e) { return e.max_abs; }).filter(function (v) { return v !== null && v > 0; });
  var locals = {};  // the local error's point: the tensor's first entry (attribution covers the first iteration)
  es.forEach(function (e, i) { var t = attributed(e.tensor); if (t && t.local && !(e.tensor in locals)) locals[e.tensor] = i; });
  Object.keys(locals).forEach(function (name) { var v = num(attributedBy[name].local.abs); if (v !== null && v > 0) vals.push(v); });
  var tol = es.length && es[0].atol ? es[0].atol : null;
  if (tol) vals.push(tol);
  var lo = Math.floor(Math.log10(Math.min.apply(null, vals.concat([1e-12])))), hi = Math.ceil(Math.log10(Math.max.apply(null, vals.concat([1]))));
  if (hi <= lo) hi = lo + 1;
  function x(i) { return pad + (es.length > 1 ? i / (es.length - 1) : 0.5) * (w - 2 * pad); }
  function y(v) { if (v === null) return pad / 2; if (v <= 0) return h - pad; return h - pad - (Math.log10(v) - lo) / (hi - lo) * (h - 1.5 * pad); }
  var s = svg("svg", {width: w, height: h, id: "error-chart", "class": "chart"});
  for (var d = lo; d <= hi; d++) {
    s.appendChild(svg("line", {x1: pad, x2: w - pad, y1: y(Math.pow(10, d)), y2: y(Math.pow(10, d)), stroke: "#eee"}));
    var t = svg("text", {x: pad - 4, y: y(Math.pow(10, d)) + 3, "font-size": 10, "text-anchor": "end"}); t.textContent = "1e" + d; s.appendChild(t);
  }
  if (tol) {
    s.appendChild(svg("line", {x1: pad, x2: w - pad, y1: y(tol), y2: y(tol), stroke: "#c0392b", "stroke-dasharray": "6 4", "class": "tolerance"}));
    var tt = svg("text", {x: w - pad, y: y(tol) - 4, "font-size": 11, fill: "#c0392b", "text-anchor": "end"}); tt.textContent = "atol " + fmt(tol); s.appendChild(tt);
  }
  var tip = document.getElementById("tip");
  es.forEach(function (e, i) {
    if (e.tensor === result.first_divergence) {
      s.appendChild(svg("line", {x1: x(i), x2: x(i), y1: pad / 3, y2: h - pad, stroke: "#e67e22", "stroke-width": 2, "class": "first-divergence"}));
      var ft = svg("text", {x: x(i) + 4, y: pad / 3 + 10, "font-size": 11, fill: "#e67e22"}); ft.textContent = "first divergence: " + e.tensor; s.appendChild(ft);
    }
    var t = attributed(e.tensor), points = [];
    points.push(svg("circle", {cx: x(i), cy: y(e.max_abs), r: 3, fill: e.passed ? "#2a8a3e" : "#c0392b", "class": "point"}));
    if (locals[e.tensor] === i) {
      var ly = y(num(t.local.abs)), local = svg("rect", {x: x(i) - 3, y: ly - 3, width: 6, height: 6, fill: t.local.failed ? "#8e44ad" : "none",
        stroke: "#8e44ad", "class": "local-point", "data-tensor": e.tensor});
      if (t.flipped !== undefined) local.setAttribute("data-flipped", t.flipped);
      points.push(local);
    }
    points.forEach(function (c) {
      c.addEventListener("mousemove", function (ev) {
        tip.textContent = "";
        var rows = [["tensor", e.tensor], ["node", e.node], ["op", e.op], ["OpenVINO layer", e.engine_layer], ["max abs error", fmt(e.max_abs)],
          ["max rel error", fmt(e.max_rel)], ["verdict", e.passed ? "passed" : "FAILED"]];
        if (t) rows = rows.concat([["local abs error (" + (D.attribution.by === "module" ? "module " + t.node : "node") + " alone)", t.local ? fmt(t.local.abs) : "not run: " + t.not_run],
          ["inherited abs error", fmt(t.inherited.abs)], ["amplification", fmt(t.amplification)],
          ["covering nodes", t.covering ? t.covering.join(", ") : undefined],
          ["flips on inherited differences", t.flipped !== undefined ? t.flipped + " element(s)" : undefined]]);
        rows.forEach(function (kv) {
          if (kv[1] !== undefined && kv[1] !== "") tip.appendChild(el("div", {}, [el("b", {text: kv[0] + ": "}), document.createTextNode(kv[1])]));
        });
        tip.style.display = "block"; tip.style.left = (ev.clientX + 12) + "px"; tip.style.top = (ev.clientY + 12) + "px";
      });
      c.addEventListener("mouseleave", function () { tip.style.display = "none"; });
      c.addEventListener("click", function () { var d = document.getElementById(tensorId(e.tensor)); if (d) { d.open = true; d.scrollIntoView(); } });
      s.appendChild(c);
    });
  });
  var xl = svg("text", {x: w / 2, y: h - 8, "font-size": 11, "text-anchor": "middle"}); xl.textContent = "compared tensors in execution order (" + es.length + "); y: largest absolute error (log)"; s.appendChild(xl);
  if (Object.keys(locals).length) {
    var legend = svg("text", {x: pad, y: 14, "font-size": 11, id: "attribution-legend"});
    legend.textContent = "\u25cf total error    \u25a1 local error: the " + (D.attribution.by === "module" ? "module" : "node") + " alone on " + D.attribution.under_test + ", fed " +
      D.attribution.reference + "'s inputs (filled: over the tolerance alone)";
    s.appendChild(legend);
  }
  return s;
}
function introducersTable() {
  var A = D.attribution, box = el("div", {id: "attribution"}), unit = A.by === "module" ? "module" : "node";
  box.appendChild(el("h3", {text: "Error attribution: the " + unit + "s that introduce the error (" + A.reference + " vs. " + A.under_test + ")"}));
  var first = A.first_local_failure;
  box.appendChild(el("p", {text: first ? "First " + unit + " whose local error exceeds the tolerance: " + first.node + " [" + first.op + "] (tensor " + first.tensor + ")"
    : "No " + unit + "'s local error exceeds the tolerance"}));
  if (A.top.length)
    box.appendChild(el("table", {id: "introducers"}, [el("tr", {}, ["rank", "tensor", unit, unit === "module" ? "class" : "op", "local abs", "local rel", "inherited abs", "total abs", "amplification"].map(function (c) { return el("th", {text: c}); }))].concat(
      A.top.map(function (t, i) {
        return el("tr", {"class": t.local.failed ? "failed" : ""}, [el("td", {text: String(i + 1)}), el("td", {}, [el("a", {href: "#" + tensorId(t.tensor), text: t.tensor})]),
          el("td", {text: t.node + (t.covering ? " (layer of " + t.covering.length + ")" : "")}), el("td", {text: t.op}), el("td", {text: fmt(t.local.abs)}), el("td", {text: fmt(t.local.rel)}),
          el("td", {text: fmt(t.inherited.abs)}), el("td", {text: fmt(t.total.abs)}), el("td", {text: fmt(t.amplification)})]);
      }))));
  A.flips.forEach(function (t) {
    box.appendChild(el("p", {"class": "flip", text: t.node + " [" + t.op + "] flips " + t.flipped + " element(s) of " + t.tensor + " on inherited differences (exact on the reference's inputs)"}));
  });
  return box;
}
function layerwiseSection(report) {
  if (!D.layerwise || !D.layerwise.length) return null;
  var box = el("section", {id: "layerwise"}, [el("h2", {text: "Layerwise: error along the execution order"})]);
  D.layerwise.forEach(function (result, index) {
    box.appendChild(el("p", {text: result.runner0 + " vs. " + result.runner1 + ": " + result.entries.length + " tensor(s) compared; first divergence: " + (result.first_divergence || "none")}));
    box.appendChild(chart(result));
    if (D.attribution && index === 0) box.appendChild(introducersTable());
    var summary = (report.layerwise || [])[index] || {};
    var worst = summary.worst || [];
    if (worst.length) {
      box.appendChild(el("h3", {text: "Worst tensors"}));
      var ov = worst.some(function (w) { return w.engine_layer; });
      box.appendChild(el("table", {id: "worst"}, [el("tr", {}, ["tensor", "node", "op", "max abs", "max rel", "times over tolerance"].concat(ov ? ["OpenVINO layer"] : []).map(function (t) { return el("th", {text: t}); }))].concat(
        worst.map(function (w) {
          return el("tr", {"class": w.passed ? "" : "failed"}, [el("td", {}, [el("a", {href: "#" + tensorId(w.tensor), text: w.tensor})]), el("td", {text: w.node}), el("td", {text: w.op}),
            el("td", {text: fmt(w.max_absdiff)}), el("td", {text: fmt(w.max_reldiff)}), el("td", {text: fmt(w.excess)}), ov ? el("td", {text: w.engine_layer || ""}) : null]);
        }))));
    }
    var layers = {}, order = [];
    result.entries.forEach(function (e) { if (e.engine_layer) { if (!(e.engine_layer in layers)) { layers[e.engine_layer] = []; order.push(e.engine_layer); } layers[e.engine_layer].push(e.tensor); } });
    if (order.length) {
      box.appendChild(el("h3", {text: "OpenVINO's executed layers and the ONNX nodes fused into each"}));
      box.appendChild(el("table", {id: "fused"}, [el("tr", {}, [el("th", {text: "layer (type | kernel | precision) covering ONNX nodes"}), el("th", {text: "tensors compared"})])].concat(
        order.map(function (l) { return el("tr", {}, [el("td", {"class": "mono", text: l}), el("td", {text: layers[l].join(", ")})]); }))));
    }
  });
  return box;
}
function tensorsSection() {
  if (!D.layerwise || !D.layerwise.length) return null;
  var compared = {};
  ((D.report.accuracy || {}).pairs || []).forEach(function (pair) { pair.iterations.forEach(function (it) { it.outputs.forEach(function (o) { if (!(o.output0 in compared)) compared[o.output0] = o; }); }); });
  var box = el("section", {id: "tensors"}, [el("h2", {text: "Every compared tensor (open one for its histogram and heatmap)"})]);
  D.layerwise.forEach(function (result) {
    result.entries.forEach(function (e) {
      if (document.getElementById(tensorId(e.tensor))) return;
      var o = compared[e.tensor];
      box.appendChild(lazyDetails(e.tensor, [verdict(e.passed), document.createTextNode(" " + e.tensor + " (" + e.op + " " + e.node + ") max abs " + fmt(e.max_abs))], false,
        o ? function () { return statsTable(o); } : null));
    });
  });
  return box;
}
app.appendChild(el("h1", {}, [document.createTextNode("Parity report "), verdict(D.passed)]));
app.appendChild(el("p", {"class": "mono", text: D.command}));
if (D.error !== undefined) {
  app.appendChild(el("h2", {text: "The run ended before any comparison"}));
  app.appendChild(el("div", {"class": "error", id: "run-error", text: D.error}));
} else {
  [layerwiseSection(D.report), D.layerwise && D.layerwise.length ? null : outputsSection(D.report), tensorsSection()].forEach(function (s) { if (s) app.appendChild(s); });
}
function openHash() { var d = location.hash && document.getElementById(location.hash.slice(1)); if (d && d.tagName === "DETAILS") d.open = true; }
window.addEventListener("hashchange", openHash); openHash();
document.body.dataset.renderMs = String(Math.round(performance.now()));
document.body.dataset.rendered = "ok";
</script></body></html>
)HTML";

}  // namespace parity::compare
