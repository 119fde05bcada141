"""`parity convert --fp-to-fp16`: the float16 model passes ONNX's checker, keeps float32 graph
inputs/outputs (Casts at the boundary), and runs on the reference runner (checked through
`parity check lint --lint-runner ref`, which runs the whole model on it). The numeric error against float32 on the
reference runner is measured in tests/unit/test_graph_passes.cpp (Float16.*)."""

import json
import re

import onnx
from onnx import TensorProto

from graph_tools_util import SHARED_MODELS, assert_one_error


def convert(run_parity, source, out, *flags):
    result = run_parity("convert", source, "--fp-to-fp16", "-o", out, *flags, timeout=300)
    assert result.returncode == 0, result.describe()
    model = onnx.load(str(out))
    onnx.checker.check_model(model)
    return model


def runs_on_ref(run_parity, model_path, tmp_path, *flags):
    report = tmp_path / "lint.json"
    result = run_parity("check", "lint", model_path, "-o", report, "--lint-runner", "ref", *flags, timeout=300)
    assert result.returncode == 0, result.describe()
    data = json.loads(report.read_text())
    assert data["summary"]["failing"] == [], data
    return data


def test_small_cnn_to_fp16_keeps_io_types_and_runs_on_ref(run_parity, examples_dir, tmp_path):
    out = tmp_path / "fp16.onnx"
    model = convert(run_parity, examples_dir / "small_cnn.onnx", out)
    assert model.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT
    assert model.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT
    weights = [t for t in model.graph.initializer if t.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16)]
    assert weights and all(t.data_type == TensorProto.FLOAT16 for t in weights)
    casts = [n for n in model.graph.node if n.op_type == "Cast"]
    assert len(casts) == 2
    data = runs_on_ref(run_parity, out, tmp_path)
    assert len(data["summary"]["passing"]) == len(model.graph.node)


def test_keep_fp32_puts_casts_around_the_op(run_parity, examples_dir, tmp_path):
    out = tmp_path / "fp16.onnx"
    model = convert(run_parity, examples_dir / "small_cnn.onnx", out, "--keep-fp32", "Softmax")
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type.tensor_type.elem_type for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    softmax = next(n for n in model.graph.node if n.op_type == "Softmax")
    assert types[softmax.input[0]] == TensorProto.FLOAT
    gemm = next(n for n in model.graph.node if n.op_type == "Gemm")
    assert types[gemm.output[0]] == TensorProto.FLOAT16
    runs_on_ref(run_parity, out, tmp_path)


def test_no_keep_io_types_makes_io_float16(run_parity, examples_dir, tmp_path):
    out = tmp_path / "fp16.onnx"
    model = convert(run_parity, examples_dir / "small_transformer.onnx", out, "--no-keep-io-types")
    assert model.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    assert model.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    runs_on_ref(run_parity, out, tmp_path)


def test_ppocr_with_resize_scales_kept_float32_runs_on_ref(run_parity, tmp_path):
    out = tmp_path / "fp16.onnx"
    model = convert(run_parity, SHARED_MODELS / "ppocrv4_det.onnx", out)
    assert any(n.op_type == "Resize" for n in model.graph.node)
    runs_on_ref(run_parity, out, tmp_path, "--input-shapes", "x:[1,3,64,64]")


def test_keep_fp32_unknown_op_is_one_error(run_parity, examples_dir, tmp_path):
    out = tmp_path / "fp16.onnx"
    result = run_parity("convert", examples_dir / "small_cnn.onnx", "--fp-to-fp16", "--keep-fp32", "NoSuchOp",
                        "-o", out)
    assert_one_error(result, "'NoSuchOp'")
    assert not out.exists()


def test_report_error_measures_fp16_against_fp32_on_ref(run_parity, examples_dir, tmp_path):
    out = tmp_path / "fp16.onnx"
    result = run_parity("convert", examples_dir / "small_cnn.onnx", "--fp-to-fp16", "--report-error",
                        "--input-shapes", "image:[4,3,32,32]", "-o", out)
    assert result.returncode == 0, result.describe()
    lines = [line for line in result.lines("[I] ") if "float16 vs float32 on the reference runner" in line]
    assert len(lines) == 1 and "| probabilities |" in lines[0], result.describe()
    max_abs = float(re.search(r"max abs error: ([0-9.eE+-]+)", lines[0]).group(1))
    assert 0 < max_abs < 1e-2  # float16 rounding shows, but stays small on a softmax output


def test_silero_subgraphs_converted_and_run_on_ref(run_parity, tmp_path):
    """silero_vad_v5 computes everything inside If branches: their weights and values turn float16
    (with --no-default-keep: the default list keeps its Pow nodes, and their exponents, in float32)."""
    out = tmp_path / "fp16.onnx"
    result = run_parity("convert", SHARED_MODELS / "silero_vad_v5.onnx", "--fp-to-fp16", "--no-default-keep",
                        "--report-error",
                        "--input-shapes", "input:[1,512]", "state:[2,1,128]", "--val-range", "sr:[16000,16000]",
                        "-o", out, timeout=300)
    assert result.returncode == 0, result.describe()
    model = onnx.load(str(out))
    onnx.checker.check_model(model)

    def initializers(graph):
        found = list(graph.initializer)
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    found += initializers(attr.g)
        return found

    floats = [t for t in initializers(model.graph) if t.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16)]
    assert floats and all(t.data_type == TensorProto.FLOAT16 for t in floats)
    lines = [line for line in result.lines("[I] ") if "float16 vs float32 on the reference runner" in line]
    assert [line.split("|")[1].strip() for line in lines] == ["output", "stateN"], result.describe()
    output_error = float(re.search(r"max abs error: ([0-9.eE+-]+)", lines[0]).group(1))
    assert output_error < 1e-2
