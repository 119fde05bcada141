"""`parity debug precision`: models built here with planted nodes whose results overflow float16
(a Mul squaring values above 256, read by a LayerNormalization that the default keep list keeps in
float32); the tool must name those nodes (and few others) in every mode and direction, its keep
list must work with `convert --keep-fp32 @FILE`, and the fixed model must pass the same check."""

import json
import re
import shlex

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from graph_tools_util import assert_one_error

TOLERANCES = ("--rtol", "1e-2", "--atol", "1e-2")


def chain(nodes, initializers, source, prefix, length):
    """`length` harmless nodes (Add 0.5, Mul 0.5, Relu, in turn) after `source`; returns the last tensor."""
    current = source
    for i in range(length):
        name = f"{prefix}_{i}"
        kind = ("Add", "Mul", "Relu")[i % 3]
        if kind == "Relu":
            nodes.append(helper.make_node("Relu", [current], [name], name=name))
        else:
            constant = f"{name}_c"
            initializers.append(helper.make_tensor(constant, TensorProto.FLOAT, [1], [0.5]))
            nodes.append(helper.make_node(kind, [current, constant], [name], name=name))
        current = name
    return current


def overflow_block(nodes, initializers, source, tag, scale):
    """source + 1 -> * scale -> square (beyond float16's 65504 for scale 1000) -> LayerNormalization (kept in
    float32 by the default list), which brings the values back near 0: only the square must stay float32."""
    for name, value in ((f"{tag}_one", [1.0]), (f"{tag}_scale_c", [scale]), (f"{tag}_gamma", [1.0] * 16),
                        (f"{tag}_beta", [0.0] * 16)):
        initializers.append(helper.make_tensor(name, TensorProto.FLOAT, [len(value)], value))
    nodes += [
        helper.make_node("Add", [source, f"{tag}_one"], [f"{tag}_shifted"], name=f"{tag}_shift"),
        helper.make_node("Mul", [f"{tag}_shifted", f"{tag}_scale_c"], [f"{tag}_scaled"], name=f"{tag}_scale"),
        helper.make_node("Mul", [f"{tag}_scaled", f"{tag}_scaled"], [f"{tag}_squared"], name=f"{tag}_square"),
        helper.make_node("LayerNormalization", [f"{tag}_squared", f"{tag}_gamma", f"{tag}_beta"],
                         [f"{tag}_normalized"], name=f"{tag}_normalize", axis=-1),
    ]
    return f"{tag}_normalized"


def planted_model(path, planted=("first",), scale=1000.0, length=12):
    """x [1,16] -> chain -> (overflow block -> chain) per planted tag -> y. Returns the planted node names."""
    nodes, initializers = [], []
    current = chain(nodes, initializers, "x", "head", length)
    for tag in planted:
        current = overflow_block(nodes, initializers, current, tag, scale)
        current = chain(nodes, initializers, current, f"{tag}_tail", length)
    nodes.append(helper.make_node("Identity", [current], ["y"], name="output"))
    graph = helper.make_graph(nodes, "planted", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return [f"{tag}_square" for tag in planted]


def kept_names(keep_list_path):
    names = []
    for line in keep_list_path.read_text().splitlines():
        line = line.split("  #")[0].strip()
        if line and not line.startswith("#"):
            assert line.startswith("node:"), line
            names.append(line[len("node:"):])
    return names


def debug_precision(run_parity, model, *flags):
    return run_parity("debug", "precision", model, *flags, timeout=300)


def assert_passes_on_ref(run_parity, fp32, fixed, tmp_path):
    """The fixed model passes the same comparison against the float32 model on ref."""
    golden = tmp_path / "golden.json"
    result = run_parity("run", fp32, "--ref", "--save-outputs", golden, timeout=300)
    assert result.returncode == 0, result.describe()
    result = run_parity("run", fixed, "--ref", "--load-outputs", golden, *TOLERANCES, timeout=300)
    assert result.returncode == 0, result.describe()


@pytest.mark.parametrize("mode", ["bisect", "linear"])
@pytest.mark.parametrize("direction", ["forward", "reverse"])
def test_names_the_planted_node(run_parity, tmp_path, mode, direction):
    model = tmp_path / "planted.onnx"
    planted = planted_model(model)
    keep, fixed = tmp_path / "keep.txt", tmp_path / "fixed.onnx"
    result = debug_precision(run_parity, model, "--ref", "--mode", mode, "--direction", direction, *TOLERANCES,
                             "--save-keep-list", keep, "-o", fixed)
    assert result.returncode == 0, result.describe()
    assert kept_names(keep) == planted, result.describe()
    # Progress per step and the summary.
    steps = [line for line in result.lines("[I] ") if line.startswith("[I] Iteration ")]
    assert steps and re.search(r"keep none \| keeping 0/\d+ node\(s\) in float32 \| FAILED", steps[0]), steps
    assert "keep all" in steps[1] and "PASSED" in steps[1], steps
    assert "first_square (Mul)" in result.output and "By op type: Mul: 1" in result.output
    assert re.search(r"Error with these kept: max abs error", result.output), result.describe()
    # The keep list file works with convert, and gives the same model as -o.
    converted = tmp_path / "converted.onnx"
    result = run_parity("convert", model, "--fp-to-fp16", "--keep-fp32", f"@{keep}", "-o", converted, timeout=300)
    assert result.returncode == 0, result.describe()
    assert onnx.load(str(converted)).graph == onnx.load(str(fixed)).graph
    assert_passes_on_ref(run_parity, model, fixed, tmp_path)


def cancellation_model(path, length=12, head_length=None):
    """x -> chain -> offset (+1000) -> cancel (-1000) -> chain -> y. In bfloat16 (8 bits of mantissa)
    1000 + x keeps x only to the nearest multiple of 4: the subtraction cancels to 0 or 4. The tail chain
    halves an error every third node, so it stays short; `head_length` (default `length`) may be longer."""
    nodes, initializers = [], []
    current = chain(nodes, initializers, "x", "head", length if head_length is None else head_length)
    initializers.append(helper.make_tensor("thousand", TensorProto.FLOAT, [1], [1000.0]))
    nodes += [helper.make_node("Add", [current, "thousand"], ["offset_out"], name="offset"),
              helper.make_node("Sub", ["offset_out", "thousand"], ["cancel_out"], name="cancel")]
    current = chain(nodes, initializers, "cancel_out", "tail", length)
    nodes.append(helper.make_node("Identity", [current], ["y"], name="output"))
    graph = helper.make_graph(nodes, "cancellation", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


@pytest.mark.parametrize("direction", ["forward", "reverse"])
def test_bfloat16_cancellation(run_parity, tmp_path, direction):
    model = tmp_path / "cancellation.onnx"
    cancellation_model(model, head_length=84)  # 99 nodes
    keep, fixed = tmp_path / "keep.txt", tmp_path / "fixed.onnx"
    result = debug_precision(run_parity, model, "--ref", "--bf16", "--direction", direction, *TOLERANCES,
                             "--save-keep-list", keep, "-o", fixed)
    assert result.returncode == 0, result.describe()
    assert "Searching 99 node(s)" in result.output, result.describe()
    # The sum must stay float32 and so must the subtraction reading it (a float32 tensor read by a
    # bfloat16 node would be rounded on the way in).
    assert kept_names(keep) == ["offset", "cancel"], result.describe()
    assert "--fp-to-bf16" in keep.read_text()
    assert_passes_on_ref(run_parity, model, fixed, tmp_path)


def test_onnxrt_computes_float16_ops_in_float32(run_parity, tmp_path):
    """ONNX Runtime's CPU build has no float16 kernel for Mul: it computes it in float32 between
    Casts it inserts (and its optimizer drops Cast pairs), so the square that overflows on ref does
    not overflow there: on --onnxrt the float16 model passes and nothing needs keeping."""
    model = tmp_path / "planted.onnx"
    planted_model(model)
    result = debug_precision(run_parity, model, "--onnxrt", *TOLERANCES)
    assert result.returncode == 0, result.describe()
    assert "nothing to keep" in result.output


def test_runner_that_cannot_run_the_reduced_model(run_parity, tmp_path):
    """ONNX Runtime's CPU build has no bfloat16 arithmetic kernels: the model with nothing kept does not load,
    the one with every node kept passes. That is the answer after two checks, not a search for the nodes that
    make it load."""
    model = tmp_path / "cancellation.onnx"
    cancellation_model(model)
    report = tmp_path / "report.json"
    result = debug_precision(run_parity, model, "--onnxrt", "--bf16", *TOLERANCES, "--report", report)
    assert result.returncode == 1, result.describe()
    error = result.lines("[E] ")[0]
    assert "cannot run the bfloat16 model" in error and "cannot change this model's precision" in error, error
    assert len(result.lines("[I] Iteration ")) == 2
    assert json.loads(report.read_text())["outcome"] == "cannot_run_reduced"


def test_runner_that_cannot_run_is_an_error(run_parity, tmp_path):
    model = tmp_path / "planted.onnx"
    planted_model(model)
    result = debug_precision(run_parity, model, "--onnxrt", "--ort-library", tmp_path / "missing.so")
    assert_one_error(result, "with all", "kept in float32", "missing.so")


def test_two_planted_nodes_iterations_near_k_log2_n(run_parity, tmp_path):
    model = tmp_path / "planted2.onnx"
    planted = planted_model(model, planted=("first", "second"), length=30)  # 99 nodes
    keep, report = tmp_path / "keep.txt", tmp_path / "report.json"
    result = debug_precision(run_parity, model, "--ref", *TOLERANCES, "--save-keep-list", keep, "--report", report)
    assert result.returncode == 0, result.describe()
    assert kept_names(keep) == planted
    summary = json.loads(report.read_text())
    assert summary["outcome"] == "found" and summary["mechanism"] == "graph"
    assert [node["name"] for node in summary["kept"]] == planted
    # The speed cost on the runner under test (ref: float16 is emulated, so only its presence is checked).
    assert set(summary["latency_ms"]) == {"runs", "none_kept", "kept", "all_kept"}, summary["latency_ms"]
    assert "with the 2 node(s) found kept" in result.output
    searched = int(re.search(r"Searching (\d+) node\(s\)", result.output).group(1))
    # keep none, keep all, the boundary, then one bisection per further node and a final check.
    assert summary["iterations"] <= 2 + 3 * (int(np.ceil(np.log2(searched))) + 1), summary["iterations"]
    assert len(summary["steps"]) == summary["iterations"]


def test_no_narrow_keeps_the_whole_prefix(run_parity, tmp_path):
    model = tmp_path / "planted.onnx"
    planted_model(model)
    keep = tmp_path / "keep.txt"
    result = debug_precision(run_parity, model, "--ref", *TOLERANCES, "--no-narrow", "--save-keep-list", keep)
    assert result.returncode == 0, result.describe()
    names = kept_names(keep)
    assert names[-1] == "first_square" and len(names) > 1  # every node up to the planted one, in order
    assert names[0] == "head_0"


def test_max_iterations_stops_with_a_passing_superset(run_parity, tmp_path):
    model = tmp_path / "planted.onnx"
    planted_model(model)
    keep = tmp_path / "keep.txt"
    result = debug_precision(run_parity, model, "--ref", *TOLERANCES, "--max-iterations", "3",
                             "--save-keep-list", keep)
    assert result.returncode == 0, result.describe()
    assert "Stopped at --max-iterations 3" in result.output
    assert len(result.lines("[I] Iteration ")) == 3
    assert "first_square" in kept_names(keep)
    result = debug_precision(run_parity, model, "--ref", *TOLERANCES, "--max-iterations", "1")
    assert_one_error(result, "before any candidate passed")


def test_check_command(run_parity, parity_bin, tmp_path):
    model = tmp_path / "planted.onnx"
    planted = planted_model(model)
    artifact, keep = tmp_path / "candidate.onnx", tmp_path / "keep.txt"
    # The user's own check: the candidate's outputs must be finite (run --validate fails on Inf).
    check = f"{shlex.quote(str(parity_bin))} run {shlex.quote(str(artifact))} --ref --validate"
    result = debug_precision(run_parity, model, "--iter-artifact", artifact, "--save-keep-list", keep,
                             "--check", "sh", "-c", check)
    assert result.returncode == 0, result.describe()
    assert kept_names(keep) == planted
    assert "the check exited with status" in result.output
    assert "Latency" not in result.output  # no runner to time
    # --fail-regex: a command that always exits 0 but prints the word FAILED fails.
    result = debug_precision(run_parity, model, "--fail-regex", "FAIL", "--iter-artifact", artifact,
                             "--check", "echo", "FAILED")
    assert result.returncode == 1, result.describe()
    assert "fails even with all" in result.output and "--fail-regex" in result.output
    assert len(result.lines("[I] Iteration ")) == 2  # said after the first two checks


def test_check_that_always_passes_or_fails(run_parity, tmp_path):
    model = tmp_path / "planted.onnx"
    planted_model(model)
    artifact = tmp_path / "candidate.onnx"
    result = debug_precision(run_parity, model, "--iter-artifact", artifact, "--check", "true")
    assert result.returncode == 0, result.describe()
    assert "nothing to keep" in result.output and len(result.lines("[I] Iteration ")) == 1
    result = debug_precision(run_parity, model, "--iter-artifact", artifact, "--check", "sh", "-c", "exit 3")
    assert result.returncode == 1, result.describe()
    assert "fails even with all" in result.output and "status 3" in result.output
    assert len(result.lines("[I] Iteration ")) == 2  # said after keep none and keep all


def test_model_that_passes_in_float16(run_parity, tmp_path):
    model = tmp_path / "small.onnx"
    planted_model(model, scale=10.0)  # squares stay below 65504
    keep, fixed = tmp_path / "keep.txt", tmp_path / "fixed.onnx"
    result = debug_precision(run_parity, model, "--ref", *TOLERANCES, "--save-keep-list", keep, "-o", fixed)
    assert result.returncode == 0, result.describe()
    assert "passes with no node kept in float32" in result.output and "nothing to keep" in result.output
    assert kept_names(keep) == []
    assert_passes_on_ref(run_parity, model, fixed, tmp_path)


def test_golden_from_load_outputs(run_parity, tmp_path):
    model = tmp_path / "planted.onnx"
    planted = planted_model(model)
    golden, keep = tmp_path / "golden.json", tmp_path / "keep.txt"
    result = run_parity("run", model, "--ref", "--save-outputs", golden)
    assert result.returncode == 0, result.describe()
    result = debug_precision(run_parity, model, "--ref", "--load-outputs", golden, *TOLERANCES,
                             "--save-keep-list", keep)
    assert result.returncode == 0, result.describe()
    assert "loaded from" in result.output
    assert kept_names(keep) == planted


def test_bad_input(run_parity, tmp_path):
    model = tmp_path / "planted.onnx"
    planted_model(model)
    assert_one_error(debug_precision(run_parity, model), "exactly one of")
    assert_one_error(debug_precision(run_parity, model, "--ref", "--onnxrt"), "exactly one of", "got 2")
    assert_one_error(debug_precision(run_parity, model, "--ref", "--check", "true"), "not both")
    assert_one_error(debug_precision(run_parity, model, "--openvino", "--ov-precision", "f32"), "--ov-precision",
                     "leave it out")
    assert_one_error(debug_precision(run_parity, model, "--openvino", "-o", tmp_path / "out.onnx"), "-o", "segments")
    assert_one_error(debug_precision(run_parity, model, "--openvino", "--no-default-keep"), "--no-default-keep")
    assert_one_error(debug_precision(run_parity, model, "--openvino", "--keep-fp32", "no_such_node"), "no_such_node")
    assert_one_error(debug_precision(run_parity, model, "--ref", "--latency-runs", "-1"), "--latency-runs")
    assert_one_error(debug_precision(run_parity, model, "--fail-regex", "(", "--check", "true"), "--fail-regex")
    assert_one_error(debug_precision(run_parity, model, "--ref", "--keep-fp32", "no_such_node"), "no_such_node")
    result = debug_precision(run_parity, model, "--ref", "--mode", "sideways")
    assert result.returncode == 1 and "--mode" in result.lines("[E] ")[0], result.describe()
    already = tmp_path / "fp16.onnx"
    result = run_parity("convert", model, "--fp-to-fp16", "-o", already)
    assert result.returncode == 0, result.describe()
    assert_one_error(debug_precision(run_parity, already, "--ref"), "already a reduced-precision model", "float16")
    assert_one_error(debug_precision(run_parity, tmp_path / "missing.onnx", "--ref"), "missing.onnx")


# --- OpenVINO: the split mechanism ---------------------------------------------------------------

def identity_chain(nodes, initializers, source, prefix, length):
    """`length` nodes computing the identity for inputs above -0.5 (Add 0.5, Mul 2, Relu, Mul 0.5, Sub 0.5,
    in turn): they neither amplify nor damp an error made before them. Returns the last tensor."""
    current = source
    steps = (("Add", 0.5), ("Mul", 2.0), ("Relu", None), ("Mul", 0.5), ("Sub", 0.5))
    for i in range(length):
        name = f"{prefix}_{i}"
        kind, value = steps[i % len(steps)]
        if value is None:
            nodes.append(helper.make_node(kind, [current], [name], name=name))
        else:
            initializers.append(helper.make_tensor(f"{name}_c", TensorProto.FLOAT, [1], [value]))
            nodes.append(helper.make_node(kind, [current, f"{name}_c"], [name], name=name))
        current = name
    return current


def cancelling_matmul(nodes, initializers, source, tag, width=16):
    """Concat(h, h) -> MatMul with weights [[1000.5 I], [-1000 I]]: 1000.5 h - 1000 h = 0.5 h in float32, but
    bfloat16 rounds the weight 1000.5 to 1000 (its spacing there is 4), so the product cancels to 0. The
    MatMul's weights are what OpenVINO's bf16 mode rounds: only the MatMul must run at f32."""
    weights = np.concatenate([np.eye(width) * 1000.5, np.eye(width) * -1000.0]).astype(np.float32)
    initializers.append(onnx.numpy_helper.from_array(weights, f"{tag}_weights"))
    nodes += [helper.make_node("Concat", [source, source], [f"{tag}_pair"], name=f"{tag}_pair", axis=-1),
              helper.make_node("MatMul", [f"{tag}_pair", f"{tag}_weights"], [f"{tag}_out"], name=f"{tag}_mix")]
    return f"{tag}_out"


def openvino_planted_model(path, planted=("first", "second"), length=30):
    """x [1,16] -> identity chain -> (cancelling MatMul -> identity chain) per tag -> y (95 nodes for two tags).
    Returns the planted MatMuls' names."""
    nodes, initializers = [], []
    current = identity_chain(nodes, initializers, "x", "head", length)
    for tag in planted:
        current = cancelling_matmul(nodes, initializers, current, tag)
        current = identity_chain(nodes, initializers, current, f"{tag}_tail", length)
    nodes.append(helper.make_node("Identity", [current], ["y"], name="output"))
    graph = helper.make_graph(nodes, "planted", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return [f"{tag}_mix" for tag in planted]


def test_openvino_bf16_rounds_matmul_weights_but_not_elementwise_chains(run_parity, tmp_path):
    """What the split mechanism relies on and docs/debug-precision.md records: OpenVINO's bf16 hint fails the
    cancelling MatMul, passes at f32, and leaves the fp16/bf16 planted element-wise models of the graph tests
    (a square above 65504, 1000 + x - 1000) within 1e-5: it computes element-wise chains in f32."""
    model = tmp_path / "matmul.onnx"
    openvino_planted_model(model, planted=("first",))
    result = run_parity("run", model, "--ref", "--openvino", "--ov-precision", "bf16", *TOLERANCES)
    assert result.returncode == 1 and "FAILED | Mismatched outputs: ['y']" in result.output, result.describe()
    result = run_parity("run", model, "--ref", "--openvino", "--ov-precision", "f32", *TOLERANCES)
    assert result.returncode == 0, result.describe()
    square, cancel = tmp_path / "square.onnx", tmp_path / "cancel.onnx"
    planted_model(square)
    cancellation_model(cancel)
    for elementwise in (square, cancel):
        result = run_parity("run", elementwise, "--ref", "--openvino", "--ov-precision", "bf16", "--atol", "1e-5",
                            "--rtol", "1e-5")
        assert result.returncode == 0, result.describe()


@pytest.mark.parametrize("direction", ["forward", "reverse"])
def test_openvino_bf16_split_names_the_planted_matmuls(run_parity, tmp_path, direction):
    model = tmp_path / "planted.onnx"
    planted = openvino_planted_model(model)
    keep, report = tmp_path / "keep.txt", tmp_path / "report.json"
    result = debug_precision(run_parity, model, "--openvino", "--bf16", "--direction", direction, *TOLERANCES,
                             "--save-keep-list", keep, "--report", report)
    assert result.returncode == 0, result.describe()
    assert kept_names(keep) == planted, result.describe()
    assert "OpenVINO must run at f32 while the rest runs at bf16" in result.output
    summary = json.loads(report.read_text())
    assert summary["mechanism"] == "split" and summary["outcome"] == "found"
    assert [node["name"] for node in summary["kept"]] == planted
    # Before: the cancellation gives 0 instead of 0.5 h; after: the f32 subgraphs are exact.
    assert re.search(r"max abs error 0\.[1-9]", summary["error_before"]), summary["error_before"]
    assert summary["steps"][-1]["passed"] and summary["steps"][0]["passed"] is False
    # Five subgraphs: bf16 | first_mix at f32 | bf16 | second_mix at f32 | bf16, tensors handed across.
    segments = summary["segments"]
    assert [segment["precision"] for segment in segments] == ["bf16", "f32", "bf16", "f32", "bf16"], segments
    assert segments[1] == {"precision": "f32", "first_node": "first_mix", "last_node": "first_mix", "node_count": 1,
                           "inputs": ["first_pair"], "outputs": ["first_out"]}
    assert "cut 1 hands across: first_pair" in result.output
    searched = int(re.search(r"Searching (\d+) node\(s\)", result.output).group(1))
    assert searched == 95
    assert summary["iterations"] <= 2 + 3 * (int(np.ceil(np.log2(searched))) + 1), summary["iterations"]
    # The speed cost, on OpenVINO: the model at bf16, with the two MatMuls cut out to f32, and all at f32.
    latency = summary["latency_ms"]
    assert latency["runs"] == 5 and all(latency[key] > 0 for key in ("none_kept", "kept", "all_kept")), latency
    assert re.search(r"Latency \(median of 5 run\(s\).*ms with no node kept, .* ms with the 2 node\(s\) found kept",
                     result.output), result.describe()


def test_openvino_bf16_split_linear_mode(run_parity, tmp_path):
    """Linear narrowing drops nodes one at a time, which cuts the model at many places; some subgraphs then
    start after identity-like nodes OpenVINO removes (x * 0.5 * 2), naming their input after a later tensor:
    inputs are handed across by position."""
    model = tmp_path / "planted.onnx"
    planted = openvino_planted_model(model, planted=("first",))
    keep = tmp_path / "keep.txt"
    result = debug_precision(run_parity, model, "--openvino", "--bf16", "--mode", "linear", "--direction", "reverse",
                             *TOLERANCES, "--save-keep-list", keep, "--latency-runs", "0")
    assert result.returncode == 0, result.describe()
    assert kept_names(keep) == planted, result.describe()
    assert "did not run" not in result.output, result.describe()


def test_openvino_keep_fp32_and_bad_input(run_parity, tmp_path):
    model = tmp_path / "planted.onnx"
    openvino_planted_model(model, planted=("first",))
    # A node named in --keep-fp32 is always on the f32 side: with the planted MatMul there, nothing else is needed.
    result = debug_precision(run_parity, model, "--openvino", "--bf16", *TOLERANCES, "--keep-fp32", "first_mix",
                             "--latency-runs", "0")
    assert result.returncode == 0, result.describe()
    assert "nothing to keep" in result.output and "Latency" not in result.output
    # A runner that cannot change precision: OpenVINO asked for f16 on a CPU without native float16 infers
    # in another precision, which the search says before searching.
    flags = open("/proc/cpuinfo").read()
    if "amx_fp16" in flags or "avx512_fp16" in flags:
        pytest.skip("this CPU infers f16 in OpenVINO")
    assert_one_error(debug_precision(run_parity, model, "--openvino", "--fp16"), "cannot run", "in f16 on this CPU")


def pow_and_exp_model(path, length=30):
    """The issue's planted float16 overflows in a 100-node model: a Pow squaring values of 300-600 (above
    65504) before a Sqrt brings them back, and a log-sum-exp whose Exp (of 12-13) and ReduceSum exceed 65504
    before the Log brings them back. Returns (pow_block, exp_block): the nodes of each."""
    nodes, initializers = [], []
    current = chain(nodes, initializers, "x", "head", length)
    for name, value in (("one", [1.0]), ("three_hundred", [300.0]), ("two", [2.0]), ("twelve", [12.0])):
        initializers.append(helper.make_tensor(name, TensorProto.FLOAT, [1], value))
    initializers.append(helper.make_tensor("last_axis", TensorProto.INT64, [1], [-1]))
    nodes += [
        helper.make_node("Add", [current, "one"], ["shifted"], name="shift"),
        helper.make_node("Mul", ["shifted", "three_hundred"], ["scaled"], name="scale"),
        helper.make_node("Pow", ["scaled", "two"], ["powered"], name="power"),
        helper.make_node("Sqrt", ["powered"], ["rooted"], name="root"),
    ]
    current = chain(nodes, initializers, "rooted", "middle", length)
    nodes += [
        helper.make_node("Add", [current, "twelve"], ["exponent"], name="exponent_shift"),
        helper.make_node("Exp", ["exponent"], ["exponential"], name="exponential"),
        helper.make_node("ReduceSum", ["exponential", "last_axis"], ["summed"], name="sum", keepdims=1),
        helper.make_node("Log", ["summed"], ["log_sum"], name="log"),
        helper.make_node("Add", [current, "log_sum"], ["combined"], name="combine"),
    ]
    current = chain(nodes, initializers, "combined", "tail", length)
    nodes.append(helper.make_node("Identity", [current], ["y"], name="output"))
    graph = helper.make_graph(nodes, "pow_exp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return len(nodes)


@pytest.mark.parametrize("direction", ["forward", "reverse"])
def test_pow_before_sqrt_and_exp_before_reduction(run_parity, tmp_path, direction):
    """k = 3 planted nodes produce values above 65504 (the Pow, the Exp, the ReduceSum). Without the default
    list the search must keep them and the nodes reading their results (a float32 result read by a float16
    node is cast to float16 on the way in): Sqrt and Log, 5 <= 2k nodes. With the default list (which keeps
    Pow, Exp and ReduceSum) only the readers remain."""
    model = tmp_path / "pow_exp.onnx"
    assert pow_and_exp_model(model) == 100
    keep, fixed = tmp_path / "keep.txt", tmp_path / "fixed.onnx"
    result = debug_precision(run_parity, model, "--ref", "--no-default-keep", "--direction", direction, *TOLERANCES,
                             "--save-keep-list", keep, "-o", fixed)
    assert result.returncode == 0, result.describe()
    assert kept_names(keep) == ["power", "root", "exponential", "sum", "log"], result.describe()
    steps = len(result.lines("[I] Iteration "))
    assert steps <= 2 + 5 * (int(np.ceil(np.log2(100))) + 1), steps  # k = 5 kept: 40 checks here
    golden = tmp_path / "golden.json"
    assert run_parity("run", model, "--ref", "--save-outputs", golden).returncode == 0
    result = run_parity("run", fixed, "--ref", "--load-outputs", golden, *TOLERANCES)
    assert result.returncode == 0, result.describe()
    result = debug_precision(run_parity, model, "--ref", "--direction", direction, *TOLERANCES,
                             "--save-keep-list", keep)
    assert result.returncode == 0, result.describe()
    assert kept_names(keep) == ["root", "log"], result.describe()
