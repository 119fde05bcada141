"""parity.backend.pyt: PytRunner (Polygraphy's signature, the module in this process) and PytWorkerRunner
(Parity's C++ runner, the module in a Python worker) beside the ONNX runners, through Comparator.run, on
the conv + attention block of tests/cli/torch_block_models.py exported by both exporters; the loaders;
the errors."""
import sys

import numpy as np
import pytest
import torch

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tests" / "cli"))
from torch_block_models import (export_onnx, load_block, save_torch_export, save_torchscript,  # noqa: E402
                                write_block_script)

from parity import _parity  # noqa: E402
from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx  # noqa: E402
from parity.backend.openvino import OpenVINORunner  # noqa: E402
from parity.backend.pyt import (ModuleFromScript, ModuleFromTorchExport, ModuleFromTorchScript,  # noqa: E402
                                PytRunner, PytWorkerRunner)
from parity.backend.ref import RefRunner  # noqa: E402
from parity.common import TensorMetadata  # noqa: E402
from parity.comparator import Comparator, CompareFunc, DataLoader  # noqa: E402

EXPORTERS = ("torchscript", "dynamo")


@pytest.fixture(scope="session")
def block(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pyt_block")
    script = write_block_script(folder)
    files = {"script": script, "pt": save_torchscript(script, folder / "block.pt"),
             "pt2": save_torch_export(script, folder / "block.pt2")}
    for exporter in EXPORTERS:
        files[exporter] = str(export_onnx(script, folder / f"block_{exporter}.onnx", exporter))
    return files


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_every_runner_agrees_at_fp32(block, exporter):
    onnx_path = block[exporter]
    runners = [
        PytRunner(ModuleFromScript(block["script"]), onnx_model=onnx_path),
        PytWorkerRunner(ModuleFromTorchScript(block["pt"]), onnx_model=onnx_path),
        RefRunner(onnx_path),
        OnnxrtRunner(SessionFromOnnx(onnx_path)),
        OpenVINORunner(onnx_path, precision="f32"),
    ]
    results = Comparator.run(runners, data_loader=DataLoader(iterations=2))
    accuracy = Comparator.compare_accuracy(results)
    assert bool(accuracy)
    assert len(accuracy) == 4


def test_polygraphy_signature_with_a_module_and_names(block):
    """PytRunner(model, input_metadata, output_names) as Polygraphy's: a callable returning the module."""
    metadata = TensorMetadata().add("x", np.float32, [1, 3, 8, 8])
    runner = PytRunner(lambda: load_block(block["script"]), metadata, ["logits"], name="torch")
    with runner:
        assert runner.get_input_metadata() == metadata
        x = np.random.default_rng(0).random((1, 3, 8, 8), dtype=np.float32)
        outputs = runner.infer({"x": x})
        assert list(outputs) == ["logits"]
        with torch.inference_mode():
            expected = load_block(block["script"])(torch.from_numpy(x)).numpy()
        np.testing.assert_array_equal(outputs["logits"], expected)
        assert runner.last_inference_time() is not None


def test_loaders(block):
    assert isinstance(ModuleFromScript(block["script"])(), torch.nn.Module)
    assert isinstance(ModuleFromTorchScript(block["pt"])(), torch.jit.ScriptModule)
    assert isinstance(ModuleFromTorchExport(block["pt2"])(), torch.nn.Module)


def test_example_inputs_and_reduced_precision(block):
    """Without metadata or an ONNX model, the script's example_inputs() gives the inputs; bf16 under autocast
    differs from fp32 (so it ran) by a bf16-sized error."""
    runners = [PytRunner(ModuleFromScript(block["script"])),
               PytRunner(ModuleFromScript(block["script"]), dtype="bf16", dtype_mode="autocast")]
    results = Comparator.run(runners)
    assert not bool(Comparator.compare_accuracy(results))
    assert bool(Comparator.compare_accuracy(results, compare_func=CompareFunc.simple(atol=0.05, rtol=0.05)))


def test_torch_export_program_against_onnx(block):
    runners = [PytRunner(ModuleFromTorchExport(block["pt2"]), onnx_model=block["dynamo"]),
               OnnxrtRunner(SessionFromOnnx(block["dynamo"]))]
    assert bool(Comparator.compare_accuracy(Comparator.run(runners)))


def test_errors(block, tmp_path):
    with pytest.raises(_parity.InvalidInputError, match="missing.py does not exist"):
        ModuleFromScript(tmp_path / "missing.py")()
    script = tmp_path / "bad.py"
    script.write_text("import torch\n\ndef load_model():\n    return 3\n\n"
                      "class Raises(torch.nn.Module):\n    def forward(self, x):\n        raise ValueError('bad x')\n\n"
                      "def raises():\n    return Raises()\n")
    with pytest.raises(_parity.InvalidInputError, match="has no function 'build'"):
        ModuleFromScript(script, "build")()
    with pytest.raises(_parity.InvalidInputError, match="returned builtins.int, not a torch.nn.Module"):
        ModuleFromScript(script)()
    runner = PytRunner(ModuleFromScript(script, "raises"), onnx_model=block["dynamo"])
    with runner:
        with pytest.raises(_parity.InvalidInputError, match=r"forward\(\) raised ValueError: bad x \(at "):
            runner.infer({"x": np.zeros((1, 3, 8, 8), np.float32)})
    with pytest.raises(_parity.InvalidInputError, match="2 tensor"):
        with PytRunner(ModuleFromScript(block["script"], "load_two_outputs"), onnx_model=block["dynamo"]) as runner:
            runner.infer({"x": np.zeros((1, 3, 8, 8), np.float32)})
    if not torch.cuda.is_available():
        with pytest.raises(_parity.InvalidInputError, match="torch.cuda.is_available"):
            PytRunner(ModuleFromScript(block["script"]), onnx_model=block["dynamo"], device="cuda").activate()
    with pytest.raises(_parity.InvalidInputError, match="no input metadata"):
        PytRunner(ModuleFromTorchScript(block["pt"])).activate()


def test_perf_layers_of_the_worker_runner_are_its_modules(block):
    """Comparator.run(perf=...) on PytWorkerRunner: the per-layer profile from PyTorch's profiler, each layer a
    module (qualified name and class) with the ONNX node of the export that its paired tensor comes from."""
    from parity.comparator import PerfConfig, PerfResult

    runner = PytWorkerRunner(ModuleFromScript(block["script"]), onnx_model=block["torchscript"])
    results = Comparator.run([runner], perf=PerfConfig(iterations=3, layers=20, layer_iterations=2))
    (perf,) = results.perf
    assert isinstance(perf, PerfResult) and perf.layers, perf.layers_unavailable
    by_name = {layer.name: layer for layer in perf.layers}
    assert by_name["attn"].type == "MultiheadAttention" and by_name["norm"].type == "LayerNorm"
    assert by_name["norm"].onnx_nodes == ["/norm/LayerNormalization"] and by_name["norm"].precision == "FP32"
    info = perf.layers_info
    assert info["inferences"] == 2 and "PyTorch's profiler" in info["source"]
    assert [part["name"] for part in info["outside_times"]] == ["the worker's call", "in the inference, in no module"]
    shares = [layer.share for layer in perf.layers] + [part["share"] for part in info["outside_times"]]
    assert sum(shares) == pytest.approx(1.0)
