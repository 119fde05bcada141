"""Hostile or careless arguments to the Python API (issue 39): refused with Parity's exceptions,
before anything runs."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from parity.comparator import CompareFunc
from parity.exception import InvalidInputError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "cli"))
from hostile_models import endless_loop_model_bytes  # noqa: E402


@pytest.mark.parametrize("tolerances", [{"atol": math.nan}, {"rtol": float("nan")}, {"atol": np.float32("nan")},
                                        {"atol": {"y": math.nan}}, {"rtol": {"": 1e-3, "y": math.nan}}],
                         ids=["atol", "rtol", "numpy_nan", "atol_per_output", "rtol_per_output"])
def test_nan_tolerance_is_refused(tolerances):
    """A NaN tolerance passes every comparison (`difference > NaN` is false): refused when the
    comparison function is made."""
    with pytest.raises(InvalidInputError, match="NaN"):
        CompareFunc.simple(**tolerances)


def test_nan_tolerance_refusal_names_the_output():
    with pytest.raises(InvalidInputError, match="atol for output 'y' is NaN"):
        CompareFunc.simple(atol={"x": 1e-3, "y": math.nan})


@pytest.mark.parametrize("threads", [{"intra_op_threads": 10**6}, {"inter_op_threads": 10**6},
                                     {"inter_op_threads": -1}])
def test_onnxrt_thread_count_out_of_range_is_refused(models, threads):
    """A million ONNX Runtime threads failed inside ONNX Runtime (std::system_error ends the process)."""
    from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
    with pytest.raises(InvalidInputError, match=r"threads must be between 0 .* and \d+"):
        with OnnxrtRunner(SessionFromOnnx(models["identity"], **threads)):
            pass


def test_openvino_thread_count_out_of_range_is_refused(models):
    from parity.backend.openvino import OpenVINORunner
    with pytest.raises(InvalidInputError, match=r"threads .* must be between 0 .* and \d+"):
        OpenVINORunner(models["identity"], threads=10**6)


def endless_loop_model():
    """hostile_models' endless Loop (a Loop named 'endless' with trip count 10^12), as bytes."""
    return endless_loop_model_bytes()


def test_ref_max_loop_iterations_stops_an_endless_loop():
    from parity.backend.ref import RefRunner
    from parity.exception import ResourceLimitError

    model = endless_loop_model()
    with RefRunner(model, max_loop_iterations=100) as runner:
        with pytest.raises(ResourceLimitError, match="'endless'.*ran 100 iterations.*max_loop_iterations"):
            runner.infer({"x": np.zeros(1, np.float32)})
    with pytest.raises(InvalidInputError, match="max_loop_iterations must be 1 or more"):
        RefRunner(model, max_loop_iterations=0)


def interrupted_script(script, *args):
    """Runs `python -c script args...`, sends SIGINT a second after it prints "inferring" and returns the
    lines it printed that are not Parity's log lines. Python raises KeyboardInterrupt only where SIGINT was
    not ignored when it started, and a shell that runs the tests in the background ignores it: the child
    starts from the default disposition."""
    import signal
    import subprocess
    import sys
    import time

    process = subprocess.Popen([sys.executable, "-c", script, *map(str, args)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        while (line := process.stdout.readline()) and line.strip() != "inferring":  # past the log, the compile
            pass
        assert line.strip() == "inferring"
        time.sleep(1)  # well inside the inference (a KeyboardInterrupt before it is caught alike)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    return [line for line in out.split("\n") if line and not line.startswith(("[", " "))], out + err


INTERRUPTED_INFER = """
import sys, time
import numpy as np
from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
from parity.backend.ref import RefRunner
from parity.comparator import Comparator
make = {"ref": RefRunner, "onnxrt": lambda path: OnnxrtRunner(SessionFromOnnx(path))}[sys.argv[3]]
how = sys.argv[4]
with make(sys.argv[1]) as runner:
    print("inferring", flush=True)
    try:
        if how == "infer":
            runner.infer({"x": np.zeros(1, np.float32)})
        else:
            Comparator.run([runner], data_loader=[{"x": np.zeros(1, np.float32)}])
        print("finished")
    except KeyboardInterrupt:
        print("interrupted")
    # The runner stays usable: the next inference is not taken for interrupted.
    with make(sys.argv[2]) as small:
        print("next", small.infer({"x": np.ones(1, np.float32)})["y"].tolist(), flush=True)
"""


@pytest.mark.parametrize("backend,how", [("ref", "infer"), ("onnxrt", "infer"), ("ref", "comparator"),
                                         ("onnxrt", "comparator")])
def test_ctrl_c_interrupts_a_long_inference(tmp_path, backend, how):
    """Ctrl-C (SIGINT) during Runner.infer or Comparator.run on a Loop of 10^12 trips (bounded only by the
    reference's default limit of 10^8 iterations, minutes away; ONNX Runtime has none) raises
    KeyboardInterrupt: the reference interpreter stops between the loop's nodes, ONNX Runtime through its
    run options' terminate flag (set by a watcher thread)."""
    import onnx
    endless = tmp_path / "endless.onnx"
    endless.write_bytes(endless_loop_model())
    short = onnx.load_from_string(endless_loop_model())
    short.graph.initializer[0].CopyFrom(onnx.numpy_helper.from_array(np.array(3, np.int64), "trips"))
    onnx.save(short, str(tmp_path / "short.onnx"))
    printed, output = interrupted_script(INTERRUPTED_INFER, endless, tmp_path / "short.onnx", backend, how)
    assert printed[:2] == ["interrupted", "next [4.0]"], output  # x = 1, three trips of + 1


INTERRUPTED_OPENVINO = """
import sys
import numpy as np
from parity.backend.openvino import OpenVINORunner
from parity.comparator import Comparator
how = sys.argv[3]
with OpenVINORunner(sys.argv[1]) as runner:
    print("inferring", flush=True)
    feed = {"x": np.ones((2048, 2048), np.float32), "w": np.eye(2048, dtype=np.float32)}
    try:
        if how == "infer":
            runner.infer(feed)
        else:
            Comparator.run([runner], data_loader=[feed])
        print("finished")
    except KeyboardInterrupt:
        print("interrupted")
with OpenVINORunner(sys.argv[2]) as small:
    print("next", small.infer({"x": np.ones((2048, 2048), np.float32), "w": np.eye(2048, dtype=np.float32)})["y"].shape,
          flush=True)
"""


def matmul_chain(path, length):
    """y = x w w ... w (`length` MatMuls of 2048 x 2048): 17 GFLOP a node, so 4,000 of them take about 75 s
    on this machine's CPU (50 take 0.93 s), past the test's 60 s. w is an input, not a weight: OpenVINO repacks a
    constant weight for each node that reads it."""
    import onnx
    from onnx import TensorProto, helper
    nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"t{i - 1}", "w"], [f"t{i}"], name=f"mm{i}")
             for i in range(length)]
    nodes.append(helper.make_node("Identity", [f"t{length - 1}"], ["y"]))
    square = [2048, 2048]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info(name, TensorProto.FLOAT, square)
                                               for name in ("x", "w")],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, square)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize("how", ["infer", "comparator"])
def test_ctrl_c_cancels_a_long_openvino_inference(tmp_path, how):
    """Ctrl-C during OpenVINORunner.infer or Comparator.run on a chain of 4,000 large MatMuls (about 75 s of
    work here) raises KeyboardInterrupt within the test's 60 s: the watcher thread cancels OpenVINO's infer
    request, which stops between its layers."""
    long, short = matmul_chain(tmp_path / "long.onnx", 4000), matmul_chain(tmp_path / "short.onnx", 1)
    printed, output = interrupted_script(INTERRUPTED_OPENVINO, long, short, how)
    assert printed[:2] == ["interrupted", "next (2048, 2048)"], output
