"""`parity run` --report and layerwise comparison: the JSON report, the first divergent node, streamed
and held runs, and named outputs from a file."""

import json
import re

import numpy as np

from conftest import lines_with_prefix
from run_util import RUN_TIMEOUT, polygraphy, load_polygraphy_json, chain_model, accumulation_model

# ---- report ----

def test_report_describes_the_comparison(run_parity, tmp_path):
    model = accumulation_model(tmp_path / "accumulate.onnx")
    report = tmp_path / "report.json"
    run = run_parity("run", model, "--ref", "--ref-precision", "fp64", "--onnxrt", "--atol", "0", "--rtol", "0",
                     "--report", report, timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    data = json.loads(report.read_text())
    assert data["passed"] is False
    text = json.dumps(data)
    assert "ref-runner-N0-" in text and "onnxrt-runner-N0-" in text and '"y"' in text
    saved = tmp_path / "out.json"
    ok = run_parity("run", model, "--ref", "--ref-precision", "fp64", "--onnxrt", "--atol", "1e-4",
                    "--report", report, "--save-outputs", saved, timeout=RUN_TIMEOUT)
    assert ok.returncode == 0, ok.describe()
    data = json.loads(report.read_text())
    assert data["passed"] is True
    # The report's largest error is the one in the saved outputs.
    results = load_polygraphy_json(saved)
    a, b = (results[name][0]["y"].astype(np.float64) for name in results.keys())
    max_abs = float(np.max(np.abs(a - b)))
    found = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "max_absdiff" and isinstance(value, (int, float)):
                    found.append(value)
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(data)
    assert found and any(abs(v - max_abs) <= 1e-9 * max(1.0, max_abs) for v in found), (found, max_abs)


# ---- layerwise ----

def test_layerwise_names_first_divergent_node(run_parity, tmp_path):
    model = chain_model(tmp_path / "chain.onnx")
    inputs, golden = tmp_path / "inputs.json", tmp_path / "golden.json"
    polygraphy("run", model, "--onnxrt", "--onnx-outputs", "mark", "all", "--save-inputs", inputs,
               "--save-outputs", golden)
    clean = run_parity("run", model, "--ref", "--onnx-outputs", "mark", "all", "--load-inputs", inputs,
                       "--load-outputs", golden, "--atol", "1e-5", "--rtol", "1e-4", timeout=RUN_TIMEOUT)
    assert clean.returncode == 0, clean.describe()

    from polygraphy.comparator import RunResults
    results = RunResults.load(str(golden))
    name = list(results.keys())[0]
    assert {"add_out", "mul_out", "tanh_out", "y"} <= set(results[name][0].keys())
    # Perturb the Mul's output and, later in the graph, the final output: the first divergence
    # in topological order is the Mul.
    results[name][0]["mul_out"] = results[name][0]["mul_out"] + 0.5
    results[name][0]["y"] = results[name][0]["y"] * 0.5
    perturbed = tmp_path / "perturbed.json"
    results.save(str(perturbed))
    report = tmp_path / "report.json"
    run = run_parity("run", model, "--ref", "--onnx-outputs", "mark", "all", "--load-inputs", inputs,
                     "--load-outputs", perturbed, "--report", report, timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    first = [line for line in lines_with_prefix(run.output, "[E] ") if "First divergence" in line]
    assert len(first) == 1 and "tensor 'mul_out' produced by node 'mul' [Op: Mul]" in first[0], run.describe()
    data = json.loads(report.read_text())
    layerwise = data["layerwise"][0]
    assert layerwise["first_divergence"]["tensor"] == "mul_out"
    assert layerwise["first_divergence"]["node"] == "mul" and layerwise["first_divergence"]["op"] == "Mul"
    assert {e["tensor"] for e in layerwise["worst"] if not e["passed"]} == {"mul_out", "y"}
    assert layerwise["failing"] == 2 and layerwise["compared"] == 4


def test_layerwise_streamed_and_held_agree(run_parity, tmp_path):
    """Two live runners compared tensor by tensor (streamed through the spill file) give the same
    first divergence as the whole-output comparison that --save-outputs forces."""
    model = accumulation_model(tmp_path / "accumulate.onnx")
    flags = ["--ref", "--ref-precision", "fp64", "--onnxrt", "--onnx-outputs", "mark", "all", "--atol", "0",
             "--rtol", "0"]
    streamed_report, held_report = tmp_path / "streamed.json", tmp_path / "held.json"
    # --layerwise-memory 0: the first runner's tensors all wait in the spill file.
    streamed = run_parity("run", model, *flags, "--report", streamed_report, "--layerwise-memory", "0",
                          timeout=RUN_TIMEOUT)
    held = run_parity("run", model, *flags, "--report", held_report, "--save-outputs", tmp_path / "out.json",
                      timeout=RUN_TIMEOUT)
    assert streamed.returncode == 1 and held.returncode == 1, streamed.describe() + held.describe()
    assert "streamed tensor by tensor" in streamed.output and "streamed tensor by tensor" not in held.output
    s, h = (json.loads(p.read_text())["layerwise"][0] for p in (streamed_report, held_report))
    assert s["first_divergence"]["tensor"] == h["first_divergence"]["tensor"]
    assert s["first_divergence"]["node"] == h["first_divergence"]["node"] == "matmul"
    assert s["first_divergence"]["op"] == h["first_divergence"]["op"] == "MatMul"
    assert s["compared"] == h["compared"] == 3
    assert s["spilled_bytes"] > 0
    # With the tolerance loosened, every tensor matches.
    ok = run_parity("run", model, "--ref", "--onnxrt", "--onnx-outputs", "mark", "all", "--atol", "1e-4",
                    timeout=RUN_TIMEOUT)
    assert ok.returncode == 0, ok.describe()
    assert any("PASSED | Every tensor is within tolerance" in line for line in lines_with_prefix(ok.output, "[I] "))


def comparable_log(output):
    """The log without what differs between two runs of one command: the command line, the runners'
    timestamps and timings."""
    lines = []
    for line in output.splitlines():
        if "RUNNING | Command:" in line or "Runtime:" in line or "Completed 1 iteration(s)" in line:
            continue
        lines.append(re.sub(r"-\d\d/\d\d/\d\d-\d\d:\d\d:\d\d", "-TIME", line))
    return lines


def test_layerwise_memory_changes_where_tensors_wait_not_the_comparison(run_parity, tmp_path):
    """In memory (the default budget) or all in the spill file (--layerwise-memory 0), the streamed
    comparison logs the same blocks, verdict and first divergence; only the report's spilled_bytes
    differs."""
    model = accumulation_model(tmp_path / "accumulate.onnx")
    flags = ["--ref", "--ref-precision", "fp64", "--onnxrt", "--onnx-outputs", "mark", "all", "--atol", "0",
             "--rtol", "0"]
    runs, reports = {}, {}
    report = tmp_path / "report.json"  # one path, so that the "Saved report" lines match
    for budget in (None, "0", "512M", "2G", "100"):
        extra = [] if budget is None else ["--layerwise-memory", budget]
        runs[budget] = run_parity("run", model, *flags, *extra, "--report", report, timeout=RUN_TIMEOUT)
        assert runs[budget].returncode == 1, runs[budget].describe()
        reports[budget] = json.loads(report.read_text())["layerwise"][0]
    first = [line for line in lines_with_prefix(runs[None].output, "[E] ") if "First divergence" in line]
    assert len(first) == 1 and "produced by node 'matmul' [Op: MatMul]" in first[0], runs[None].describe()
    for budget in ("0", "512M", "2G", "100"):
        assert comparable_log(runs[budget].output) == comparable_log(runs[None].output), runs[budget].describe()
        assert reports[budget]["first_divergence"] == reports[None]["first_divergence"]
    assert reports[None]["spilled_bytes"] == 0 and reports["2G"]["spilled_bytes"] == 0
    assert reports["0"]["spilled_bytes"] > 0
    # 100 bytes: the small tensors wait in memory, the 4x8 MatMul output (128 bytes) in the file.
    assert 0 < reports["100"]["spilled_bytes"] < reports["0"]["spilled_bytes"]


def test_layerwise_memory_refuses_a_bad_size(run_parity, tmp_path):
    model = accumulation_model(tmp_path / "accumulate.onnx")
    run = run_parity("run", model, "--ref", "--onnxrt", "--onnx-outputs", "mark", "all", "--layerwise-memory", "lots",
                     timeout=RUN_TIMEOUT)
    assert run.returncode != 0, run.describe()
    errors = lines_with_prefix(run.output, "[E] ")
    assert len([line for line in errors if "--layerwise-memory" in line]) == 1, run.describe()
    assert "cannot convert 'lots' to a number of bytes" in run.output, run.describe()
    assert "Comparing Output" not in run.output, run.describe()


def test_layerwise_memory_says_when_it_has_no_effect(run_parity, tmp_path):
    """A run that holds every result (--save-outputs) keeps no tensor waiting: the flag is not ignored
    silently."""
    model = accumulation_model(tmp_path / "accumulate.onnx")
    run = run_parity("run", model, "--ref", "--onnxrt", "--onnx-outputs", "mark", "all", "--atol", "1e-4",
                     "--layerwise-memory", "0", "--save-outputs", tmp_path / "out.json", timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert any("--layerwise-memory has no effect here" in line for line in lines_with_prefix(run.output, "[W] "))


def test_layerwise_named_outputs_from_file(run_parity, tmp_path):
    model = chain_model(tmp_path / "chain.onnx")
    names = tmp_path / "names.txt"
    names.write_text("mul_out\n# a comment\ntanh_out\n")
    report = tmp_path / "report.json"
    run = run_parity("run", model, "--ref", "--onnxrt", "--onnx-outputs", f"@{names}", "--report", report,
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    layerwise = json.loads(report.read_text())["layerwise"][0]
    assert layerwise["compared"] == 3  # mul_out, tanh_out and the graph output y
