"""`parity run` comparison options: --postprocess, --validate (whole outputs and streamed tensors),
distance and quality tolerances, --onnx-exclude-outputs and --warm-up."""

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import lines_with_prefix
from run_util import RUN_TIMEOUT, load_polygraphy_json, single_error_line, accumulation_model

def test_postprocess_top_k_and_indices(run_parity, small_cnn):
    run = run_parity("run", small_cnn, "--ref", "--onnxrt", "--postprocess", "top-3", "--compare", "indices",
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert "Applying post-processing to outputs" in run.output
    assert "Difference is within index tolerance" in run.output


def test_validate_reports_infinities(run_parity, tmp_path):
    """Log(x) with x drawn from [0, 0] is -inf everywhere: --validate fails, and passes on [1, 2]."""
    graph = helper.make_graph(
        [helper.make_node("Log", ["x"], ["y"], name="log")], "log",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "log.onnx"
    onnx.save(model, path)
    bad = run_parity("run", path, "--ref", "--validate", "--val-range", "[0,0]", timeout=RUN_TIMEOUT)
    assert bad.returncode == 1, bad.describe()
    errors = lines_with_prefix(bad.output, "[E] ")
    assert any("Inf Detected" in line for line in errors) and any("FAILED | Output Validation" in line
                                                                  for line in errors), bad.describe()
    good = run_parity("run", path, "--ref", "--onnxrt", "--validate", "--val-range", "[1,2]", timeout=RUN_TIMEOUT)
    assert good.returncode == 0, good.describe()
    assert any("PASSED | Output Validation" in line for line in lines_with_prefix(good.output, "[I] "))


def test_distance_and_quality_tolerances_on_the_command_line(run_parity, small_cnn):
    """--l2-tolerance/--cosine-similarity-threshold (distance) and --psnr-tolerance/--snr-tolerance
    (quality), global or per output: the verdict follows the measured value against the given one."""
    import re

    def metric(output, label):
        """The measured value on the '<label>: value (...) | PASSED/FAILED' line."""
        found = re.search(rf"\] +{re.escape(label)}: (\S+) ", output)
        assert found, f"no '{label}:' line in\n{output}"
        return float(found.group(1))

    base = ("run", small_cnn, "--ref", "--onnxrt")
    measured = run_parity(*base, "--compare", "distance", timeout=RUN_TIMEOUT)
    l2 = metric(measured.output, "L2 Norm")
    assert 0 < l2 < 1e-3, measured.describe()
    for value, expect in ((l2 / 2, 1), (l2 * 2, 0)):
        run = run_parity(*base, "--compare", "distance", "--l2-tolerance", f"probabilities:{value!r}", timeout=RUN_TIMEOUT)
        assert run.returncode == expect, run.describe()
        shown = float(run.output.split("Tolerance: [L2=")[1].split(",")[0])
        assert shown == pytest.approx(value, rel=1e-4), run.describe()
    run = run_parity(*base, "--compare", "distance", "--l2-tolerance", "1", "--cosine-similarity-threshold", "1.0",
                     timeout=RUN_TIMEOUT)
    cosine = metric(run.output, "Cosine Similarity")
    assert run.returncode == (0 if cosine >= 1.0 else 1), run.describe()

    measured = run_parity(*base, "--compare", "quality", timeout=RUN_TIMEOUT)
    psnr, snr = metric(measured.output, "PSNR"), metric(measured.output, "SNR")
    assert measured.returncode == 0 and psnr > 30 and snr > 20, measured.describe()
    for flags, expect in ((("--psnr-tolerance", f"{psnr + 1}"), 1), (("--psnr-tolerance", f"{psnr - 1}"), 0),
                          (("--snr-tolerance", f"probabilities:{snr + 1}"), 1), (("--snr-tolerance", f"{snr - 1}"), 0)):
        run = run_parity(*base, "--compare", "quality", *flags, timeout=RUN_TIMEOUT)
        assert run.returncode == expect, run.describe()

    bad = run_parity(*base, "--compare", "distance", "--cosine-similarity-threshold", "2", timeout=RUN_TIMEOUT)
    assert bad.returncode == 1 and "--cosine-similarity-threshold must be in [-1, 1]" in single_error_line(bad)
    ignored = run_parity(*base, "--psnr-tolerance", "3", timeout=RUN_TIMEOUT)
    assert ignored.returncode == 0
    assert "--psnr-tolerance applies to --compare quality only" in ignored.output


def test_exclude_outputs_and_warm_up(run_parity, tmp_path):
    """--onnx-exclude-outputs leaves tensors out of the comparison and the saved results (streamed or
    held); a misspelled name is an error with a hint; --warm-up runs untimed inferences first."""
    model = accumulation_model(tmp_path / "accumulate.onnx")
    flags = ["--ref", "--ref-precision", "fp64", "--onnxrt", "--onnx-outputs", "mark", "all", "--atol", "0",
             "--rtol", "0"]
    baseline_report = tmp_path / "all.json"
    baseline = run_parity("run", model, *flags, "--report", baseline_report, timeout=RUN_TIMEOUT)
    assert baseline.returncode == 1
    first = json.loads(baseline_report.read_text())["layerwise"][0]["first_divergence"]["tensor"]
    assert first == "mm"
    # Streamed: the excluded tensor is not compared, so the first divergence moves downstream.
    report = tmp_path / "streamed.json"
    run = run_parity("run", model, *flags, "--onnx-exclude-outputs", "mm", "--report", report, timeout=RUN_TIMEOUT)
    layerwise = json.loads(report.read_text())["layerwise"][0]
    assert layerwise["compared"] == 2 and layerwise["first_divergence"]["tensor"] == "t", run.describe()
    assert "'mm'" not in run.output
    # Held (--save-outputs): the saved results lack it too, graph output included when asked.
    saved = tmp_path / "out.json"
    run = run_parity("run", model, *flags, "--onnx-exclude-outputs", "mm", "y", "--save-outputs", saved,
                     timeout=RUN_TIMEOUT)
    results = load_polygraphy_json(saved)
    for name in results.keys():
        assert list(results[name][0].keys()) == ["t"], run.describe()
    # A name no node produces.
    bad = run_parity("run", model, *flags, "--onnx-exclude-outputs", "mn", timeout=RUN_TIMEOUT)
    assert bad.returncode == 1
    line = single_error_line(bad)
    assert "--onnx-exclude-outputs" in line and "'mn'" in line and "did you mean 'mm'?" in line, line
    # --warm-up: untimed runs, then the one timed iteration.
    warm = run_parity("run", model, "--ref", "--onnxrt", "--atol", "1e-4", "--warm-up", "3", timeout=RUN_TIMEOUT)
    assert warm.returncode == 0, warm.describe()
    assert warm.output.count("Running 3 warm-up inference(s)") == 2
    assert warm.output.count("Completed 1 iteration(s)") == 2
    negative = run_parity("run", model, "--ref", "--warm-up", "-1", timeout=RUN_TIMEOUT)
    assert negative.returncode == 1 and "--warm-up" in single_error_line(negative)


def test_validate_checks_every_streamed_tensor(run_parity, tmp_path):
    """A NaN made and then removed inside the graph: the graph output is finite, but --validate on a
    streamed layerwise run checks every tensor and names the first one holding NaN."""
    nodes = [
        helper.make_node("Sub", ["x", "two"], ["shifted"], name="shift"),
        helper.make_node("Log", ["shifted"], ["logged"], name="log"),       # NaN: x - 2 < 0
        helper.make_node("IsNaN", ["logged"], ["is_nan"], name="isnan"),
        helper.make_node("Where", ["is_nan", "zero", "logged"], ["y"], name="clean"),
    ]
    graph = helper.make_graph(
        nodes, "hidden_nan", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(np.array(2.0, np.float32), "two"),
                     numpy_helper.from_array(np.array(0.0, np.float32), "zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "hidden_nan.onnx"
    onnx.save(model, path)
    report = tmp_path / "report.json"
    plain = run_parity("run", path, "--ref", "--onnxrt", "--validate", timeout=RUN_TIMEOUT)
    assert plain.returncode == 0, plain.describe()  # the graph output alone is clean
    bad = run_parity("run", path, "--ref", "--onnxrt", "--validate", "--onnx-outputs", "mark", "all",
                     "--report", report, timeout=RUN_TIMEOUT)
    assert bad.returncode == 1, bad.describe()
    failures = [line for line in lines_with_prefix(bad.output, "[E] ") if "Validation (every streamed tensor)" in line]
    assert len(failures) == 2, bad.describe()  # one per runner
    for line in failures:
        assert "1 of 4 tensor(s) hold NaN or Inf" in line and "'logged'" in line and "node 'log', op Log" in line
        assert "NaN: 6, Inf: 0" in line, line
    streamed = json.loads(report.read_text())["streamed_validation"]
    assert [entry["passed"] for entry in streamed] == [False, False]
    assert streamed[0]["nonfinite_tensors"] == [{"tensor": "logged", "iteration": 0, "node": "log", "op": "Log",
                                                  "nan": 6, "inf": 0, "neg_inf": 0}]
    good = run_parity("run", path, "--ref", "--onnxrt", "--validate", "--onnx-outputs", "mark", "all",
                      "--val-range", "[3,4]", timeout=RUN_TIMEOUT)
    assert good.returncode == 0, good.describe()
    assert good.output.count("no NaN or Inf in 4 tensor(s)") == 2
