"""Compiled OpenVINO model files: `parity convert model.onnx --openvino -o model.ovc`, then
`parity run model.ovc --openvino` without the ONNX file.

- A converted model run from its file gives bit-identical outputs to a direct run of the ONNX model
  at the same precision, on the same inputs (--load-inputs), and compares with saved results.
- The header names the OpenVINO version, device, precision, inputs/outputs and the source hash.
- Bad files (another OpenVINO version, truncated, corrupt, not a compiled model, bytes OpenVINO
  cannot import): one clear error naming the file, exit 1, no crash.
"""

import hashlib

import numpy as np
import pytest

from run_util import SHARED_MODELS, RUN_TIMEOUT, load_polygraphy_json, single_error_line

# (id, where, file, data loader flags, convert flags)
CASES = [
    ("small_cnn", "examples", "small_cnn.onnx", [], []),
    ("small_transformer", "examples", "small_transformer.onnx", [], []),
    ("small_if_bounds", "examples", "small_if.onnx", ["--input-shapes", "x:[3,4]"],
     ["--ov-min-shapes", "x:[1,4]", "--ov-max-shapes", "x:[8,4]"]),
    ("blazeface", "shared", "blazeface_front_128.onnx", [], []),
]


def model_path(examples_dir, where, filename):
    return (examples_dir if where == "examples" else SHARED_MODELS) / filename


def outputs_of(path):
    results = load_polygraphy_json(path)
    [(_, iterations)] = list(results.items())
    return [{name: np.asarray(value) for name, value in iteration.items()} for iteration in iterations]


def header_of(path):
    data = path.read_bytes()
    end = data.index(b"\nend\n")
    return data[:end].decode().splitlines()


@pytest.fixture(scope="module")
def small_cnn_ovc(run_parity, examples_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("ovc") / "small_cnn.ovc"
    run = run_parity("convert", examples_dir / "small_cnn.onnx", "--openvino", "--ov-precision", "f32", "-o", path)
    assert run.returncode == 0, run.describe()
    return path


@pytest.mark.parametrize("precision", ["f32", "bf16"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_compiled_file_runs_like_the_onnx_model(run_parity, examples_dir, tmp_path, case, precision):
    _, where, filename, loader_flags, convert_flags = case
    onnx_path = model_path(examples_dir, where, filename)
    ovc = tmp_path / "model.ovc"
    run = run_parity("convert", onnx_path, "--openvino", "--ov-precision", precision, *convert_flags, "-o", ovc,
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    assert not list(tmp_path.glob("*.parity-tmp-*")), "the temp file of the atomic write was left behind"
    direct = run_parity("run", onnx_path, "--openvino", "--ov-precision", precision, *convert_flags, *loader_flags,
                        "--save-inputs", tmp_path / "inputs.json", "--save-outputs", tmp_path / "direct.json",
                        timeout=RUN_TIMEOUT)
    assert direct.returncode == 0, direct.describe()
    from_file = run_parity("run", ovc, "--openvino", "--load-inputs", tmp_path / "inputs.json", "--save-outputs",
                           tmp_path / "from_file.json", timeout=RUN_TIMEOUT)
    assert from_file.returncode == 0, from_file.describe()
    assert f"imported {ovc} for CPU | inference precision: {precision}" in from_file.output
    expected, got = outputs_of(tmp_path / "direct.json"), outputs_of(tmp_path / "from_file.json")
    assert len(expected) == len(got) == 1
    assert expected[0].keys() == got[0].keys()
    for name in expected[0]:
        assert expected[0][name].dtype == got[0][name].dtype and expected[0][name].shape == got[0][name].shape
        assert expected[0][name].tobytes() == got[0][name].tobytes(), f"{name} differs"
    # Compared with saved results, as for ONNX models (the data loader reads the header's inputs).
    compared = run_parity("run", ovc, "--openvino", *loader_flags, "--load-outputs", tmp_path / "direct.json",
                          "--atol", "0", "--rtol", "0", timeout=RUN_TIMEOUT)
    assert compared.returncode == 0, compared.describe()
    assert "PASSED | All outputs matched" in compared.output


def test_header_describes_the_compiled_model(run_parity, examples_dir, tmp_path):
    import openvino
    ovc = tmp_path / "small_if.ovc"
    onnx_path = examples_dir / "small_if.onnx"
    run = run_parity("convert", onnx_path, "--openvino", "--ov-precision", "bf16", "--ov-min-shapes", "x:[1,4]",
                     "--ov-max-shapes", "x:[8,4]", "-o", ovc)
    assert run.returncode == 0, run.describe()
    header = header_of(ovc)
    assert header[0] == "PARITY-OPENVINO-COMPILED-MODEL 2"
    fields = dict(line.split(" ", 1) for line in header[1:])
    assert fields["openvino-version"] == openvino.get_version()
    assert fields["device"] == "CPU"
    assert fields["inference-precision"] == "bf16"
    # FNV-1a 64 of the ONNX file's bytes.
    value = 0xcbf29ce484222325
    for byte in onnx_path.read_bytes():
        value = ((value ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    assert fields["source-model-hash"] == f"fnv1a64:{value:016x}"
    inputs = [line for line in header if line.startswith("input ")]
    assert inputs == ["input 1 1..8,4 x"], header
    # FNV-1a 64 of the ONNX node map's JSON.
    value = 0xcbf29ce484222325
    for byte in fields["onnx-map"].encode():
        value = ((value ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    assert fields["onnx-map-hash"] == f"fnv1a64:{value:016x}"


def test_inputs_outside_the_files_bounds_are_refused(run_parity, examples_dir, tmp_path):
    ovc = tmp_path / "small_if.ovc"
    assert run_parity("convert", examples_dir / "small_if.onnx", "--openvino", "--ov-min-shapes", "x:[1,4]",
                      "--ov-max-shapes", "x:[8,4]", "-o", ovc).returncode == 0
    run = run_parity("run", ovc, "--openvino", "--input-shapes", "x:[9,4]")
    assert run.returncode == 1, run.describe()
    assert "input 'x' has shape (9, 4), outside the bounds the model was compiled for" in single_error_line(run)


def rewrite(source, target, change):
    target.write_bytes(change(source.read_bytes()))
    return target


def flip_a_byte_near_the_end(data):
    data = bytearray(data)
    data[-100] ^= 0xFF
    return bytes(data)


def garbage_with_a_valid_header(data):
    """The header's hash updated for garbage bytes: only OpenVINO can tell."""
    end = data.index(b"\nend\n") + len(b"\nend\n")
    header, garbage = data[:end].decode(), b"\x01not a compiled model" * 40
    value = 0xcbf29ce484222325
    for byte in garbage:
        value = ((value ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    lines = []
    for line in header.splitlines():
        if line.startswith("compiled-bytes "):
            line = f"compiled-bytes {len(garbage)}"
        elif line.startswith("compiled-hash "):
            line = f"compiled-hash fnv1a64:{value:016x}"
        lines.append(line)
    return ("\n".join(lines) + "\n").encode() + garbage


def other_openvino_version(data):
    import openvino
    version = openvino.get_version().encode()
    assert b"openvino-version " + version in data
    return data.replace(b"openvino-version " + version, b"openvino-version 2024.0.0-1-old", 1)


BAD_FILES = [
    ("other_version", other_openvino_version, "compiled by OpenVINO 2024.0.0-1-old, but the OpenVINO loaded is"),
    ("truncated", lambda data: data[: len(data) // 2], "truncated compiled model file"),
    ("truncated_header", lambda data: data[:60], "truncated or damaged compiled model file: its header has no end"),
    ("corrupt", flip_a_byte_near_the_end, "corrupt compiled model file: its compiled bytes hash to"),
    ("not_compiled", lambda data: b"hello, world\n", "not a compiled OpenVINO model file"),
    ("future_format", lambda data: data.replace(b"COMPILED-MODEL 2\n", b"COMPILED-MODEL 9\n", 1),
     "compiled model file format version 9, this Parity reads versions 1 to 2"),
    ("garbage_openvino_rejects", garbage_with_a_valid_header, "OpenVINO cannot import the compiled model"),
]


@pytest.mark.parametrize("case", BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_bad_files_one_clear_error(run_parity, small_cnn_ovc, tmp_path, case):
    name, change, message = case
    bad = rewrite(small_cnn_ovc, tmp_path / f"{name}.ovc", change)
    run = run_parity("run", bad, "--openvino")
    assert run.returncode == 1, run.describe()
    error = single_error_line(run)
    assert str(bad) in error and message in error, error


def test_an_onnx_model_named_ovc_is_not_a_compiled_model(run_parity, examples_dir, tmp_path):
    bad = tmp_path / "model.ovc"
    bad.write_bytes((examples_dir / "small_cnn.onnx").read_bytes())
    run = run_parity("run", bad, "--openvino")
    assert run.returncode == 1, run.describe()
    assert "not a compiled OpenVINO model file" in single_error_line(run)


@pytest.mark.parametrize("flags, message", [
    (["--ref"], "is a compiled OpenVINO model, which only --openvino runs"),
    (["--ov-precision", "f32"], "--ov-precision cannot apply to it (give them to `parity convert`)"),
    (["--ov-outputs", "mark", "all"], "--ov-outputs/--ov-exclude-outputs cannot apply to it"),
    (["--onnx-outputs", "mark", "all"], "--onnx-outputs and --onnx-exclude-outputs need the ONNX model"),
])
def test_options_that_need_the_onnx_model_are_refused(run_parity, small_cnn_ovc, flags, message):
    run = run_parity("run", small_cnn_ovc, "--openvino", *flags)
    assert run.returncode == 1, run.describe()
    assert message in single_error_line(run)


def test_convert_refuses_marked_outputs_and_fp16_options(run_parity, examples_dir, tmp_path):
    run = run_parity("convert", examples_dir / "small_cnn.onnx", "--openvino", "--ov-outputs", "mark", "all", "-o",
                     tmp_path / "m.ovc")
    assert run.returncode == 1, run.describe()
    assert "a compiled model file marks no tensors" in single_error_line(run)
    run = run_parity("convert", examples_dir / "small_cnn.onnx", "--openvino", "--keep-fp32", "Softmax", "-o",
                     tmp_path / "m.ovc")
    assert run.returncode == 1, run.describe()
    assert "apply to --fp-to-fp16/--fp-to-bf16 only" in single_error_line(run)
    assert not (tmp_path / "m.ovc").exists()
