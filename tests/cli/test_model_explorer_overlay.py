"""`parity run --save-model-explorer-overlay`: the file follows Google Model Explorer's "custom node data" format
as its node_data_builder documents it (GraphNodeData: "results" keyed by a node's output tensor name, each
{"value": number, "bgColor"?: colour, "textColor"?: colour}; "thresholds": [{"value": number, "bgColor": colour,
"textColor"?: colour}] in increasing order), its keys are the model's tensors and its values the errors the
JSON report gives."""
import json
import math

import onnx
import pytest

from exported_models import export

GRAPH_NODE_DATA_KEYS = {"results", "thresholds", "gradient", "hideInAggregatedStatsTable", "hideInChildrenStatsTable",
                        "hideAggregatedStats", "showExpandedSummaryOnGroupNode",
                        "showLabelCountColumnsInChildrenStatsTable"}


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_format(overlay):
    assert isinstance(overlay, dict) and set(overlay) <= GRAPH_NODE_DATA_KEYS and "results" in overlay
    for key, result in overlay["results"].items():
        assert isinstance(key, str) and key
        assert set(result) <= {"value", "bgColor", "textColor"} and is_number(result["value"]), (key, result)
        assert all(isinstance(result[c], str) for c in ("bgColor", "textColor") if c in result)
    values = []
    for item in overlay.get("thresholds", []):
        assert set(item) <= {"value", "bgColor", "textColor"} and is_number(item["value"])
        assert isinstance(item["bgColor"], str)
        values.append(item["value"])
    assert values == sorted(values)


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("overlay_models")
    return {f"{kind}_{exporter}": export(kind, folder / f"{kind}_{exporter}.onnx", exporter)
            for kind, exporter in (("resnet", "torchscript"), ("gpt2", "dynamo"))}


@pytest.mark.parametrize("model", ["resnet_torchscript", "gpt2_dynamo"])
def test_layerwise_overlay(run_parity, models, model, tmp_path):
    overlay_path, report_path = tmp_path / "overlay.json", tmp_path / "report.json"
    run = run_parity("run", models[model], "--ref", "--onnxrt", "--onnx-outputs", "mark", "all",
                     "--save-model-explorer-overlay", overlay_path, "--report", report_path, "--atol", "1e-7")
    assert run.returncode in (0, 1), run.output
    assert f"Saved Model Explorer node data to {overlay_path}" in run.output
    overlay = json.loads(overlay_path.read_text())
    check_format(overlay)
    graph = onnx.load(str(models[model]), load_external_data=False).graph
    produced = {output for node in graph.node for output in node.output}
    report = json.loads(report_path.read_text())["layerwise"][0]
    assert set(overlay["results"]) <= produced
    assert len(overlay["results"]) == report["compared"]
    for worst in report["worst"]:
        assert overlay["results"][worst["tensor"]]["value"] == pytest.approx(worst["max_absdiff"], rel=1e-12)
    assert overlay["thresholds"][0]["value"] == 1e-7  # coloured by the run's tolerance


def test_graph_outputs_and_nonfinite_errors(run_parity, tmp_path):
    import numpy as np
    from polygraphy.comparator import RunResults
    from polygraphy.comparator.struct import IterationResult

    for name, scale in (("a", 1.5), ("b", 1.0)):
        y = np.arange(6, dtype=np.float32).reshape(2, 3) * np.float32(scale)
        if name == "a":
            y[0, 0] = np.nan
        results = RunResults()
        results.append((f"runner-{name}", [IterationResult(outputs={"y": y, "z": np.ones(3, np.float32)},
                                                          runner_name=f"runner-{name}")]))
        results.save(str(tmp_path / f"{name}.json"))
    overlay_path = tmp_path / "overlay.json"
    run = run_parity("run", "--load-outputs", tmp_path / "a.json", tmp_path / "b.json",
                     "--save-model-explorer-overlay", overlay_path)
    assert run.returncode == 1, run.output
    overlay = json.loads(overlay_path.read_text())
    check_format(overlay)
    assert overlay["results"]["z"] == {"value": 0.0}
    assert overlay["results"]["y"]["bgColor"] == "#ff00ff"  # a NaN error: JSON has no NaN


def test_unwritable_path(run_parity, models, tmp_path):
    path = tmp_path / "missing" / "overlay.json"
    run = run_parity("run", models["resnet_torchscript"], "--ref", "--onnxrt", "--save-model-explorer-overlay", path)
    assert run.returncode != 0
    assert f"[E] --save-model-explorer-overlay {path}: the folder" in run.output
    assert "Accuracy Comparison" not in run.output
