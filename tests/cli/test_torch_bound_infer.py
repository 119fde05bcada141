"""`parity run --torch`'s bound inference (the worker's 8-byte request and reply while the feeds' and outputs'
layouts stay, the whole request again when they change): feeds whose shapes change between iterations, outputs
whose shapes change while the feeds' stay, and a forward() that raises or a worker that dies after the first
iterations (on the short exchange). The ONNX model is built with onnx.helper only to give the runner dynamic
input metadata (x: [n, c] float32, y); the expected outputs are computed here with numpy."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from run_util import load_polygraphy_json, single_error_line

TIMEOUT = 300

SCRIPT = '''
import os
import torch


class Doubler(torch.nn.Module):
    def forward(self, x):
        return x * 2 + 1


class Prefix(torch.nn.Module):
    """The first int(x[0, 0]) elements of x, times 3: the output's shape follows the values."""
    def forward(self, x):
        return x.flatten()[: int(x.flatten()[0].item())] * 3


class OnThirdCall(torch.nn.Module):
    def __init__(self, action):
        super().__init__()
        self.action = action
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == 3:
            self.action()
        return x + 1


def refuse():
    raise ValueError("the third call is refused")


def doubler():
    return Doubler()


def prefix():
    return Prefix()


def raises_on_third():
    return OnThirdCall(refuse)


def dies_on_third():
    return OnThirdCall(lambda: os.kill(os.getpid(), 9))
'''


@pytest.fixture(scope="session")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("torch_bound")
    script = folder / "modules.py"
    script.write_text(SCRIPT)
    # y = x * 2 + 1 on x: [n, c]: metadata with dynamic dimensions for the runner (onnxrt checks Doubler).
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["doubled"]), helper.make_node("Add", ["doubled", "one"], ["y"])],
        "doubler", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "c"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]), helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    model = folder / "doubler.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(model))
    return {"folder": folder, "script": script, "model": model}


def save_feeds(path, arrays):
    from polygraphy.json import save_json
    save_json([{"x": array} for array in arrays], str(path))
    return path


def torch_outputs(run_parity, files, function, feeds, *more):
    saved = files["folder"] / f"{function}_outputs.json"
    run = run_parity("run", files["model"], "--torch", "--torch-model-script", f"{files['script']}:{function}",
                     "--load-inputs", feeds, "--save-outputs", saved, *more, timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    results = dict(load_polygraphy_json(saved).lst)
    name = next(name for name in results if name.startswith("pytorch-runner"))
    return [iteration["y"] for iteration in results[name]], run


def test_feed_shapes_changing_between_iterations(run_parity, files):
    """Two iterations of one shape (bound, then the short exchange), another shape (bound anew), the first
    again: each output is its own feed's, also by ONNX Runtime's account."""
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in ([2, 3], [2, 3], [4, 5], [4, 5], [2, 3])]
    feeds = save_feeds(files["folder"] / "changing.json", arrays)
    outputs, run = torch_outputs(run_parity, files, "doubler", feeds, "--onnxrt")
    assert len(outputs) == len(arrays)
    for output, array in zip(outputs, arrays):
        np.testing.assert_array_equal(output, array * 2 + 1)
    assert "Passed: 5/5 iterations" in run.output, run.describe()


def test_output_shapes_changing_while_feeds_keep_theirs(run_parity, files):
    rng = np.random.default_rng(4)
    arrays = []
    for count in (3, 5, 5, 2, 2):
        array = rng.standard_normal([1, 8]).astype(np.float32)
        array[0, 0] = count
        arrays.append(array)
    feeds = save_feeds(files["folder"] / "prefix.json", arrays)
    outputs, _ = torch_outputs(run_parity, files, "prefix", feeds)
    assert [list(output.shape) for output in outputs] == [[3], [5], [5], [2], [2]]
    for output, array in zip(outputs, arrays):
        np.testing.assert_array_equal(output, array.flatten()[: int(array[0, 0])] * 3)


def test_forward_raising_after_the_first_iterations(run_parity, files):
    run = run_parity("run", files["model"], "--torch", "--torch-model-script", f"{files['script']}:raises_on_third",
                     "--input-shapes", "x:[2,3]", "--iterations", "5", timeout=TIMEOUT)
    error = single_error_line(run)
    assert run.returncode == 1
    assert "forward() raised ValueError: the third call is refused" in error


def test_worker_killed_after_the_first_iterations(run_parity, files):
    run = run_parity("run", files["model"], "--torch", "--torch-model-script", f"{files['script']}:dies_on_third",
                     "--input-shapes", "x:[2,3]", "--iterations", "5", timeout=TIMEOUT)
    error = single_error_line(run)
    assert run.returncode == 1
    assert "the Python worker for the PyTorch runner" in error and "SIGKILL" in error
