"""`parity debug reduce`: a planted bad node in a 1000-node model is found with a --check script and
in-process (ref against ONNX Runtime, whose Tanh differs from ref's in the last bits), in bisect
and linear modes, with two inputs and several samples; a model whose branches meet only at the end
reduces as Polygraphy's does by default (hundreds of nodes), to the planted node with
--reduce-neighbourhood; a saved replay resumes to the same result; Polygraphy's check flags and
artifact sorting; bad input is one clear error."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from graph_tools_util import assert_one_error
from reduce_models import PLANTED, branches_model, chain_model, peak_image, peak_model
from run_util import peak_rss_bytes

SHAPES = ["--input-shapes", "x:[2,16]", "y:[2,16]"]
IN_PROCESS = ["--ref", "--onnxrt", "--atol", "0", "--rtol", "0"]


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    path = tmp_path_factory.mktemp("chain") / "chain.onnx"
    onnx.save(chain_model(), path)
    return path


def check_script(folder: Path, exit_code=1, message="found the planted node") -> Path:
    """A check that fails (exit_code) on models containing the planted node's name."""
    script = folder / "check.sh"
    script.write_text(f'#!/bin/sh\nif grep -qa {PLANTED} "$1"; then echo "{message}"; exit {exit_code}; fi\nexit 0\n')
    script.chmod(0o755)
    return script


def reduce(run_parity, model, out, *flags, cwd, timeout=300):
    result = run_parity("debug", "reduce", model, "-o", out, *flags, cwd=cwd, timeout=timeout)
    assert result.returncode == 0, result.describe()
    assert not result.crash_markers(), result.describe()
    reduced = onnx.load(str(out))
    onnx.checker.check_model(reduced)
    return result, reduced


def node_names(model):
    return [node.name for node in model.graph.node]


@pytest.mark.parametrize("mode", ["bisect", "linear"])
def test_check_script_finds_planted_node(run_parity, chain, tmp_path, mode):
    script = check_script(tmp_path)
    result, reduced = reduce(run_parity, chain, tmp_path / "r.onnx", "--mode", mode, *SHAPES, "--iterations", "3",
                             "--check", script, "polygraphy_debug.onnx", cwd=tmp_path)
    assert PLANTED in node_names(reduced) and len(reduced.graph.node) <= 3, node_names(reduced)
    # It still fails the check; the candidate file is removed at the end.
    assert subprocess.run([script, tmp_path / "r.onnx"]).returncode == 1
    assert not (tmp_path / "polygraphy_debug.onnx").exists()
    steps = [line for line in result.stdout.splitlines() if "| Step " in line or line.startswith("[I] Step ")]
    assert len(steps) > 5 and all("node(s)" in line for line in steps), result.stdout
    assert f"Failing node: node '{PLANTED}' (Tanh)" in result.stdout
    assert "Kept 1 of 1001 node(s)" in result.stdout


@pytest.mark.parametrize("mode", ["bisect", "linear"])
def test_in_process_comparison_finds_planted_node(run_parity, chain, tmp_path, mode):
    result, reduced = reduce(run_parity, chain, tmp_path / "r.onnx", "--mode", mode, *SHAPES, "--iterations", "3",
                             *IN_PROCESS, "--min-good", tmp_path / "good.onnx", cwd=tmp_path)
    assert PLANTED in node_names(reduced) and len(reduced.graph.node) <= 3, node_names(reduced)
    # Its input is an intermediate tensor of the whole model, with the shape of every sample.
    frozen = [i for i in reduced.graph.input if i.name not in ("x", "y")]
    assert frozen and [d.dim_value for d in frozen[0].type.tensor_type.shape.dim] == [2, 16]
    # Still fails between the runners; the minimal good model passes.
    failing = run_parity("run", tmp_path / "r.onnx", *IN_PROCESS, "--iterations", "3")
    assert failing.returncode == 1, failing.describe()
    good = onnx.load(str(tmp_path / "good.onnx"))
    assert PLANTED not in node_names(good)
    passing = run_parity("run", tmp_path / "good.onnx", *IN_PROCESS, *SHAPES)
    assert passing.returncode == 0, passing.describe()


def test_branches_meeting_late_reduce_to_the_planted_node(run_parity, tmp_path):
    """--reduce-neighbourhood keeps the planted node alone; by default Parity keeps what Polygraphy's
    bisection keeps (hundreds of nodes here) and says that the flag may reduce further."""
    model = tmp_path / "branches.onnx"
    onnx.save(branches_model(), model)
    script = check_script(tmp_path)
    check = ["--check", script, "polygraphy_debug.onnx"]
    _, reduced = reduce(run_parity, model, tmp_path / "r.onnx", "--reduce-neighbourhood", *check, cwd=tmp_path)
    assert node_names(reduced) == [PLANTED]
    _, reduced = reduce(run_parity, model, tmp_path / "r2.onnx", "--reduce-neighbourhood", *IN_PROCESS, cwd=tmp_path)
    assert PLANTED in node_names(reduced) and len(reduced.graph.node) <= 2
    # Polygraphy's bisection over the topological order keeps hundreds of nodes here, and so does the default.
    polygraphy = Path(sys.executable).parent / "polygraphy"
    completed = subprocess.run([polygraphy, "debug", "reduce", model, "-o", tmp_path / "p.onnx", *check],
                               cwd=tmp_path, capture_output=True, timeout=300)
    assert completed.returncode == 0, completed.stdout.decode() + completed.stderr.decode()
    theirs = onnx.load(str(tmp_path / "p.onnx"))
    assert len(theirs.graph.node) > 100
    result, ours = reduce(run_parity, model, tmp_path / "d.onnx", *check, cwd=tmp_path)
    assert node_names(ours) == node_names(theirs)
    assert [i.name for i in ours.graph.input] == [i.name for i in theirs.graph.input]
    assert [o.name for o in ours.graph.output] == [o.name for o in theirs.graph.output]
    assert "could potentially be reduced further" in result.output and "--reduce-neighbourhood" in result.output


def test_replay_resumes_to_the_same_result(run_parity, chain, tmp_path):
    script = check_script(tmp_path)
    check = ["--check", script, "polygraphy_debug.onnx"]
    first, _ = reduce(run_parity, chain, tmp_path / "full.onnx", *SHAPES, "--save-debug-replay",
                      tmp_path / "replay.json", *check, cwd=tmp_path)
    replay = json.loads((tmp_path / "replay.json").read_text())
    assert replay["model_nodes"] == 1001 and len(replay["steps"]) > 10
    # An interrupted reduction: only the first 8 outcomes were saved.
    replay["steps"] = replay["steps"][:8]
    (tmp_path / "partial.json").write_text(json.dumps(replay))
    resumed, _ = reduce(run_parity, chain, tmp_path / "resumed.onnx", *SHAPES, "--load-debug-replay",
                        tmp_path / "partial.json", *check, cwd=tmp_path)
    assert (tmp_path / "full.onnx").read_bytes() == (tmp_path / "resumed.onnx").read_bytes()
    assert resumed.stdout.count("(from the replay)") == 8, resumed.stdout
    assert "8 from the replay" in resumed.stdout
    # Polygraphy's line for each replayed check, and its default replay name (Parity's format).
    assert resumed.stdout.count("Loading iteration information from debug replay: success=") == 8, resumed.stdout
    assert "Loading iteration information from debug replay: success=False" in resumed.stdout
    default = json.loads((tmp_path / "polygraphy_debug_replay.json").read_text())
    assert default["tool"] == "debug reduce" and len(default["steps"]) == len(json.loads(
        (tmp_path / "replay.json").read_text())["steps"])
    # A replay written by Polygraphy is refused, saying so.
    (tmp_path / "theirs.json").write_text(json.dumps({"_N0_outputs": [False, [3]], "_N1_outputs": [True, [2]]}))
    assert_one_error(run_parity("debug", "reduce", chain, "-o", tmp_path / "x.onnx", *SHAPES, "--load-debug-replay",
                                tmp_path / "theirs.json", *check, cwd=tmp_path),
                     "theirs.json: a debug replay written by Polygraphy")
    # A replay of another model is refused.
    other = tmp_path / "branches.onnx"
    onnx.save(branches_model(), other)
    bad = run_parity("debug", "reduce", other, "-o", tmp_path / "x.onnx", "--load-debug-replay",
                     tmp_path / "replay.json", *check, cwd=tmp_path)
    assert_one_error(bad, "replay.json", "1001 nodes")


def test_fail_code_regex_and_ignore(run_parity, chain, tmp_path):
    script = check_script(tmp_path, exit_code=3, message="PLANTED FOUND")
    check = ["--check", script, "polygraphy_debug.onnx"]
    _, reduced = reduce(run_parity, chain, tmp_path / "a.onnx", *SHAPES, "--fail-code", "3", *check, cwd=tmp_path)
    assert PLANTED in node_names(reduced)
    # An ignored code passes, whatever the output says.
    result, reduced = reduce(run_parity, chain, tmp_path / "c.onnx", *SHAPES, "--ignore-fail-code", "3",
                             "--fail-regex", "PLANTED", *check, cwd=tmp_path)
    assert "The check passes on the whole model (1001 nodes)" in result.stdout + result.stderr, result.describe()
    assert len(reduced.graph.node) == 1001
    # A regex alone decides, whatever the exit code.
    script_zero = check_script(tmp_path, exit_code=0, message="PLANTED FOUND")
    _, reduced = reduce(run_parity, chain, tmp_path / "d.onnx", *SHAPES, "--fail-regex", "PLANTED F.UND",
                        "--check", script_zero, "polygraphy_debug.onnx", cwd=tmp_path)
    assert PLANTED in node_names(reduced)


def test_artifacts_sorted_and_intermediate_kept(run_parity, chain, tmp_path):
    script = check_script(tmp_path)
    result, _ = reduce(run_parity, chain, tmp_path / "r.onnx", *SHAPES, "--no-reduce-inputs", "--artifacts",
                       "polygraphy_debug.onnx", "--artifacts-dir", "sorted", "--check", script, "polygraphy_debug.onnx",
                       cwd=tmp_path)
    good = sorted(p.name for p in (tmp_path / "sorted" / "good").iterdir())
    bad = sorted(p.name for p in (tmp_path / "sorted" / "bad").iterdir())
    assert "polygraphy_debug_step1.onnx" in bad and good and all(n.startswith("polygraphy_debug_step") for n in good + bad)
    assert "inputs (" not in result.stdout
    reduce(run_parity, chain, tmp_path / "r2.onnx", *SHAPES, "--no-remove-intermediate", "--iter-artifact",
           "cand.onnx", "--check", script, "cand.onnx", cwd=tmp_path)
    assert (tmp_path / "cand.onnx").exists()


def test_no_reduce_outputs_keeps_the_outputs(run_parity, chain, tmp_path):
    script = check_script(tmp_path)
    result, reduced = reduce(run_parity, chain, tmp_path / "r.onnx", *SHAPES, "--no-reduce-outputs", "--check",
                             script, "polygraphy_debug.onnx", cwd=tmp_path)
    assert [o.name for o in reduced.graph.output] == ["out"]
    assert "outputs (" not in result.stdout and PLANTED in node_names(reduced)


def test_passing_whole_model_goes_on_as_polygraphy(run_parity, chain, tmp_path):
    """A check that never fails: Polygraphy searches anyway and saves the whole model; Parity does the same,
    with warnings saying that the whole model passes, and writes no --min-good (no failure to be close to)."""
    passing = tmp_path / "pass.sh"
    passing.write_text("#!/bin/sh\nexit 0\n")
    passing.chmod(0o755)
    result, reduced = reduce(run_parity, chain, tmp_path / "r.onnx", *SHAPES, "--min-good", tmp_path / "good.onnx",
                             "--check", passing, "polygraphy_debug.onnx", cwd=tmp_path)
    text = result.stdout + result.stderr
    assert "The check passes on the whole model (1001 nodes): there is no failure to reduce" in text, text
    assert "the reduced model is the whole model (1001 node(s)), which PASSES the check" in text, text
    assert "nothing is saved to" in text and not (tmp_path / "good.onnx").exists(), text
    assert len(reduced.graph.node) == 1001 and [o.name for o in reduced.graph.output] == ["out"]
    assert "Step 2 |" in text  # the search went on after the whole model


def test_bad_input(run_parity, chain, tmp_path):
    passing = tmp_path / "pass.sh"
    passing.write_text("#!/bin/sh\nexit 0\n")
    passing.chmod(0o755)
    run = lambda *flags: run_parity("debug", "reduce", chain, *flags, cwd=tmp_path)
    assert_one_error(run("-o", "r.onnx", *SHAPES, "--require-failing-model", "--check", passing,
                         "polygraphy_debug.onnx"),
                     "the check passes on the whole model (1001 nodes): there is no failure to reduce")
    assert not (tmp_path / "r.onnx").exists()
    assert_one_error(run("-o", "r.onnx", "--check", "no-such-check-command", "x"),
                     "'no-such-check-command' was not found")
    assert_one_error(run("-o", "r.onnx", "--check", "./missing.sh"), "'./missing.sh' was not found")
    assert_one_error(run("-o", "r.onnx"), "no check")
    assert_one_error(run("--ref", "--onnxrt"), "--output", "--min-good")
    assert_one_error(run("-o", "r.onnx", "--ref", "--check", passing), "either --check or runner flags")
    assert_one_error(run("-o", "r.onnx", "--ref", "--onnxrt", "--typo"), "unexpected argument '--typo'")
    assert_one_error(run("-o", "r.onnx", "--check"), "no command given")
    assert not (tmp_path / "r.onnx").exists()


def test_min_good_never_overwrites_a_model_that_is_not_a_subgraph(run_parity, chain, tmp_path):
    """--min-good is an output path (as in Polygraphy): an existing file there that is not a subgraph
    of the input model is refused before any check runs; an earlier run's result is overwritten."""
    script = check_script(tmp_path)
    check = ["--check", script, "polygraphy_debug.onnx"]
    good = tmp_path / "good.onnx"
    onnx.save(branches_model(branches=3), good)
    unrelated = good.read_bytes()
    result = run_parity("debug", "reduce", chain, "-o", "r.onnx", "--min-good", good, *SHAPES, *check, cwd=tmp_path)
    assert_one_error(result, str(good), str(chain), "not a subgraph", "b0_n0")
    assert "Step 1" not in result.stdout, result.stdout
    assert good.read_bytes() == unrelated and not (tmp_path / "r.onnx").exists()
    good.write_text("not a model")
    assert_one_error(run_parity("debug", "reduce", chain, "-o", "r.onnx", "--min-good", good, *SHAPES, *check,
                                cwd=tmp_path), str(good), "not an ONNX model")
    # A subgraph of the input (here an earlier run's --min-good) is overwritten.
    good.unlink()
    reduce(run_parity, chain, tmp_path / "r.onnx", "--min-good", good, *SHAPES, *check, cwd=tmp_path)
    first = onnx.load(str(good))
    assert first.graph.node and PLANTED not in node_names(first)
    os.utime(good, (0, 0))
    reduce(run_parity, chain, tmp_path / "r.onnx", "--min-good", good, *SHAPES, *check, cwd=tmp_path)
    assert good.stat().st_mtime > 0 and node_names(onnx.load(str(good))) == node_names(first)


def test_frozen_inputs_take_the_whole_models_values(run_parity, tmp_path):
    """Sqrt(-|t| - 0.25) is NaN on the whole model's values: in-process, the Sqrt alone still fails
    (its input fed from the real run); a subprocess check sees random inputs, so needs the Sub."""
    model = tmp_path / "nan.onnx"
    onnx.save(chain_model(planted_nan=True), model)
    _, reduced = reduce(run_parity, model, tmp_path / "r.onnx", *SHAPES, "--iterations", "2", "--onnxrt",
                        "--validate", cwd=tmp_path)
    assert node_names(reduced) == [PLANTED]


def test_samples_of_different_shapes_leave_the_dim_dynamic(run_parity, chain, tmp_path):
    import numpy as np
    from polygraphy.json import save_json

    rng = np.random.default_rng(0)
    samples = [{name: rng.standard_normal([n, 16]).astype(np.float32) for name in ("x", "y")} for n in (2, 3)]
    save_json(samples, str(tmp_path / "inputs.json"))
    _, reduced = reduce(run_parity, chain, tmp_path / "r.onnx", "--load-inputs", tmp_path / "inputs.json",
                        *IN_PROCESS, cwd=tmp_path)
    assert PLANTED in node_names(reduced)
    frozen = [i for i in reduced.graph.input if i.name not in ("x", "y")]
    dims = frozen[0].type.tensor_type.shape.dim
    assert not dims[0].HasField("dim_value") and dims[1].dim_value == 16


def test_model_input_shapes_fix_the_inputs_before_reducing(run_parity, chain, tmp_path):
    """--model-input-shapes sets the model's dynamic batch dim: the data loader makes [3, 16] inputs
    from it, and the frozen input of the reduced model has that shape."""
    _, reduced = reduce(run_parity, chain, tmp_path / "r.onnx", "--model-input-shapes", "x:[3,16]", "y:[3,16]",
                        *IN_PROCESS, cwd=tmp_path)
    assert PLANTED in node_names(reduced)
    frozen = [i for i in reduced.graph.input if i.name not in ("x", "y")]
    assert [d.dim_value for d in frozen[0].type.tensor_type.shape.dim] == [3, 16]


def peak_reduction(run_parity, tmp_path, symmetrize):
    from polygraphy.json import save_json

    model = tmp_path / "peak.onnx"
    onnx.save(peak_model(symmetrize=symmetrize), model)
    save_json([{"image": peak_image()}], str(tmp_path / "image.json"))
    flags = ["--ref", "--onnxrt", "--atol", "1e-4", "--load-inputs", tmp_path / "image.json"]
    whole = run_parity("run", model, *flags)
    assert whole.returncode == 1, whole.describe()  # the premise: the outputs differ
    result, reduced = reduce(run_parity, model, tmp_path / "r.onnx", *flags, cwd=tmp_path)
    assert "Failing node: node 'peak_equal' (Equal)" in result.stdout
    # The reduced model still fails between the runners, fed the whole model's values.
    assert run_parity("run", tmp_path / "r.onnx", *flags).returncode == 1
    return result, node_names(reduced)


def test_peak_detector_isolates_the_discontinuity(run_parity, tmp_path):
    """Equal(heat, MaxPool(heat)) where heat_conv's input is exactly mirror-symmetric: ref and ONNX
    Runtime break the exact ties between the middle columns of heat differently (last-bit
    accumulation in heat_conv), the convolutions agree within 1e-4. The reduced model is the
    discontinuous op and its producers: the Equal, the MaxPool and the convolution feeding both."""
    _, kept = peak_reduction(run_parity, tmp_path, symmetrize=True)
    assert kept == ["heat_conv", "pool", "peak_equal"], kept


def test_peak_detector_keeps_the_convolution_that_breaks_the_ties(run_parity, tmp_path):
    """Without the symmetrizing Add, each convolution's last bits already break the mirror symmetry
    of its output, on each runner differently. Fed ref's values of heat_conv's input, both runners
    see the same (no longer exactly tied) columns and agree, so the candidates without the
    convolution before it pass (the reduction's step lines show it): that convolution and its Relu
    are needed, and the reduction keeps them and nothing earlier."""
    result, kept = peak_reduction(run_parity, tmp_path, symmetrize=False)
    assert {"peak_equal", "pool", "heat_conv"} <= set(kept) and len(kept) <= 5, kept
    assert "conv0" not in kept and "to_float" not in kept
    if len(kept) > 3:  # the candidate of the three nodes alone passed
        assert re.search(r"\| 3 node\(s\), 1 output\(s\) \| pass", result.stdout), result.stdout


def dims(value):
    return [d.dim_value or d.dim_param for d in value.type.tensor_type.shape.dim]


def test_force_fallback_shape_inference(run_parity, tmp_path):
    """--force-fallback-shape-inference: the shapes of one run on the data loader's input replace the model's
    (dynamic dims become the data's); refused with --no-shape-inference."""
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Identity", ["X"], ["Y"], name="copy")], "g",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 2, "h", "w"])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 2, "h", "w"])])
    model = tmp_path / "dynamic.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    data = ["--input-shapes", "X:[1,2,3,4]", "--check", "false"]
    _, reduced = reduce(run_parity, model, tmp_path / "plain.onnx", *data, cwd=tmp_path)
    assert dims(reduced.graph.input[0]) == dims(reduced.graph.output[0]) == [1, 2, "h", "w"]
    result, reduced = reduce(run_parity, model, tmp_path / "fallback.onnx", "--force-fallback-shape-inference", *data,
                             cwd=tmp_path)
    assert dims(reduced.graph.input[0]) == dims(reduced.graph.output[0]) == [1, 2, 3, 4]
    assert "Freezing shapes in the model according to values determined by fallback shape inference" in result.stdout
    # --model-input-shapes first, then the run on those shapes.
    _, reduced = reduce(run_parity, model, tmp_path / "model_shapes.onnx", "--force-fallback-shape-inference",
                        "--model-input-shapes", "X:[1,2,5,5]", "--check", "false", cwd=tmp_path)
    assert dims(reduced.graph.input[0]) == dims(reduced.graph.output[0]) == [1, 2, 5, 5]
    both = run_parity("debug", "reduce", model, "-o", tmp_path / "x.onnx", "--no-shape-inference",
                      "--force-fallback-shape-inference", "--check", "false", cwd=tmp_path)
    assert both.returncode == 1 and "--no-shape-inference excludes --force-fallback-shape-inference" in both.output
    assert not (tmp_path / "x.onnx").exists()


def reducable_model(planted_first=False):
    """Polygraphy's reducable.onnx, with the planted node on the second branch (or the first): x and y each
    through an Identity, their Add, two Identity outputs."""
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Identity", ["x"], ["x1"], name=PLANTED if planted_first else "first"),
             helper.make_node("Identity", ["y"], ["y1"], name="second" if planted_first else PLANTED),
             helper.make_node("Add", ["x1", "y1"], ["sum"], name="add"),
             helper.make_node("Identity", ["sum"], ["out0"], name="copy0"),
             helper.make_node("Identity", ["sum"], ["out1"], name="copy1")]
    value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [1])
    graph = helper.make_graph(nodes, "g", [value("x"), value("y")], [value("out0"), value("out1")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_check_command_candidates_freeze_cut_off_branches(run_parity, tmp_path):
    """With --check, as in Polygraphy, a tensor of a cut-off branch is frozen into an initializer holding the
    data loader's value (the check command feeds only the marked inputs) and the nodes it alone feeds are folded
    into initializers too, with Polygraphy's warning when
    that data is reduce's own random data; in-process, it stays a graph input fed from every sample."""
    import numpy as np
    from polygraphy.json import save_json

    model = tmp_path / "reducable.onnx"
    onnx.save(reducable_model(), model)
    check = ["--no-reduce-outputs", "--mode=linear", "--check", check_script(tmp_path), "polygraphy_debug.onnx"]
    result, reduced = reduce(run_parity, model, tmp_path / "r.onnx", *check, cwd=tmp_path)
    assert node_names(reduced) == [PLANTED, "add", "copy0", "copy1"]
    assert [i.name for i in reduced.graph.input] == ["y"] and [t.name for t in reduced.graph.initializer] == ["x1"]
    text = result.stdout + result.stderr
    # x is frozen (y marked as the input), then the Identity reading it folded away, as Polygraphy does.
    assert "Freezing tensor: x to eliminate branches." in text
    assert text.count("Please ensure that you have provided a data loader argument directly") == 1, text
    # Loaded inputs: no warning, and the frozen value is the loaded x (through the Identity).
    save_json([{"x": np.array([3.5], np.float32), "y": np.array([1.0], np.float32)}], str(tmp_path / "in.json"))
    result, reduced = reduce(run_parity, model, tmp_path / "r2.onnx", "--load-inputs", tmp_path / "in.json", *check,
                             cwd=tmp_path)
    assert "Please ensure that you have provided" not in result.stdout + result.stderr
    assert onnx.numpy_helper.to_array(reduced.graph.initializer[0]).tolist() == [3.5]


def test_default_bisection_is_polygraphys_and_the_neighbourhood_reduces_further(run_parity, tmp_path):
    """The first node failing: Polygraphy's bisection never marks its outputs alone and keeps the Add and the
    other branch (3 nodes, the count Polygraphy's test asserts), with its warning and the hint; linear mode
    and --reduce-neighbourhood keep the failing node alone."""
    model = tmp_path / "reducable.onnx"
    onnx.save(reducable_model(planted_first=True), model)
    check = ["--check", check_script(tmp_path), "polygraphy_debug.onnx"]
    result, reduced = reduce(run_parity, model, tmp_path / "r.onnx", *check, cwd=tmp_path)
    assert node_names(reduced) == [PLANTED, "second", "add"] and [o.name for o in reduced.graph.output] == ["sum"]
    assert "could potentially be reduced further" in result.output
    assert "Parity's --reduce-neighbourhood" in result.output
    _, reduced = reduce(run_parity, model, tmp_path / "linear.onnx", "--mode", "linear", *check, cwd=tmp_path)
    assert node_names(reduced) == [PLANTED]
    result, reduced = reduce(run_parity, model, tmp_path / "n.onnx", "--reduce-neighbourhood", *check, cwd=tmp_path)
    assert node_names(reduced) == [PLANTED] and [o.name for o in reduced.graph.output] == ["x1"]
    assert "is the first node (in topological order) whose output makes the check fail" in result.output
    assert "first 1 of 5 nodes" in result.output and "--reduce-neighbourhood" not in result.output
    # A replay of one reduction is refused by the other.
    replay = tmp_path / "polygraphy_debug_replay.json"
    assert json.loads(replay.read_text())["reduction"] == "neighbourhood"
    assert_one_error(run_parity("debug", "reduce", model, "-o", tmp_path / "x.onnx", "--load-debug-replay", replay,
                                *check, cwd=tmp_path), "the replay is of the \"neighbourhood\" reduction")


def weights_model(path: Path, rows=2048, columns=8192):
    """x @ w -> Relu -> Sqrt (the planted node), w a 64 MiB weight: the model is its weights."""
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np

    weight = np.random.RandomState(0).random_sample((rows, columns)).astype(np.float32) / rows
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("Sqrt", ["r"], ["y"], name=PLANTED)],
        "weights", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, rows])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, columns])], [numpy_helper.from_array(weight, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.mark.parametrize("check", ["command", "in-process"])
def test_candidates_share_the_weights(parity_bin, tmp_path, check):
    """Issue 38: candidates refer to the weights in the model file instead of copying them (the model is loaded
    with its large weights left in the file, and candidates and the result are written with the weights streamed
    from it), so the peak stays under twice the model's size; copying them took 4-6x."""
    model = weights_model(tmp_path / "weights.onnx")
    size = model.stat().st_size
    # The check maps the candidate rather than reading it (grep holds a binary file's whole "line"), so its own
    # peak, which wait4 counts too, stays below the model's size.
    script = tmp_path / "check.py"
    script.write_text("import mmap, sys\nwith open(sys.argv[1], 'rb') as f:\n"
                      "    found = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ).find(%r) >= 0\n"
                      "sys.exit(1 if found else 0)\n" % PLANTED.encode())
    flags = (["--check", sys.executable, script, "polygraphy_debug.onnx"] if check == "command"
             else ["--ref", "--onnxrt"])
    code, output, peak = peak_rss_bytes([parity_bin, "debug", "reduce", model, "-o", tmp_path / "r.onnx", *flags],
                                        tmp_path)
    assert code == 0, output
    reduced = node_names(onnx.load(str(tmp_path / "r.onnx")))
    # In-process, ref and ONNX Runtime may differ anywhere (a 2048-term MatMul); the command finds the planted node.
    assert PLANTED in reduced or check == "in-process", output
    assert peak < 2 * size, f"peak {peak / 1e6:.0f} MB for a {size / 1e6:.0f} MB model\n{output}"


def test_a_check_that_fails_on_everything_is_called_broken(run_parity, chain, tmp_path):
    """Issue 38: a check run by a Python that lacks a module it imports fails every candidate the same way; the
    reduction would end at one arbitrary node. Every check failing alike, the smallest candidate and a node
    outside the result checked alone included, is one error naming the exit code and the output's end, exit 1,
    nothing saved."""
    script = tmp_path / "check.py"
    script.write_text("import parity_module_that_is_not_installed\n")
    run = run_parity("debug", "reduce", chain, "-o", tmp_path / "r.onnx", *SHAPES, "--check", sys.executable, script,
                     "polygraphy_debug.onnx", cwd=tmp_path)
    # One error (the check's traceback is its output, echoed as Polygraphy does, and quoted in the error).
    assert run.returncode == 1, run.describe()
    errors = [line for line in run.lines("[E] ") if "CAPTURED STDERR" not in line]
    assert len(errors) == 1, run.describe()
    for needle in ("the --check command looks broken", "exit code 1", "the smallest candidate (1 node(s))",
                   "alone (which the reduction left out)"):
        assert needle in errors[0], run.describe()
    assert re.search(r"all \d+ checks failed the same way", errors[0]), run.describe()
    assert "ModuleNotFoundError: No module named 'parity_module_that_is_not_installed'" in run.output, run.describe()
    assert "outside the result" in run.stdout, run.describe()
    assert not (tmp_path / "r.onnx").exists()


def test_every_candidate_failing_alike_because_all_hold_the_failure_is_no_broken_check(run_parity, tmp_path):
    """The planted node first in a chain, and only the outputs reduced: every candidate holds it and fails with
    the same output, as with a broken check; the last node checked alone passes, so the result stands."""
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Tanh", ["x"], ["t"], name=PLANTED),
             helper.make_node("Relu", ["t"], ["r"], name="relu"),
             helper.make_node("Neg", ["r"], ["out"], name="neg")]
    value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [1])
    model = tmp_path / "first.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [value("x")], [value("out")]),
                                opset_imports=[helper.make_opsetid("", 17)]), model)
    result, reduced = reduce(run_parity, model, tmp_path / "r.onnx", "--no-reduce-inputs", "--check",
                             check_script(tmp_path), "polygraphy_debug.onnx", cwd=tmp_path)
    assert node_names(reduced) == [PLANTED, "relu"]
    assert "| pass" not in result.stdout.split("outside the result")[0], result.stdout
    assert "checking node 'neg' (Neg) alone, outside the result | 1 node(s), 1 output(s) | pass" in result.stdout
    assert "broken" not in result.output, result.describe()
