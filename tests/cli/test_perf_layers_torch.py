"""`parity run --torch --perf --perf-layers` (docs/perf.md, "Per-layer time"): PyTorch's per-layer time from its
profiler, on the convolution + attention block of torch_block_models.py. No timing threshold is asserted; the
tests check that

- each layer is a module of the model, by qualified name and class, with the kernel (the profiler's operator) and
  the precision of its output; the module's ONNX node where the module is paired with a tensor of the export;
- the layers and the named parts outside them add up to the profiled inferences' mean latency, as for the other
  backends, and the unprofiled inferences after them give the profiler's cost;
- where no module hook runs (a TorchScript file) the layers are the operators, and the run says so;
- a bf16 cast copy of the module reports BF16 layers."""

import json
import statistics
import sys

import pytest

from run_util import RUN_TIMEOUT
from torch_block_models import export_onnx, save_torchscript, write_block_script

pytest.importorskip("torch")

LAYER_INFERENCES = 3
# The block's modules that run by their own forward() (MultiheadAttention uses its out_proj's weights, not the
# module), and their classes.
MODULES = {"(top module)": "ConvAttentionBlock", "conv": "Conv2d", "bn": "BatchNorm2d", "norm": "LayerNorm",
           "attn": "MultiheadAttention", "mlp": "Sequential", "mlp.0": "Linear", "mlp.1": "GELU", "mlp.2": "Linear",
           "head": "Linear"}


def profile(run_parity, tmp_path, *flags, model=(), timeout=RUN_TIMEOUT):
    report = tmp_path / "report.json"
    result = run_parity("run", *model, "--torch", "--torch-python", sys.executable, *flags, "--perf",
                        "--iterations", "3", "--perf-layers", "20", "--perf-layer-iterations", str(LAYER_INFERENCES),
                        "--report", report, timeout=timeout)
    assert result.returncode == 0, result.describe()
    assert not result.crash_markers(), result.describe()
    (entry,) = [e for e in json.loads(report.read_text())["perf"] if e["runner"].startswith("pytorch")]
    assert "layers" in entry, entry.get("layers_unavailable")
    return entry, result


def check_sums(entry, cuda=False):
    layers = entry["layers"]
    assert layers["inferences"] == LAYER_INFERENCES
    assert len(layers["profiled_latencies"]) == LAYER_INFERENCES
    assert len(layers["unprofiled_latencies"]) == LAYER_INFERENCES
    profiled = layers["profiled_latency_seconds"]["mean"]
    total = sum(layer["seconds_per_inference"] for layer in layers["layers"])
    assert total == pytest.approx(layers["sum_seconds_per_inference"])
    outside = layers["outside_times"]
    assert total + sum(part["seconds_per_inference"] for part in outside) == pytest.approx(profiled)
    if cuda:
        # The kernels' device time: the call waits for the device, whose one stream runs one kernel at a time.
        assert 0 < total <= profiled
        assert [part["name"] for part in outside] == ["outside the kernels"]
    else:
        # Each layer runs inside the inference's range, which runs inside Parity's call.
        assert 0 < total <= layers["backend_run_seconds_per_inference"] <= profiled
    assert layers["profiler_cost_seconds_per_inference"] == pytest.approx(
        statistics.median(layers["profiled_latencies"]) - statistics.median(layers["unprofiled_latencies"]))
    assert layers["profiler_events_per_inference"] >= len(layers["layers"])
    return layers


def test_each_layer_is_a_module_with_its_kernel_precision_and_onnx_node(run_parity, tmp_path):
    script = write_block_script(tmp_path)
    model = export_onnx(script, tmp_path / "block.onnx", "torchscript")
    entry, result = profile(run_parity, tmp_path, "--torch-model-script", script, model=(model,))
    layers = check_sums(entry)
    assert "PyTorch's profiler" in layers["source"] and "each module's calls less its submodules'" in layers["source"]
    by_name = {layer["name"]: layer for layer in layers["layers"]}
    assert set(by_name) == set(MODULES), sorted(by_name)
    for name, cls in MODULES.items():
        assert by_name[name]["type"] == cls, by_name[name]
        assert by_name[name]["precision"] == "FP32", by_name[name]
    assert "conv" in by_name["conv"]["kernel"], by_name["conv"]
    # A paired module names the node producing its tensor; the exporter folds the BatchNorm into the convolution,
    # so neither conv's nor bn's output is a tensor of the export, and the table says so.
    assert by_name["norm"]["onnx_nodes"] == ["/norm/LayerNormalization"], by_name["norm"]
    assert by_name["mlp.1"]["onnx_nodes"] == ["/mlp/mlp.1/Gelu"], by_name["mlp.1"]
    assert by_name["conv"]["onnx_nodes"] == [] and by_name["bn"]["onnx_nodes"] == []
    assert [part["name"] for part in layers["outside_times"]] == ["the worker's call",
                                                                   "in the inference, in no module"]
    # The modules run in the order of the forward pass (execution order).
    order = [layer["name"] for layer in layers["layers"]]
    assert order.index("conv") < order.index("bn") < order.index("norm") < order.index("attn") < order.index("head")
    assert "Per-layer time (PyTorch's profiler" in result.output
    assert "(not paired with a tensor of the export)" in result.output


def test_torchscript_file_takes_no_hooks_so_its_layers_are_the_operators(run_parity, tmp_path):
    script = write_block_script(tmp_path)
    traced = save_torchscript(script, tmp_path / "block.pt")
    entry, result = profile(run_parity, tmp_path, "--torch-model", traced, "--input-shapes", "x:[1,3,8,8]")
    layers = check_sums(entry)
    assert "the operators of each inference" in layers["source"]
    assert "a TorchScript module takes no Python hooks" in result.output
    names = [layer["name"] for layer in layers["layers"]]
    assert len(names) > 1 and all(" #" in name for name in names), names
    assert any("conv" in layer["kernel"] for layer in layers["layers"]), layers["layers"]
    assert [part["name"] for part in layers["outside_times"]] == ["the worker's call",
                                                                   "in the inference, between the operators"]


def test_bf16_cast_copy_reports_bf16_layers(run_parity, tmp_path):
    script = write_block_script(tmp_path)
    entry, result = profile(run_parity, tmp_path, "--torch-model-script", script, "--input-shapes", "x:[1,3,8,8]",
                            "--torch-dtype", "bf16")
    layers = check_sums(entry)
    by_name = {layer["name"]: layer for layer in layers["layers"]}
    assert by_name["conv"]["precision"] == "BF16" and by_name["head"]["precision"] == "BF16", by_name
    # Without an ONNX model no module names a node.
    assert all(layer["onnx_nodes"] == [] for layer in layers["layers"])
    assert "(no ONNX model)" in result.output


def test_compiled_model_layers_are_the_operators_its_graph_calls(run_parity, tmp_path):
    script = write_block_script(tmp_path)
    entry, result = profile(run_parity, tmp_path, "--torch-model-script", script, "--input-shapes", "x:[1,3,8,8]",
                            "--torch-compile", "default", timeout=600)  # inductor compiles at the first inference
    layers = check_sums(entry)
    assert "torch.compile runs the submodules inside compiled graphs" in result.output
    kinds = [layer["type"] for layer in layers["layers"]]
    # Below the compiled region: TorchDynamo's cache lookup beside it, and the operators its graph calls.
    assert "TorchDynamo Cache Lookup" in kinds, kinds
    assert any(kind.startswith("aten::") for kind in kinds), kinds
    assert not any(kind.startswith("Torch-Compiled Region") for kind in kinds), kinds


def test_cuda_layers_are_the_device_time_of_their_kernels(run_parity, tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip(f"no CUDA device: torch.cuda.is_available() is false in {sys.executable} (torch "
                    f"{torch.__version__}); the CUDA per-layer profile is measured on a GPU machine")
    script = write_block_script(tmp_path)
    entry, result = profile(run_parity, tmp_path, "--torch-model-script", script, "--input-shapes", "x:[8,3,32,32]",
                            "--torch-device", "cuda")
    layers = check_sums(entry, cuda=True)
    assert "device time of the CUDA kernels" in layers["source"]
    by_name = {layer["name"]: layer for layer in layers["layers"]}
    assert set(by_name) <= set(MODULES) and "conv" in by_name, sorted(by_name)
    # The kernel column names CUDA kernels, not the operators that launched them.
    kernels = [layer["kernel"] for layer in layers["layers"] if layer["kernel"]]
    assert kernels and not any(kernel.startswith("aten::") for kernel in kernels), kernels
    print(result.output[result.output.find("Per-layer time"):][:3000])
