"""Helpers shared by the `parity run` CLI tests (test_run_*.py): the Polygraphy peer, the one-[E]-line
check, and small models built here."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import REPO_ROOT, lines_with_prefix

SHARED_MODELS = (REPO_ROOT / ".." / "shared" / "models").resolve()
RUN_TIMEOUT = 180

# Forks the command from a small process and writes its peak RSS (wait4's ru_maxrss: the process, or a
# descendant it waited for if larger) to argv[1]: a child forked from pytest or a benchmark itself would
# start with that process's RSS.
PEAK_LAUNCHER = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss * 1024))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def peak_rss_bytes(command, cwd, timeout=300):
    """Runs `command` in `cwd`; returns (exit code, stdout + stderr, its peak resident set size in bytes)."""
    peak_file = Path(cwd) / "peak_rss"
    completed = subprocess.run([sys.executable, "-c", PEAK_LAUNCHER, peak_file, *map(str, command)], cwd=cwd,
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    return completed.returncode, (completed.stdout + completed.stderr).decode(errors="replace"), int(
        peak_file.read_text())


def polygraphy_exe() -> str:
    exe = Path(sys.executable).parent / "polygraphy"
    if exe.is_file():
        return str(exe)
    found = shutil.which("polygraphy")
    if not found:
        pytest.fail("the polygraphy command is not installed (scripts/setup.sh installs it into .venv)",
                    pytrace=False)
    return found


def polygraphy(*args, cwd=None, expect=0):
    completed = subprocess.run([polygraphy_exe(), *[str(a) for a in args]], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT, cwd=cwd,
                               env=dict(os.environ, NO_COLOR="1"))
    output = completed.stdout.decode(errors="replace")
    if expect is not None:
        assert completed.returncode == expect, f"polygraphy {' '.join(map(str, args))}\n{output[-4000:]}"
    return completed.returncode, output


def load_polygraphy_json(path):
    """Reads a file with Polygraphy's own JSON loader (RunResults, input lists)."""
    from polygraphy.json import load_json
    return load_json(str(path))


def single_error_line(run):
    errors = lines_with_prefix(run.output, "[E] ")
    assert len(errors) == 1, f"expected exactly one [E] line\n{run.describe()}"
    assert not run.crash_markers(), run.describe()
    return errors[0]


# ---- models built here ----

def chain_model(path):
    """x -> Add(+1) 'add' -> Mul(*2) 'mul' -> Tanh 'tanh' -> Sigmoid 'sig' -> y."""
    nodes = [
        helper.make_node("Add", ["x", "one"], ["add_out"], name="add"),
        helper.make_node("Mul", ["add_out", "two"], ["mul_out"], name="mul"),
        helper.make_node("Tanh", ["mul_out"], ["tanh_out"], name="tanh"),
        helper.make_node("Sigmoid", ["tanh_out"], ["y"], name="sig"),
    ]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        initializer=[numpy_helper.from_array(np.array(1.0, np.float32), "one"),
                     numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return Path(path)


def accumulation_model(path):
    """y = ReduceSum(Tanh(x @ w)) over 1024-long dot products: float32 and float64 accumulation
    disagree in the last bits, so fp64 reference vs ONNX Runtime fails at zero tolerance."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
        helper.make_node("Tanh", ["mm"], ["t"], name="tanh"),
        helper.make_node("ReduceSum", ["t"], ["y"], name="reduce", keepdims=1),
    ]
    graph = helper.make_graph(
        nodes, "accumulate", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 1024])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array((rng.standard_normal((1024, 8)) * 0.1).astype(np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return Path(path)


def large_weight_model(path):
    """y = Relu(x @ w1 + b) @ w2 with w1, w2 of 512 KB and 256 KB (above the 64 KiB from which runners
    read weights straight from the model file) and a small b, so the large ones sit at unaligned
    offsets in the protobuf."""
    rng = np.random.default_rng(3)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
        helper.make_node("Add", ["h", "b"], ["hb"], name="bias"),
        helper.make_node("Relu", ["hb"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2"),
    ]
    graph = helper.make_graph(
        nodes, "large_weights", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 128])],
        initializer=[numpy_helper.from_array(np.array([0.25, -0.5, 1.0], np.float32)[:1].repeat(512), "b"),
                     numpy_helper.from_array((rng.standard_normal((256, 512)) * 0.05).astype(np.float32), "w1"),
                     numpy_helper.from_array((rng.standard_normal((512, 128)) * 0.05).astype(np.float32), "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return Path(path)
