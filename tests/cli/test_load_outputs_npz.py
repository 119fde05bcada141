"""`run --load-outputs` takes an .npz of one iteration's outputs keyed by output name, as `--load-inputs`
takes an .npz of inputs: a user saves PyTorch's outputs with numpy.savez and compares a backend against
them (`parity run m.onnx --onnxrt --load-outputs torch_out.npz`)."""
import numpy as np
import pytest
import torch

from exported_models import build, export
from run_util import single_error_line

RUN_TIMEOUT = 120
EXPORTERS = ("torchscript", "dynamo")


@pytest.fixture(scope="session")
def bert_and_torch_outputs(tmp_path_factory):
    """BERT exported by both exporters, the example inputs as .npz, and torch's own outputs for them as
    {output name: array}."""
    folder = tmp_path_factory.mktemp("load_outputs_npz")
    models = {exporter: export("bert", folder / f"bert_{exporter}.onnx", exporter) for exporter in EXPORTERS}
    model, args, (input_names, output_names) = build("bert")
    with torch.no_grad():
        outputs = model(*args)
    inputs = folder / "inputs.npz"
    np.savez(inputs, **{name: arg.numpy() for name, arg in zip(input_names, args)})
    return models, inputs, {name: out.numpy() for name, out in zip(output_names, outputs)}


def _run(run_parity, model, inputs, outputs_file):
    return run_parity("run", model, "--onnxrt", "--load-inputs", inputs, "--load-outputs", outputs_file,
                      "--atol", "1e-4", "--rtol", "1e-3", timeout=RUN_TIMEOUT)


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_torch_outputs_from_npz_are_compared(run_parity, bert_and_torch_outputs, tmp_path, exporter):
    models, inputs, torch_outputs = bert_and_torch_outputs
    saved = tmp_path / "torch_out.npz"
    np.savez(saved, **torch_outputs)
    run = _run(run_parity, models[exporter], inputs, saved)
    assert run.returncode == 0, run.describe()
    assert "vs. torch_out.npz" in run.stdout, run.describe()
    for name in torch_outputs:
        assert f"PASSED | Output: '{name}'" in run.stdout, run.describe()

    # One output 1% off: that output fails, the other still passes, and so does the exit code.
    wrong = dict(torch_outputs)
    wrong["pooler_output"] = wrong["pooler_output"] * np.float32(1.01) + np.float32(0.01)
    off = tmp_path / "torch_out_off.npz"
    np.savez(off, **wrong)
    run = _run(run_parity, models[exporter], inputs, off)
    assert run.returncode == 1, run.describe()
    assert "FAILED | Output: 'pooler_output'" in run.stdout, run.describe()
    assert "PASSED | Output: 'last_hidden_state'" in run.stdout, run.describe()


def test_npz_is_told_by_its_bytes_not_its_name(run_parity, bert_and_torch_outputs, tmp_path):
    models, inputs, torch_outputs = bert_and_torch_outputs
    # numpy.savez appends .npz to a path; through a file object the archive keeps the name given.
    disguised = tmp_path / "torch_outputs.bin"
    with open(disguised, "wb") as f:
        np.savez(f, **torch_outputs)
    run = _run(run_parity, models["dynamo"], inputs, disguised)
    assert run.returncode == 0, run.describe()
    assert "vs. torch_outputs.bin" in run.stdout, run.describe()


def test_unnamed_or_empty_arrays_are_refused(run_parity, bert_and_torch_outputs, tmp_path):
    models, inputs, torch_outputs = bert_and_torch_outputs
    single = tmp_path / "pooler.npy"
    np.save(single, torch_outputs["pooler_output"])
    empty = tmp_path / "empty.npz"
    np.savez(empty)
    for path, needle in ((single, "outputs must be named"), (empty, "holds no arrays")):
        run = _run(run_parity, models["torchscript"], inputs, path)
        assert run.returncode == 1, run.describe()
        line = single_error_line(run)
        assert str(path) in line and needle in line, run.describe()
