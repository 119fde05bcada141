"""Compiled OpenVINO model files: `parity convert model.onnx --openvino -o model.ovc`, then
`parity run model.ovc --openvino` without the ONNX file.

- A converted model run from its file gives bit-identical outputs to a direct run of the ONNX model
  at the same precision, on the same inputs (--load-inputs), and compares with saved results.
- The header names the OpenVINO version, device, precision, inputs/outputs and the source hash.
- Bad files (another OpenVINO version, truncated, corrupt, not a compiled model, bytes OpenVINO
  cannot import): one clear error naming the file, exit 1, no crash.
- The header is hashed (format version 3): an edited line (an input added, renamed, reshaped) is
  refused before OpenVINO loads; a version 2 file, which had no header hash, is still read, and its
  inputs are checked against the compiled model's at import.
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
    assert header[0] == "PARITY-OPENVINO-COMPILED-MODEL 3"
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
    # The last line: FNV-1a 64 of every header byte before it.
    assert header[-1].startswith("header-hash ")
    assert header[-1] == "header-hash " + fnv1a64(("\n".join(header[:-1]) + "\n").encode())


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


def fnv1a64(data):
    value = 0xcbf29ce484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"fnv1a64:{value:016x}"


def split_file(data):
    """(header lines without 'end', compiled bytes)"""
    end = data.index(b"\nend\n")
    return data[:end].decode().splitlines(), data[end + len(b"\nend\n"):]


def join_file(lines, compiled, rehash=True):
    """A file of `lines` (a format version 3 header-hash line recomputed when `rehash`) and `compiled`."""
    if rehash:
        lines = [line for line in lines if not line.startswith("header-hash ")]
        lines.append("header-hash " + fnv1a64(("\n".join(lines) + "\n").encode()))
    return ("\n".join(lines) + "\nend\n").encode() + compiled


def garbage_with_a_valid_header(data):
    """The header's hashes updated for garbage bytes: only OpenVINO can tell."""
    lines, _ = split_file(data)
    garbage = b"\x01not a compiled model" * 40
    lines = [f"compiled-bytes {len(garbage)}" if line.startswith("compiled-bytes ") else
             f"compiled-hash {fnv1a64(garbage)}" if line.startswith("compiled-hash ") else line for line in lines]
    return join_file(lines, garbage)


def with_phantom_inputs(data, count=1000, rehash=False):
    """`count` input lines added after the real ones (the edit issue 39 found accepted)."""
    lines, compiled = split_file(data)
    last = max(i for i, line in enumerate(lines) if line.startswith("input "))
    phantom = [f"input 1 1,4 phantom_{i}" for i in range(count)]
    return join_file(lines[:last + 1] + phantom + lines[last + 1:], compiled, rehash)


def as_format_version_2(data):
    """The file as format version 2 wrote it: no header-hash line."""
    lines, compiled = split_file(data)
    lines = [line for line in lines if not line.startswith("header-hash ")]
    lines[0] = lines[0].replace("COMPILED-MODEL 3", "COMPILED-MODEL 2")
    return join_file(lines, compiled, rehash=False)


def with_an_input_listed_twice(data):
    lines, compiled = split_file(data)
    [first] = [i for i, line in enumerate(lines) if line.startswith("input ")]
    return join_file(lines[:first + 1] + lines[first:], compiled)


def with_a_line_after_the_header_hash(data):
    lines, compiled = split_file(data)
    return join_file(lines + ["device CPU"], compiled, rehash=False)


def with_input_renamed(data):
    lines, compiled = split_file(data)
    lines = [line[:line.rindex(" ")] + " renamed" if line.startswith("input ") else line for line in lines]
    return join_file(lines, compiled)


def other_openvino_version(data):
    import openvino
    version = openvino.get_version().encode()
    assert b"openvino-version " + version in data
    lines, compiled = split_file(data.replace(b"openvino-version " + version, b"openvino-version 2024.0.0-1-old", 1))
    return join_file(lines, compiled)  # as that version would have written it: the header hash matches


BAD_FILES = [
    ("other_version", other_openvino_version, "compiled by OpenVINO 2024.0.0-1-old, but the OpenVINO loaded is"),
    ("truncated", lambda data: data[: len(data) // 2], "truncated compiled model file"),
    ("truncated_header", lambda data: data[:60], "truncated or damaged compiled model file: its header has no end"),
    ("corrupt", flip_a_byte_near_the_end, "corrupt compiled model file: its compiled bytes hash to"),
    ("not_compiled", lambda data: b"hello, world\n", "not a compiled OpenVINO model file"),
    ("future_format", lambda data: data.replace(b"COMPILED-MODEL 3\n", b"COMPILED-MODEL 9\n", 1),
     "compiled model file format version 9, this Parity reads versions 1 to 3"),
    ("garbage_openvino_rejects", garbage_with_a_valid_header, "OpenVINO cannot import the compiled model"),
    # Header edits: refused by the header hash (version 3), or by the check against the compiled
    # model (a version 2 file, or a version 3 file whose hash was recomputed).
    ("phantom_inputs", with_phantom_inputs,
     "corrupt compiled model file: its header hashes to"),
    ("phantom_inputs_rehashed", lambda data: with_phantom_inputs(data, rehash=True),
     "the header's inputs ('image' [dtype=float32, shape=(None, 3, 32, 32)], 'phantom_0' [dtype=float32, shape=(1, "
     "4)], 'phantom_1'"),
    ("phantom_inputs_version_2", lambda data: with_phantom_inputs(as_format_version_2(data)),
     "... (1001 in all)) are not the compiled model's ('image' [dtype=float32, shape=(None, 3, 32, 32)]): the header "
     "was edited or damaged; convert the ONNX model again"),
    ("input_renamed_rehashed", with_input_renamed,
     "the header's inputs ('renamed' [dtype=float32, shape=(None, 3, 32, 32)]) are not the compiled model's ('image'"),
    ("input_listed_twice", with_an_input_listed_twice, "damaged compiled model header: input 'image' is listed twice"),
    ("header_hash_not_last", with_a_line_after_the_header_hash, "format version 3 ends with a header-hash line"),
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
