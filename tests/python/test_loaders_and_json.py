"""Loaders (parity.backend.onnx/common, parity.func), parity.json and the type stubs."""
import filecmp
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper
import pytest
from onnx import TensorProto, helper

from parity import func
from parity.backend.common import BytesFromPath, InvokeFromScript, SaveBytes, bytes_from_path
from parity.backend.onnx import (
    BytesFromOnnx,
    ConvertToFp16,
    ExtractSubgraph,
    FoldConstants,
    InferShapes,
    ModifyOutputs,
    OnnxFromBytes,
    OnnxFromPath,
    SaveOnnx,
    fold_constants,
    onnx_from_path,
)
from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
from parity.backend.ref import RefRunner
from parity.common import TensorMetadata
from parity.constants import MARK_ALL
from parity.json import load_json, save_json

FEED = {"x": np.linspace(-1, 1, 48, dtype=np.float32).reshape(1, 3, 4, 4), "n": np.arange(4, dtype=np.int64)}


def _foldable(tmp_path):
    nodes = [
        helper.make_node("Add", ["c1", "c2"], ["c3"]),  # constant: folded away
        helper.make_node("Mul", ["x", "c3"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "foldable", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor("c1", TensorProto.FLOAT, [2, 2], [1, 2, 3, 4]),
         helper.make_tensor("c2", TensorProto.FLOAT, [2, 2], [1, 1, 1, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "foldable.onnx"
    onnx.save(model, str(path))
    return str(path)


def _run(loader, feed):
    with RefRunner(loader) as runner:
        return runner.infer(feed)


def test_loaders_return_model_protos_and_compose(models, tmp_path):
    model = onnx_from_path(models["mixed"])
    assert isinstance(model, onnx.ModelProto) and [i.name for i in model.graph.input] == ["x", "n"]
    data = BytesFromOnnx(OnnxFromPath(models["mixed"]))()
    assert isinstance(data, bytes) and OnnxFromBytes(data)().graph.node[0].op_type == "Tanh"
    saved = SaveOnnx(OnnxFromBytes(data), tmp_path / "copy.onnx")()
    assert isinstance(saved, onnx.ModelProto) and (tmp_path / "copy.onnx").exists()
    expected = _run(models["mixed"], FEED)
    # Every form a runner takes a model in gives the same outputs.
    for source in (models["mixed"], data, model, OnnxFromPath(models["mixed"]), lambda: model,
                   InferShapes(OnnxFromPath(models["mixed"])), str(tmp_path / "copy.onnx")):
        outputs = _run(source, FEED)
        for name in expected:
            assert np.array_equal(outputs[name], expected[name])


def test_external_data_in_another_folder(tmp_path):
    """OnnxFromPath(external_data_dir=...): weights kept in another folder than the model's are read
    from there, by the loader and by runners given the loader (not without the folder)."""
    from parity.exception import ParityException

    weight = np.random.default_rng(1).standard_normal((32, 32)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "matmul",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 32])],
                              [onnx.numpy_helper.from_array(weight, "w")])
    model_dir, data_dir = tmp_path / "model", tmp_path / "data"
    model_dir.mkdir()
    data_dir.mkdir()
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                    data_dir / "m.onnx", save_as_external_data=True, location="weights.bin", size_threshold=1024)
    (data_dir / "m.onnx").rename(model_dir / "m.onnx")
    path = model_dir / "m.onnx"

    proto = onnx_from_path(path, external_data_dir=data_dir)
    assert np.array_equal(onnx.numpy_helper.to_array(proto.graph.initializer[0]), weight)
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32)
    loader = OnnxFromPath(path, external_data_dir=str(data_dir))
    for runner in (RefRunner(loader), OnnxrtRunner(SessionFromOnnx(loader)),
                   OnnxrtRunner(SessionFromOnnx(BytesFromOnnx(loader)))):
        with runner:
            np.testing.assert_allclose(runner.infer({"x": x})["y"], x @ weight, rtol=1e-5, atol=1e-5)
    with pytest.raises(ParityException, match="weights.bin"):
        onnx_from_path(path)
    with pytest.raises(ParityException, match="weights.bin"):
        with RefRunner(OnnxFromPath(path)):
            pass
    with pytest.raises(NotImplementedError, match="ignore_external_data"):
        OnnxFromPath(path, ignore_external_data=True)


def test_fold_constants_and_infer_shapes(tmp_path):
    path = _foldable(tmp_path)
    folded = fold_constants(OnnxFromPath(path))
    assert [n.op_type for n in folded.graph.node] == ["Mul"]
    x = np.ones((2, 2), np.float32)
    assert np.array_equal(_run(folded, {"x": x})["y"], _run(path, {"x": x})["y"])
    inferred = InferShapes(FoldConstants(OnnxFromPath(path)))()
    assert isinstance(inferred, onnx.ModelProto)


def test_fold_constants_partitioning(tmp_path):
    """A constant Gather with an out-of-range index cannot be evaluated: without partitioning nothing
    folds; 'recursive' folds everything that does not depend on it."""
    from onnx import TensorProto, helper, numpy_helper

    initializers = [numpy_helper.from_array(np.ones((3,), np.float32), "a"),
                    numpy_helper.from_array(np.array([10], np.int64), "idx")]
    nodes = [helper.make_node("Neg", ["a"], ["neg"]), helper.make_node("Gather", ["neg", "idx"], ["bad"]),
             helper.make_node("Add", ["x", "bad"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)
    path = tmp_path / "partial.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    assert [n.op_type for n in fold_constants(OnnxFromPath(str(path))).graph.node] == ["Neg", "Gather", "Add"]
    folded = fold_constants(OnnxFromPath(str(path)), partitioning="recursive")
    assert [n.op_type for n in folded.graph.node] == ["Gather", "Add"]
    with pytest.raises(ValueError, match="partitioning"):
        FoldConstants(OnnxFromPath(str(path)), partitioning="greedy")


def test_extract_subgraph_and_modify_outputs(models):
    meta_in = TensorMetadata().add("n2", np.int64, (4,))
    meta_out = TensorMetadata().add("z", np.int64, (4,))
    sub = ExtractSubgraph(OnnxFromPath(models["mixed"]), meta_in, meta_out)()
    assert [i.name for i in sub.graph.input] == ["n2"] and [o.name for o in sub.graph.output] == ["z"]
    assert [n.op_type for n in sub.graph.node] == ["Add"]
    assert np.array_equal(_run(sub, {"n2": np.array([4, 5, 6, 7])})["z"], [5, 6, 7, 8])
    marked = ModifyOutputs(OnnxFromPath(models["mixed"]), outputs=MARK_ALL, exclude_outputs=["n2"])()
    names = [o.name for o in marked.graph.output]
    assert {"t", "t3", "y", "z"} <= set(names) and "n2" not in names
    with OnnxrtRunner(SessionFromOnnx(marked)) as runner:
        outputs = runner.infer(FEED)
    assert np.allclose(outputs["t"], np.tanh(FEED["x"]), atol=1e-6)


def test_convert_to_fp16_keeps_io_float32(models):
    model = ConvertToFp16(OnnxFromPath(models["mixed"]))()
    assert model.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT
    assert any(i.data_type == TensorProto.FLOAT16 for i in model.graph.initializer)
    outputs = _run(model, FEED)
    assert np.allclose(outputs["y"], _run(OnnxFromPath(models["mixed"]), FEED)["y"], atol=1e-2)


def test_common_loaders_and_func_extend(models, tmp_path):
    data = bytes_from_path(models["identity"])
    assert SaveBytes(BytesFromPath(models["identity"]), tmp_path / "copy.onnx")() == data
    assert (tmp_path / "copy.onnx").read_bytes() == data
    (tmp_path / "script.py").write_text("def load(scale):\n    return scale * 2\n")
    assert InvokeFromScript(tmp_path / "script.py", "load")(21) == 42

    @func.extend(OnnxFromPath(models["identity"]))
    def rename_output(model):
        model.graph.output[0].name = "y"  # in place: the loader's model is returned

    assert isinstance(rename_output(), onnx.ModelProto)


def test_json_round_trip_matches_polygraphy(tmp_path):
    from polygraphy.json import load_json as pg_load_json
    from polygraphy.json import save_json as pg_save_json

    feeds = [{"x": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([True, False])},
             {"x": np.zeros((2, 3), np.float32), "b": np.array([False, False])}]
    save_json(feeds, tmp_path / "parity.json")
    pg_save_json(feeds, str(tmp_path / "polygraphy.json"))
    assert filecmp.cmp(tmp_path / "parity.json", tmp_path / "polygraphy.json", shallow=False)
    for loaded in (load_json(tmp_path / "polygraphy.json"), pg_load_json(str(tmp_path / "parity.json"))):
        for mine, expected in zip(loaded, feeds):
            for name in expected:
                assert np.array_equal(mine[name], expected[name]) and mine[name].dtype == expected[name].dtype


def test_extension_stub_is_current(tmp_path):
    """python/parity/_parity.pyi is what nanobind.stubgen writes for the built module."""
    stub = Path(__file__).resolve().parents[2] / "python" / "parity" / "_parity.pyi"
    subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "parity._parity", "-o",
                    str(tmp_path / "_parity.pyi")], check=True, capture_output=True, timeout=120)
    assert (tmp_path / "_parity.pyi").read_text() == stub.read_text(), \
        "regenerate it: python -m nanobind.stubgen -m parity._parity -o python/parity/_parity.pyi"
