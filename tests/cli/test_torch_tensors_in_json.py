"""Torch tensors in Polygraphy's JSON files ({"tensor": base64 of torch.save bytes,
"polygraphy_class": "Tensor"}), as Polygraphy's save_json writes them for a data loader that
yields torch tensors: Parity reads them without Python (src/core/torch_save.cpp) and must see
exactly the values torch saved, whatever the dtype, storage offset, strides or rank.

torch is installed by scripts/setup.sh (pinned); a missing torch fails these tests.
"""

import base64
import io
import json
import re
from collections import OrderedDict

import numpy as np
import pytest
import torch

from test_data_tools import info_text, polygraphy

TIMEOUT = 60
IDENTITY = "identity.onnx"


def save_polygraphy_json(feeds, path):
    from polygraphy.json import save_json
    save_json(feeds, str(path))


def torch_tensors():
    """Dense CPU tensors of many layouts: the decoder must follow offsets and strides."""
    generator = torch.Generator().manual_seed(0)
    base = torch.randn((4, 6), generator=generator)
    return OrderedDict(
        contiguous=torch.randn((2, 3, 4), generator=generator),
        transposed=base.t(),                        # strides (1, 6)
        sliced=base[1:3, 2:5],                      # storage offset 8, strides (6, 1)
        stepped=base[::2, ::3],                     # strides (12, 3)
        expanded=torch.arange(3.0).expand(2, 3),    # stride 0
        scalar=torch.tensor(2.5, dtype=torch.float64),
        empty=torch.zeros((0, 3)),
        halves=torch.randn(5, generator=generator).half(),
        longs=torch.arange(-4, 8).reshape(3, 4),
        ints=torch.arange(6, dtype=torch.int32),
        shorts=torch.arange(-3, 3, dtype=torch.int16),
        bytes_=torch.arange(250, 256, dtype=torch.uint8),
        chars=torch.arange(-3, 3, dtype=torch.int8),
        flags=torch.tensor([True, False, True]),
        wide_unsigned=torch.tensor([1, 65535], dtype=torch.uint16),  # written through _rebuild_tensor_v3
    )


@pytest.fixture(scope="module")
def torch_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("torch_json") / "torch_inputs.json"
    save_polygraphy_json([torch_tensors()], path)
    return path


@pytest.mark.parametrize("flags", [("-s", "-n", "-1", "--line-width", "-1"), ("--histogram",)])
def test_inspect_data_of_torch_tensors_matches_polygraphy(run_parity, torch_file, tmp_path, flags):
    """Parity's text for the torch file is Polygraphy's for the same values as numpy arrays.
    (Polygraphy itself prints torch tensors' values with torch's repr, "tensor([...])"; Parity
    prints them as it prints every array: see docs/differences-from-polygraphy.md.)"""
    numpy_file = tmp_path / "numpy_inputs.json"
    save_polygraphy_json([OrderedDict((name, tensor.numpy()) for name, tensor in torch_tensors().items())], numpy_file)
    run = run_parity("inspect", "data", torch_file, *flags, timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert not run.crash_markers()
    assert info_text(run.output) == info_text(polygraphy("inspect", "data", numpy_file, *flags))


def test_torch_tensors_convert_to_the_same_arrays(run_parity, torch_file, tmp_path):
    """data to-input rewrites every tensor as a numpy array: each must equal torch's own values."""
    out = tmp_path / "as_numpy.json"
    run = run_parity("data", "to-input", torch_file, "-o", out, timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    from polygraphy.json import load_json
    (converted,) = load_json(str(out))
    expected = torch_tensors()
    assert list(converted.keys()) == list(expected.keys())
    for name, tensor in expected.items():
        array = converted[name]
        assert isinstance(array, np.ndarray), name
        assert array.shape == tuple(tensor.shape), name
        assert str(array.dtype) == str(tensor.dtype).replace("torch.", ""), name
        np.testing.assert_array_equal(array, tensor.numpy(), err_msg=name)


def test_bfloat16_torch_tensor_keeps_its_type(run_parity, tmp_path):
    """numpy has no bfloat16, so Polygraphy cannot print this one; Parity reads it as bfloat16."""
    path = tmp_path / "bf16.json"
    values = torch.tensor([1.0, -2.5, 3.140625], dtype=torch.bfloat16)
    save_polygraphy_json([OrderedDict(b=values)], path)
    run = run_parity("inspect", "data", path, "-s", timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert "b [dtype=bfloat16, shape=(3,)]" in run.output, run.output
    assert re.search(r"\[\s*1\.\s+-2\.5\s+3\.140625\]", run.output), run.output


def test_run_with_torch_inputs_as_polygraphy_test_load_torch_inputs(run_parity, shared_dir, tmp_path):
    """Polygraphy's test_load_torch_inputs: identity.onnx fed a torch tensor on two ONNX Runtime runners."""
    path = tmp_path / "inputs.json"
    save_polygraphy_json([{"x": torch.ones((1, 1, 2, 2), dtype=torch.float32)}], path)
    run = run_parity("run", shared_dir / "polygraphy" / "tests" / "models" / IDENTITY, "--onnxrt", "--onnxrt", "--load-inputs", path,
                     "--save-outputs", tmp_path / "outputs.json", timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    from polygraphy.json import load_json
    results = load_json(str(tmp_path / "outputs.json"))
    for _, iterations in results.items():
        np.testing.assert_array_equal(iterations[0]["y"], np.ones((1, 1, 2, 2), np.float32))


def torch_save_bytes(tensor):
    buffer = io.BytesIO()
    torch.save(tensor, buffer)
    return buffer.getvalue()


def write_torch_object(path, payload: bytes):
    path.write_text(json.dumps([{"x": {"tensor": base64.b64encode(payload).decode(), "polygraphy_class": "Tensor"}}]))


def replace_once(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) == 1, old
    return data.replace(old, new)


BAD_PAYLOADS = {
    # Not a zip archive at all.
    "not_zip": (lambda good: b"not a zip archive", "not a valid torch.save (zip) archive"),
    # Cut in the middle: the zip directory is gone.
    "truncated": (lambda good: good[: len(good) // 2], "not a valid torch.save (zip) archive"),
    # A storage type that is no tensor type (same length, so the zip stays valid).
    "unknown_storage": (lambda good: replace_once(good, b"FloatStorage", b"FloatStorxge"),
                        "torch tensor of type 'torch.FloatStorxge'"),
    # A rebuild function other than the dense tensor's.
    "other_rebuild": (lambda good: replace_once(good, b"_rebuild_tensor_v2", b"_rebuild_tensor_v9"),
                      "rebuilt by 'torch._utils._rebuild_tensor_v9'"),
}


@pytest.mark.parametrize("case", sorted(BAD_PAYLOADS))
def test_bad_torch_payloads_are_refused_with_the_file_and_tensor(run_parity, tmp_path, case):
    make, message = BAD_PAYLOADS[case]
    path = tmp_path / f"{case}.json"
    # Stored (uncompressed) members, so the byte edits above reach the pickle. The CRC then no
    # longer matches for the edited cases; libzip checks it, so those would fail on the CRC first:
    # rebuild the archive with the edited pickle instead.
    good = torch_save_bytes(torch.ones(3))
    payload = make(good) if case in ("not_zip", "truncated") else rezip_with_edited_pickle(good, make)
    write_torch_object(path, payload)
    run = run_parity("inspect", "data", path, timeout=TIMEOUT)
    assert run.returncode != 0, run.describe()
    assert not run.crash_markers()
    assert str(path) in run.output and "input 'x'" in run.output, run.output
    assert message in run.output, run.output


def rezip_with_edited_pickle(good: bytes, edit) -> bytes:
    import zipfile
    source = zipfile.ZipFile(io.BytesIO(good))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename.endswith("data.pkl"):
                data = edit(data)
            target.writestr(info.filename, data)
    return out.getvalue()


def test_strides_reaching_past_the_storage_are_refused(run_parity, tmp_path):
    """A pickle whose sizes ask for more elements than the storage holds: an error, not a read past the end."""
    good = torch_save_bytes(torch.ones(3))
    # The size tuple (3,) is written as BININT1 3, TUPLE1 ('K\\x03\\x85'); ask for 9 elements.
    payload = rezip_with_edited_pickle(good, lambda data: replace_once(data, b"K\x03\x85", b"K\x09\x85"))
    path = tmp_path / "overreach.json"
    write_torch_object(path, payload)
    run = run_parity("inspect", "data", path, timeout=TIMEOUT)
    assert run.returncode != 0, run.describe()
    assert not run.crash_markers()
    assert "reads element 8 of a storage of 3 element(s)" in run.output, run.output


def test_run_results_holding_torch_outputs_read_like_numpy_ones(run_parity, tmp_path):
    """RunResults files (--save-outputs of a runner that returned torch tensors) wrap each in a LazyArray."""
    from polygraphy.comparator import IterationResult, RunResults

    def results_file(name, convert):
        results = RunResults()
        tensors = torch_tensors()
        results.append(("runner", [IterationResult(outputs={k: convert(v) for k, v in tensors.items()},
                                                   runner_name="runner")]))
        path = tmp_path / name
        save_polygraphy_json(results, path)
        return path

    torch_results = results_file("torch_outputs.json", lambda tensor: tensor)
    numpy_results = results_file("numpy_outputs.json", lambda tensor: tensor.numpy())
    run = run_parity("inspect", "data", torch_results, "-s", timeout=TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert info_text(run.output) == info_text(polygraphy("inspect", "data", numpy_results, "-s"))
