"""Polygraphy's pictures on `parity run`: --save-heatmaps, --show-heatmaps, --save-error-metrics-plot and
--show-error-metrics-plot, side by side with Polygraphy on the same outputs (same file names and counts,
images of the same size), and the cases Polygraphy does not survive: outputs of rank 0 and 1 (no heatmap,
said so), NaN and Inf, no display for --show-*, no matplotlib.

The error metrics plot is drawn at Polygraphy's 1200 dpi (seconds per output), so each case compares few
outputs.
"""

import os
import re
import struct
from pathlib import Path

import numpy as np
import pytest

from conftest import CRASH_MARKERS
from run_util import polygraphy


def png_size(path):
    with open(path, "rb") as f:
        header = f.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", header[16:24])


def svg_size(path):
    text = Path(path).read_text()[:2000]
    match = re.search(r'<svg[^>]*width="([\d.]+)pt" height="([\d.]+)pt"', text, re.S)
    assert match, f"{path}: no width/height"
    return float(match.group(1)), float(match.group(2))


def save_results(path, runner, outputs):
    """A Polygraphy RunResults file of one iteration, written with Polygraphy's own API."""
    from polygraphy.comparator import RunResults
    from polygraphy.comparator.struct import IterationResult

    results = RunResults()
    results.append((runner, [IterationResult(outputs=outputs, runner_name=runner)]))
    results.save(str(path))
    return path


@pytest.fixture(scope="session")
def drifted_results(tmp_path_factory):
    """Two RunResults of the same outputs, the first 0.1% off everywhere: a 4-D output (two figures' worth of
    images), a 2-D one and a 3-D one. No element is exact: Polygraphy cannot draw a relative error whose
    minimum is 0 on its log scale (matplotlib's "Invalid vmin or vmax"; test_exact_elements below)."""
    folder = tmp_path_factory.mktemp("pictures")
    rng = np.random.default_rng(7)
    reference = {
        "features": rng.standard_normal((1, 100, 8, 8)).astype(np.float32),
        "logits": rng.standard_normal((2, 10)).astype(np.float32),
        "attention/scores": rng.standard_normal((3, 4, 5)).astype(np.float32),
    }
    drifted = {}
    for name, array in reference.items():
        noise = (1 + 1e-3 * rng.standard_normal(array.shape)).astype(np.float32)
        drifted[name] = array * noise
    return (save_results(folder / "a.json", "runner-a", drifted), save_results(folder / "b.json", "runner-b", reference))


def test_same_files_as_polygraphy(run_parity, drifted_results, tmp_path):
    a, b = drifted_results
    flags = ["--load-outputs", a, b, "--save-heatmaps", "HEAT", "--save-error-metrics-plot", "PLOT"]
    for tool, folder in (("polygraphy", tmp_path / "poly"), ("parity", tmp_path / "parity")):
        folder.mkdir()
        args = [str(f).replace("HEAT", str(folder / "heat")).replace("PLOT", str(folder / "plot")) for f in flags]
        if tool == "polygraphy":
            polygraphy("run", *args, expect=1)
        else:
            run = run_parity("run", *args, timeout=600)
            assert run.returncode == 1, run.output  # 0.1% off fails the default tolerance
            assert "Saving" in run.output, run.output
            assert not any(marker in run.output for marker in CRASH_MARKERS), run.output
    poly_heat = sorted(os.listdir(tmp_path / "poly" / "heat"))
    ours_heat = sorted(os.listdir(tmp_path / "parity" / "heat"))
    poly_plot = sorted(os.listdir(tmp_path / "poly" / "plot"))
    ours_plot = sorted(os.listdir(tmp_path / "parity" / "plot"))
    assert ours_heat == poly_heat
    assert ours_plot == poly_plot
    # 100 images of 8x8 make two figures of 14x7 (Polygraphy's limit), so both kinds of name appear.
    assert any("(0,98,0:8,0:8) to (0,99,0:8,0:8)" in name for name in ours_heat), ours_heat
    assert len(ours_plot) == 3 and len(ours_heat) == 2 * (2 + 1 + 1)
    for name in ours_heat:
        assert svg_size(tmp_path / "parity" / "heat" / name) == svg_size(tmp_path / "poly" / "heat" / name), name
    for name in ours_plot:
        ours, theirs = png_size(tmp_path / "parity" / "plot" / name), png_size(tmp_path / "poly" / "plot" / name)
        # bbox_inches="tight": the same figure, within a few pixels of text extent.
        assert abs(ours[0] - theirs[0]) <= 0.02 * theirs[0] and abs(ours[1] - theirs[1]) <= 0.02 * theirs[1], name


def test_saving_lines_name_each_file(run_parity, drifted_results, tmp_path):
    a, b = drifted_results
    run = run_parity("run", "--load-outputs", a, b, "--save-heatmaps", tmp_path / "h", timeout=600)
    saved = re.findall(r"Saving '(.*?)' heatmap to: '(.*?)'", run.output)
    assert sorted(Path(path).name for _, path in saved) == sorted(os.listdir(tmp_path / "h"))
    assert {prefix for prefix, _ in saved} >= {"Absolute Error | logits", "Relative Error | logits (Log Scale)"}
    assert not (tmp_path / "plot").exists()


def test_rank_0_and_1_and_nonfinite_values(run_parity, tmp_path):
    """Rank 0 and 1: no heatmap, said so (their plots are drawn); NaN and Inf in a 3-D output: pictures drawn."""
    image = np.linspace(-1, 1, 2 * 6 * 7, dtype=np.float32).reshape(2, 6, 7)
    broken = image * np.float32(1.01)
    broken[0, 0, 0] = np.nan
    broken[0, 1, 1] = np.inf
    broken[1, 2, 3] = -np.inf
    first = {"scalar": np.array(1.5, dtype=np.float32), "vector": np.arange(5, dtype=np.float32), "image": broken}
    second = {"scalar": np.array(1.25, dtype=np.float32), "vector": np.arange(5, dtype=np.float32) * 1.01, "image": image}
    a = save_results(tmp_path / "a.json", "runner-a", first)
    b = save_results(tmp_path / "b.json", "runner-b", second)
    run = run_parity("run", "--load-outputs", a, b, "--save-heatmaps", tmp_path / "h",
                     "--save-error-metrics-plot", tmp_path / "p", timeout=600)
    assert run.returncode == 1, run.output
    assert not any(marker in run.output for marker in CRASH_MARKERS), run.output
    assert "No heatmap for Absolute Error | scalar: the output has rank 0" in run.output
    assert "No heatmap for Relative Error | vector: the output has rank 1" in run.output
    heat = os.listdir(tmp_path / "h")
    assert sorted(name.split(":")[0] for name in heat) == ["Absolute Error | image", "Relative Error | image (Log Scale)"]
    assert sorted(os.listdir(tmp_path / "p")) == ["error_metrics_image.png", "error_metrics_scalar.png",
                                                 "error_metrics_vector.png"]
    assert "leaves out 3 of 84 element(s) whose value or error is NaN or Inf" in run.output


def test_show_without_display_says_so(run_parity, drifted_results, tmp_path):
    a, b = drifted_results
    env = {"DISPLAY": "", "WAYLAND_DISPLAY": ""}  # added to the environment: empty is no display
    run = run_parity("run", "--load-outputs", a, b, "--show-heatmaps", env=env, timeout=600)
    assert run.returncode == 1, run.output  # the comparison's verdict, not an error
    assert re.search(r"\[W\] --show-heatmaps: cannot open a window: no display", run.output), run.output
    assert [line for line in run.output.splitlines() if line.startswith("[E]") and "FAILED" not in line and "Accuracy Summary" not in line] == []


def test_other_comparison_functions_refuse_the_flags(run_parity, drifted_results, tmp_path):
    a, b = drifted_results
    run = run_parity("run", "--load-outputs", a, b, "--compare", "distance", "--save-heatmaps", tmp_path / "h")
    assert run.returncode != 0
    assert "[E] --save-heatmaps, --show-heatmaps, --save-error-metrics-plot and --show-error-metrics-plot draw the " \
           "comparisons of --compare simple" in run.output
    assert not (tmp_path / "h").exists()


def test_python_without_matplotlib_fails_before_running(run_parity, drifted_results, tmp_path):
    # The system Python (no virtual environment) has no matplotlib.
    system_python = "/usr/bin/python3"
    import subprocess
    probe = subprocess.run([system_python, "-c", "import matplotlib"], capture_output=True)
    assert probe.returncode != 0, "the system Python has matplotlib: this test needs one without it"
    a, b = drifted_results
    run = run_parity("run", "--load-outputs", a, b, "--save-heatmaps", tmp_path / "h",
                     env=dict(os.environ, PARITY_PYTHON=system_python))
    assert run.returncode != 0
    assert "[E] Heatmaps and error metrics plots are drawn with matplotlib by the Python Parity uses " \
           f"({system_python})" in run.output, run.output
    assert "Loaded" not in run.output.split("[E]")[-1]
    assert not (tmp_path / "h").exists()


def test_streamed_layerwise_run_draws_each_tensor(run_parity, tmp_path):
    """--onnx-outputs mark all with two live runners streams the comparison; each tensor still gets its pictures."""
    import onnx
    from onnx import TensorProto, helper

    # Built here: a three-node chain whose tensors have ranks 4, 4 and 2 is all this needs.
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("Sigmoid", ["r"], ["s"], name="sigmoid"),
         helper.make_node("Flatten", ["s"], ["y"], name="flatten")],
        "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])])
    model = tmp_path / "chain.onnx"
    onnx.save(helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17)]), model)
    run = run_parity("run", model, "--ref", "--onnxrt", "--onnx-outputs", "mark", "all", "--save-heatmaps",
                     tmp_path / "h", timeout=600)
    assert run.returncode == 0, run.output
    names = sorted(name.split(":")[0].replace(" (Log Scale)", "") for name in os.listdir(tmp_path / "h"))
    assert names == sorted(f"{kind} Error | {t}" for kind in ("Absolute", "Relative") for t in ("r", "s", "y")), names
