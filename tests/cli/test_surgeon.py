"""`parity surgeon sanitize | extract | insert`: every produced model passes ONNX's checker and is
run with ONNX Runtime against the original (the reference-runner side is in the unit tests
tests/unit/test_graph_passes.cpp); sanitize is compared with `polygraphy surgeon sanitize`."""


import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from graph_tools_util import (SHARED_MODELS, assert_one_error, ort_run, shape_chain_model, shared_feed,
                              total_nodes)


def sanitize(run_parity, model, out, *flags, timeout=300):
    result = run_parity("surgeon", "sanitize", model, "-o", out, *flags, timeout=timeout)
    assert result.returncode == 0, result.describe()
    assert not result.crash_markers(), result.describe()
    onnx.checker.check_model(onnx.load(str(out)))
    return result


# --- sanitize ---

def test_sanitize_folds_shape_chain_of_static_shape(run_parity, tmp_path):
    source = tmp_path / "chain.onnx"
    onnx.save(shape_chain_model(), source)
    out = tmp_path / "folded.onnx"
    sanitize(run_parity, source, out, "--fold-constants")
    folded = onnx.load(str(out))
    assert sorted(n.op_type for n in folded.graph.node) == ["Add", "Reshape"]
    feed = {"x": np.random.default_rng(0).random((2, 3, 4), dtype=np.float32)}
    np.testing.assert_array_equal(ort_run(source, feed)["z"], ort_run(out, feed)["z"])


@pytest.mark.parametrize("name", ["ppocrv4_det", "silero_vad_v5"])
def test_sanitize_shared_model_not_more_nodes_than_polygraphy_and_same_outputs(run_parity, tmp_path, name):
    source = SHARED_MODELS / f"{name}.onnx"
    ours = tmp_path / "parity.onnx"
    sanitize(run_parity, source, ours, "--fold-constants")
    theirs = tmp_path / "polygraphy.onnx"
    polygraphy = [str(Path(sys.executable).parent / "polygraphy"), "surgeon", "sanitize", "--fold-constants", str(source),
                  "-o", str(theirs)]
    completed = subprocess.run(polygraphy, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    ours_model, theirs_model = onnx.load(str(ours)), onnx.load(str(theirs))
    original = onnx.load(str(source))
    assert total_nodes(ours_model.graph) <= total_nodes(theirs_model.graph)
    assert total_nodes(ours_model.graph) < total_nodes(original.graph)
    feeds = [shared_feed(name)]
    if name == "silero_vad_v5":  # the 8 kHz branch too
        feeds.append(dict(feeds[0], input=feeds[0]["input"][:, :256], sr=np.array(8000, np.int64)))
    for feed in feeds:
        expected = ort_run(source, feed)
        for model in (ours, theirs):
            got = ort_run(model, feed)
            for key, value in expected.items():
                np.testing.assert_allclose(got[key], value, rtol=1e-5, atol=1e-5, err_msg=f"{model}: {key}")


def test_sanitize_override_shapes_cleanup_toposort(run_parity, tmp_path):
    source = SHARED_MODELS / "ppocrv4_det.onnx"
    plain, fixed = tmp_path / "plain.onnx", tmp_path / "fixed.onnx"
    sanitize(run_parity, source, plain, "--fold-constants")
    sanitize(run_parity, source, fixed, "--fold-constants", "--override-input-shapes", "x:[1,3,64,64]",
             "--cleanup", "--toposort", "--num-passes", "3")
    model = onnx.load(str(fixed))
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [1, 3, 64, 64]
    assert len(model.graph.node) <= len(onnx.load(str(plain)).graph.node)
    feed = shared_feed("ppocrv4_det")
    expected = ort_run(source, feed)
    got = ort_run(fixed, feed)
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-5, atol=1e-5)


def test_sanitize_bad_override_names_the_input(run_parity, examples_dir, tmp_path):
    out = tmp_path / "out.onnx"
    result = run_parity("surgeon", "sanitize", examples_dir / "small_cnn.onnx", "--override-input-shapes",
                        "nosuch:[1,3]", "-o", out)
    assert_one_error(result, "'nosuch'")
    assert not out.exists()


# --- extract ---

def test_extract_small_cnn_matches_original_intermediates(run_parity, examples_dir, tmp_path):
    source = examples_dir / "small_cnn.onnx"
    out = tmp_path / "sub.onnx"
    result = run_parity("surgeon", "extract", source, "--inputs", "relu1_out:auto:auto", "--outputs",
                        "pool2_out:auto", "-o", out)
    assert result.returncode == 0, result.describe()
    sub = onnx.load(str(out))
    onnx.checker.check_model(sub, full_check=True)
    assert [i.name for i in sub.graph.input] == ["relu1_out"]
    assert [o.name for o in sub.graph.output] == ["pool2_out"]
    image = np.random.default_rng(1).random((2, 3, 32, 32), dtype=np.float32)
    original = ort_run(source, {"image": image}, extra_outputs=["relu1_out", "pool2_out"])
    got = ort_run(out, {"relu1_out": original["relu1_out"]})
    np.testing.assert_array_equal(got["pool2_out"], original["pool2_out"])


def test_extract_ppocr_chain_with_dynamic_dims(run_parity, tmp_path):
    source = SHARED_MODELS / "ppocrv4_det.onnx"
    out = tmp_path / "sub.onnx"
    result = run_parity("surgeon", "extract", source, "--inputs", "batch_norm_67.tmp_2:auto:float32",
                        "--outputs", "hardswish_59.tmp_0:auto", "-o", out)
    assert result.returncode == 0, result.describe()
    sub = onnx.load(str(out))
    onnx.checker.check_model(sub)
    feed = shared_feed("ppocrv4_det")
    original = ort_run(source, feed, extra_outputs=["batch_norm_67.tmp_2", "hardswish_59.tmp_0"])
    got = ort_run(out, {"batch_norm_67.tmp_2": original["batch_norm_67.tmp_2"]})
    np.testing.assert_allclose(got["hardswish_59.tmp_0"], original["hardswish_59.tmp_0"], rtol=1e-6, atol=1e-6)
    # ...and runs on the reference runner (check lint --lint-runner ref runs the whole subgraph on it).
    report = tmp_path / "lint.json"
    lint = run_parity("check", "lint", out, "-o", report, "--lint-runner", "ref",
                      "--input-shapes", "batch_norm_67.tmp_2:[1,16,32,32]")
    assert lint.returncode == 0, lint.describe()
    assert '"failing": []' in report.read_text()


def test_extract_falls_back_to_ref_runner_without_shape_inference(run_parity, examples_dir, tmp_path):
    out = tmp_path / "sub.onnx"
    result = run_parity("surgeon", "extract", examples_dir / "small_cnn.onnx", "--no-shape-inference",
                        "--inputs", "conv2_out:auto:auto", "--outputs", "relu2_out:auto",
                        "--model-input-shapes", "image:[2,3,32,32]", "-o", out)
    assert result.returncode == 0, result.describe()
    assert "reference runner" in result.output
    sub = onnx.load(str(out))
    dims = [d.dim_value for d in sub.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [2, 16, 16, 16] or all(d > 0 for d in dims), dims
    onnx.checker.check_model(sub)


def test_extract_unknown_tensor_is_one_error_and_no_file(run_parity, examples_dir, tmp_path):
    out = tmp_path / "sub.onnx"
    result = run_parity("surgeon", "extract", examples_dir / "small_cnn.onnx", "--inputs",
                        "relu1_out:auto:auto", "--outputs", "no_such_tensor:auto", "-o", out)
    assert_one_error(result, "'no_such_tensor'")
    assert not out.exists()


def test_extract_output_not_depending_on_inputs_is_one_error(run_parity, examples_dir, tmp_path):
    out = tmp_path / "sub.onnx"
    # pool1_out comes before conv2_out: it needs 'image', which is not given.
    result = run_parity("surgeon", "extract", examples_dir / "small_cnn.onnx", "--inputs",
                        "conv2_out:auto:auto", "--outputs", "pool1_out:auto", "-o", out)
    assert_one_error(result, "'pool1_out'", "'image'")
    assert not out.exists()


# --- insert ---

def test_insert_replaces_relu_and_keeps_outputs(run_parity, examples_dir, tmp_path):
    source = examples_dir / "small_cnn.onnx"
    out = tmp_path / "inserted.onnx"
    result = run_parity("surgeon", "insert", source, "--inputs", "bn1_out", "--outputs", "relu1_out", "--op",
                        "LeakyRelu", "--name", "leaky", "--attrs", "alpha=0.0", "-o", out)
    assert result.returncode == 0, result.describe()
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    leaky = [n for n in model.graph.node if n.op_type == "LeakyRelu"]
    assert len(leaky) == 1 and leaky[0].name == "leaky"
    assert onnx.helper.get_attribute_value(leaky[0].attribute[0]) == 0.0
    assert "relu1" not in [n.name for n in model.graph.node]
    image = {"image": np.random.default_rng(2).random((1, 3, 32, 32), dtype=np.float32)}
    np.testing.assert_array_equal(ort_run(out, image)["probabilities"], ort_run(source, image)["probabilities"])


def test_insert_on_graph_output_that_is_also_input(run_parity, examples_dir, tmp_path):
    source = examples_dir / "small_cnn.onnx"
    out = tmp_path / "negated.onnx"
    result = run_parity("surgeon", "insert", source, "--inputs", "probabilities", "--outputs", "probabilities",
                        "--op", "Neg", "-o", out)
    assert result.returncode == 0, result.describe()
    onnx.checker.check_model(onnx.load(str(out)))
    image = {"image": np.random.default_rng(3).random((1, 3, 32, 32), dtype=np.float32)}
    np.testing.assert_array_equal(ort_run(out, image)["probabilities"], -ort_run(source, image)["probabilities"])


@pytest.mark.parametrize("attr", ["perm=[0,2", "name='unterminated", "values=[1,'a']", "novalue"])
def test_insert_bad_attrs_is_one_error_and_no_file(run_parity, examples_dir, tmp_path, attr):
    out = tmp_path / "bad.onnx"
    result = run_parity("surgeon", "insert", examples_dir / "small_cnn.onnx", "--inputs", "bn1_out", "--outputs",
                        "relu1_out", "--op", "Transpose", "--attrs", attr, "-o", out)
    assert_one_error(result, "--attrs")
    assert not out.exists()


def test_insert_unknown_tensor_is_one_error(run_parity, examples_dir, tmp_path):
    out = tmp_path / "bad.onnx"
    result = run_parity("surgeon", "insert", examples_dir / "small_cnn.onnx", "--inputs", "ghost", "--outputs",
                        "relu1_out", "--op", "Relu", "-o", out)
    assert_one_error(result, "'ghost'")
    assert not out.exists()
