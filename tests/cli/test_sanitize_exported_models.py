"""`parity surgeon sanitize --fold-constants` on transformers exported from PyTorch by both of torch's
exporters: the folded model is Polygraphy's (the same node count, outputs identical under ONNX Runtime),
and ONNX Runtime's symbolic shape inference runs only on a graph it has not seen: once when the model
is loaded and once after each pass that folded something (Polygraphy runs it once more per pass and
at the end, on graphs that did not change)."""

import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from exported_models import export
from graph_tools_util import total_nodes
from run_util import polygraphy

MODELS = [(kind, exporter) for kind in ("gpt2", "bert") for exporter in ("torchscript", "dynamo")]
RUNNING_LINE = "Running ONNX Runtime's symbolic shape inference"


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sanitize_exported")
    return {(kind, exporter): export(kind, folder / f"{kind}_{exporter}.onnx", exporter) for kind, exporter in MODELS}


def outputs(path):
    """The model's outputs under ONNX Runtime (no graph optimisation) on token ids of batch 2, length 5 (masks and token types 0 or 1)."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feed = {meta.name: rng.integers(0, 100 if meta.name == "input_ids" else 2, (2, 5)).astype(np.int64)
            for meta in session.get_inputs()}
    return session.run(None, feed)


@pytest.mark.parametrize("kind,exporter", MODELS, ids=[f"{k}-{e}" for k, e in MODELS])
def test_fold_constants_gives_polygraphys_model(run_parity, exported, tmp_path, kind, exporter):
    source = exported[(kind, exporter)]
    ours, theirs = tmp_path / "parity.onnx", tmp_path / "polygraphy.onnx"
    result = run_parity("surgeon", "sanitize", source, "--fold-constants", "-o", ours, "-v")
    assert result.returncode == 0, result.describe()
    polygraphy("surgeon", "sanitize", source, "--fold-constants", "-o", theirs)
    original, folded, reference = (onnx.load(str(path)) for path in (source, ours, theirs))
    if exporter == "torchscript":  # its Constant nodes and shape arithmetic fold (the dynamo export has none)
        assert total_nodes(folded.graph) < total_nodes(original.graph)
    assert total_nodes(folded.graph) == total_nodes(reference.graph)
    assert [n.op_type for n in folded.graph.node] == [n.op_type for n in reference.graph.node]
    expected = outputs(source)
    for got, want in zip(outputs(ours), outputs(theirs), strict=True):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(outputs(ours), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

    # Once at load, then once after each pass that folded nodes (the next pass, or the end, needs
    # the shapes of the changed graph); never again on a graph that did not change.
    folded_per_pass = [int(n) for n in re.findall(r"Total Nodes \| Original: +\d+, After Folding: +\d+ \| +(\d+) "
                                                  r"Nodes Folded$", result.output, re.MULTILINE)]
    assert folded_per_pass and folded_per_pass[-1] == 0, result.describe()
    changed_passes = sum(1 for n in folded_per_pass if n > 0)
    assert result.output.count(RUNNING_LINE) == 1 + changed_passes, result.describe()
