"""`parity run --report-html`: each page loaded in a real browser (Debian's headless Chromium): it renders
(the page's script marks <body data-rendered="ok"> when done, "error" on an uncaught error), the screenshot
is not blank, the expected elements are in the DOM, the console stays empty and no request leaves the file
(Chromium's net log, against a baseline of the browser's own background requests; a page that does request
something shows the check can fail)."""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from exported_models import export
from run_util import SHARED_MODELS

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-default-apps",
                  "--disable-extensions", "--hide-scrollbars", "--window-size=1280,900"]


def chromium():
    found = shutil.which("chromium")
    if not found:
        pytest.fail("chromium is not installed (scripts/apt-packages.txt lists it)", pytrace=False)
    return found


def browse(page, tmp_path, fragment=""):
    """Loads `page`: (DOM text, console lines, URLs requested, screenshot path)."""
    tag = Path(page).stem + (fragment.replace("#", "_") if fragment else "")
    net, shot = tmp_path / f"{tag}-net.json", tmp_path / f"{tag}.png"
    url = Path(page).resolve().as_uri() + fragment
    dom = subprocess.run([chromium(), *CHROMIUM_FLAGS, "--enable-logging=stderr", "--v=0", f"--log-net-log={net}",
                          "--dump-dom", url], capture_output=True, text=True, timeout=120)
    subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--screenshot={shot}", url], capture_output=True, timeout=120)
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    urls = set(re.findall(r'"url":"([^"]*)"', net.read_text())) if net.exists() else set()
    return dom.stdout, console, urls, shot


@pytest.fixture(scope="session")
def browser_noise(tmp_path_factory):
    """The hosts Chromium itself contacts on an empty page (update checks and the like)."""
    folder = tmp_path_factory.mktemp("blank")
    blank = folder / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body>blank</body></html>")
    _, _, urls, _ = browse(blank, folder)
    return {re.sub(r"^\w+://([^/]+).*", r"\1", u) for u in urls}


def page_requests(urls, noise):
    return sorted(u for u in urls if not u.startswith("file:") and not u.startswith("data:")
                  and re.sub(r"^\w+://([^/]+).*", r"\1", u) not in noise)


def check_page(page, tmp_path, noise, fragment=""):
    dom, console, urls, shot = browse(page, tmp_path, fragment)
    assert 'data-rendered="ok"' in dom, dom[-2000:]
    assert console == []
    assert page_requests(urls, noise) == []
    if not fragment:  # (a page opened at a fragment is shot scrolled: its top is what the first load checks)
        from PIL import Image
        with Image.open(shot) as image:
            colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
        assert colours is None or len(colours) > 20, "the screenshot is (nearly) blank"
    return dom


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report_models")
    return {f"{kind}_{exporter}": export(kind, folder / f"{kind}_{exporter}.onnx", exporter)
            for kind, exporter in (("resnet", "torchscript"), ("bert", "dynamo"))}


def test_the_network_check_can_fail(tmp_path, browser_noise):
    page = tmp_path / "requests.html"
    page.write_text('<!DOCTYPE html><html><body><img src="http://example.com/x.png"></body></html>')
    _, _, urls, _ = browse(page, tmp_path)
    assert page_requests(urls, browser_noise) == ["http://example.com/x.png"]


@pytest.mark.parametrize("model", ["resnet_torchscript", "bert_dynamo"])
def test_layerwise_report(run_parity, models, model, tmp_path, browser_noise):
    page = tmp_path / f"{model}.html"
    run = run_parity("run", models[model], "--ref", "--onnxrt", "--onnx-outputs", "mark", "all", "--atol", "1e-6",
                     "--rtol", "1e-6", "--report-html", page, "--report", tmp_path / "report.json")
    assert run.returncode in (0, 1), run.output
    assert f"Saved HTML report to {page}" in run.output
    report = json.loads((tmp_path / "report.json").read_text())
    compared = report["layerwise"][0]["compared"]
    dom = check_page(page, tmp_path, browser_noise)
    assert 'id="error-chart"' in dom and 'class="tolerance"' in dom
    assert dom.count('class="point"') == compared  # one point per compared tensor
    assert 'class="local-point"' not in dom and 'id="introducers"' not in dom  # no attribution asked for
    assert 'id="worst"' in dom
    ids = set(re.findall(r'<details id="(t\d+)"', dom))
    links = re.findall(r'<a href="#(t\d+)">', dom)
    assert links and set(links) <= ids  # each worst tensor links to its histogram
    if report["layerwise"][0]["first_divergence"]:
        assert 'class="first-divergence"' in dom
    # The first worst tensor's section opened from its link shows its histogram and heatmap.
    opened = check_page(page, tmp_path, browser_noise, "#" + links[0])
    assert 'class="hist"' in opened and ('class="heat"' in opened or "No heatmap" in opened)


def test_attribution_second_series(run_parity, tmp_path, browser_noise):
    """--attribute: beside each tensor's total error, its local error (a square) along the execution order, and the
    top introducers table; on the planted peak detector only the two sums introduce an error."""
    from test_run_attribution import C, TOLERANCES, peak_detector_nodes, save_model
    from onnx import TensorProto, helper

    nodes, initializers = peak_detector_nodes()
    model = save_model(tmp_path / "peaks.onnx", nodes, initializers,
                       [helper.make_tensor_value_info("peaks", TensorProto.BOOL, [1, 1, 2 * C])])
    page, report_path = tmp_path / "attribution.html", tmp_path / "report.json"
    run = run_parity("run", model, "--ref", "--onnxrt", "--onnx-outputs", "mark", "all", "--attribute", *TOLERANCES,
                     "--report-html", page, "--report", report_path)
    assert run.returncode == 1, run.output
    attribution = json.loads(report_path.read_text())["attribution"]
    dom = check_page(page, tmp_path, browser_noise)
    squares = re.findall(r'<rect [^>]*class="local-point"[^>]*>', dom)
    assert len(squares) == len(attribution["tensors"]) == dom.count('class="point"')
    assert 'id="attribution-legend"' in dom
    # The squares sit where the local errors are: on the zero line for the exact nodes, above it for the sums.
    by_tensor = {re.search(r'data-tensor="([^"]+)"', sq).group(1): sq for sq in squares}
    height = {name: float(re.search(r' y="([-\d.]+)"', sq).group(1)) for name, sq in by_tensor.items()}
    assert {name for name, y in height.items() if y < max(height.values())} == {"a", "b"}, height
    flipped = {t["tensor"]: t["flipped"] for t in attribution["flips"]}
    assert flipped.keys() == {"peaks"}
    assert f'data-flipped="{flipped["peaks"]}"' in by_tensor["peaks"]
    introducers = re.search(r'<table id="introducers">(.*?)</table>', dom, re.S).group(1)
    assert [cell for cell in re.findall(r"<td>([^<]*)</td>", introducers) if cell in ("sum", "sum_permuted")] \
        == [t["node"] for t in attribution["top"]]
    assert "peak_detector [Equal] flips" in dom and "No node's local error exceeds the tolerance" in dom


def test_outputs_report_on_shared_model(run_parity, tmp_path, browser_noise):
    page = tmp_path / "blazeface.html"
    run = run_parity("run", SHARED_MODELS / "blazeface_front_128.onnx", "--ref", "--onnxrt", "--report-html", page)
    assert run.returncode in (0, 1), run.output
    dom = check_page(page, tmp_path, browser_noise)
    assert 'id="outputs"' in dom
    assert dom.count('class="hist"') >= 1 and dom.count('class="heat"') >= 1
    assert "required tolerance" in dom


def test_rank_1_and_nonfinite_outputs(run_parity, tmp_path, browser_noise):
    from polygraphy.comparator import RunResults
    from polygraphy.comparator.struct import IterationResult

    image = np.linspace(1, 2, 24, dtype=np.float32).reshape(2, 3, 4)
    broken = image + (10.0 ** np.linspace(-6, 4.5, 24)).astype(np.float32).reshape(2, 3, 4)  # errors over 11 decades
    broken[0, 0, 0], broken[1, 1, 1] = np.nan, np.inf
    for name, runner, outputs in (("a", "runner-a", {"vector": np.arange(4, dtype=np.float32), "image": broken}),
                                  ("b", "runner-b", {"vector": np.arange(4, dtype=np.float32) * 2, "image": image})):
        results = RunResults()
        results.append((runner, [IterationResult(outputs=outputs, runner_name=runner)]))
        results.save(str(tmp_path / f"{name}.json"))
    page = tmp_path / "nonfinite.html"
    run = run_parity("run", "--load-outputs", tmp_path / "a.json", tmp_path / "b.json", "--report-html", page)
    assert run.returncode == 1, run.output
    dom = check_page(page, tmp_path, browser_noise)
    assert "No heatmap: rank 1: no rows and columns" in dom
    assert dom.count('class="heat"') == 1
    data = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>',
                                page.read_text(), re.S).group(1))
    histogram = data["pictures"]["image"]["histogram"]
    assert histogram[-1] == 2  # the NaN and the Inf counted apart
    # The other errors, each in the bin of its decade (2 + decade + 12, from 1e-12; 18: 1e4 and above).
    errors = np.abs(broken.astype(np.float64) - image.astype(np.float64)).ravel()
    finite = errors[np.isfinite(errors)]
    expected = np.bincount(np.clip(np.floor(np.log10(finite)).astype(int) + 14, 1, 18), minlength=20)
    assert histogram[:19] == expected[:19].tolist()


def test_run_that_fails_before_comparing(run_parity, tmp_path, browser_noise):
    page = tmp_path / "failed.html"
    run = run_parity("run", tmp_path / "missing.onnx", "--ref", "--onnxrt", "--report-html", page)
    assert run.returncode != 0
    error = [line for line in run.output.splitlines() if line.startswith("[E]")][0][4:]
    dom = check_page(page, tmp_path, browser_noise)
    assert 'id="run-error"' in dom and "The run ended before any comparison" in dom
    assert "missing.onnx" in error and error.split(": ")[-1] in dom


def test_unwritable_report_path(run_parity, models, tmp_path):
    for path, why in ((tmp_path / "no" / "such" / "r.html", "does not exist"), (tmp_path, "is a folder")):
        run = run_parity("run", models["resnet_torchscript"], "--ref", "--onnxrt", "--report-html", path)
        assert run.returncode != 0
        assert f"[E] --report-html {path}" in run.output and why in run.output, run.output
        assert "Accuracy Comparison" not in run.output  # refused before anything ran
    assert not (tmp_path / "no").exists()


def test_a_large_layerwise_run_stays_small(run_parity, tmp_path, browser_noise):
    """ppocrv4_det's 330 non-constant tensors compared across three runners: 660 points on one page."""
    page = tmp_path / "ppocrv4.html"
    run = run_parity("run", SHARED_MODELS / "ppocrv4_det.onnx", "--ref", "--onnxrt", "--openvino", "--onnx-outputs",
                     "mark", "all", "--input-shapes", "x:[1,3,256,256]", "--report-html", page, timeout=600)
    assert run.returncode in (0, 1), run.output
    compared = len(re.findall(r"Comparing Output: ", run.output))
    assert compared > 600
    assert page.stat().st_size < 10 * 1024 * 1024
    dom = check_page(page, tmp_path, browser_noise)
    assert dom.count('class="point"') == compared
    render_ms = re.search(r'data-render-ms="(\d+)"', dom).group(1)
    print(f"{compared} tensors: {page.stat().st_size / 1e6:.2f} MB, rendered in {render_ms} ms")


def test_debug_precision_report(run_parity, tmp_path, browser_noise):
    from test_debug_precision import TOLERANCES, planted_model

    model = tmp_path / "planted.onnx"
    planted = planted_model(model)
    page, report = tmp_path / "precision.html", tmp_path / "precision.json"
    run = run_parity("debug", "precision", model, "--ref", *TOLERANCES, "--report", report, "--report-html", page,
                     timeout=300)
    assert run.returncode == 0, run.output
    assert f"Saved HTML report to {page}" in run.output
    steps = json.loads(report.read_text())["steps"]
    dom = check_page(page, tmp_path, browser_noise)
    assert dom.count('class="step"') == len(steps) and 'id="steps"' in dom
    assert dom.count('<tr class="row">') == len(steps) + len(planted) + 2 + 3  # steps, answer, errors, latency
    for name in planted:
        assert f"<td>{name}</td>" in dom


def test_debug_precision_that_fails_before_searching(run_parity, tmp_path, browser_noise):
    page = tmp_path / "failed.html"
    run = run_parity("debug", "precision", tmp_path / "missing.onnx", "--ref", "--report-html", page)
    assert run.returncode != 0
    dom = check_page(page, tmp_path, browser_noise)
    assert 'id="run-error"' in dom and "missing.onnx" in dom
    run = run_parity("debug", "precision", tmp_path / "missing.onnx", "--ref", "--report-html", tmp_path / "no" / "p.html")
    assert "[E] --report-html" in run.output and "does not exist" in run.output


def test_debug_reduce_report(run_parity, tmp_path, browser_noise):
    from reduce_models import PLANTED, chain_model
    from test_debug_reduce import IN_PROCESS, SHAPES

    import onnx
    model = tmp_path / "chain.onnx"
    onnx.save(chain_model(), model)
    page = tmp_path / "reduce.html"
    run = run_parity("debug", "reduce", model, "-o", tmp_path / "r.onnx", *SHAPES, *IN_PROCESS, "--report-html", page,
                     cwd=tmp_path, timeout=300)  # (its replay file is written to the working folder)
    assert run.returncode == 0, run.output
    checks = int(re.search(r"\((\d+) check\(s\) run", run.output).group(1))
    dom = check_page(page, tmp_path, browser_noise)
    assert dom.count('class="step"') == checks  # one step per check run
    assert f"<td>{PLANTED}</td>" in dom and 'id="answer"' in dom
    assert "FAILS" in dom and "passes" in dom  # both verdicts were seen on the way


def test_debug_reduce_that_fails_before_reducing(run_parity, tmp_path, browser_noise):
    page = tmp_path / "failed.html"
    run = run_parity("debug", "reduce", tmp_path / "missing.onnx", "-o", tmp_path / "r.onnx", "--ref", "--onnxrt",
                     "--report-html", page, cwd=tmp_path)
    assert run.returncode != 0
    dom = check_page(page, tmp_path, browser_noise)
    assert 'id="run-error"' in dom and "missing.onnx" in dom


def test_inspect_capability_report(run_parity, tmp_path, browser_noise):
    from test_inspect_capability import planted_model

    model = planted_model(tmp_path / "planted.onnx")
    page = tmp_path / "capability.html"
    run = run_parity("inspect", "capability", model, "--openvino", "-o", tmp_path / "dumps", "--report-html", page,
                     timeout=300)
    assert run.returncode == 0, run.output
    written = sorted(p.name for p in (tmp_path / "dumps").glob("*.onnx"))
    dom = check_page(page, tmp_path, browser_noise)
    assert dom.count('class="step"') == len(written)  # one step per subgraph
    for name in written:
        assert f"<td>{name}</td>" in dom
    assert "<td>planted_det</td>" in dom and "<td>planted_det_2</td>" in dom  # the unsupported nodes' table
    assert "No conversion rule found for operations: Det-17" in dom


def test_inspect_capability_that_fails_before_answering(run_parity, tmp_path, browser_noise):
    page = tmp_path / "failed.html"
    run = run_parity("inspect", "capability", tmp_path / "missing.onnx", "--openvino", "--report-html", page)
    assert run.returncode != 0
    dom = check_page(page, tmp_path, browser_noise)
    assert 'id="run-error"' in dom and "missing.onnx" in dom
