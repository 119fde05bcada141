"""Hostile or careless output paths, files and flags (issue 39): every output path that is not a
plain regular file is written the way a shell redirect would write it, never replaced; a failed
save leaves what was there; bad flags and files end with one clear "[E]" line and exit code 1.

Every model and file is built here, in tmp_path; none is committed.
"""

import json
import os
import stat
import threading
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from hostile_models import endless_loop_model_bytes

REPO_ROOT = Path(__file__).resolve().parents[2]
SMALL_CNN = REPO_ROOT / "examples" / "models" / "small_cnn.onnx"


def assert_one_error(run, *names):
    """Exit code 1, no crash, exactly one [E] line, naming each of `names`."""
    assert run.returncode >= 0, f"killed by signal {-run.returncode}\n{run.describe()}"
    assert not run.crash_markers(), f"crash markers {run.crash_markers()}\n{run.describe()}"
    assert run.returncode == 1, f"expected exit code 1\n{run.describe()}"
    errors = run.lines("[E]")
    assert len(errors) == 1, f"expected exactly one [E] line, got {len(errors)}\n{run.describe()}"
    for name in names:
        assert str(name) in errors[0], f"the [E] line does not name {name}\n{run.describe()}"
    return errors[0]


# --- item 1: output paths that are symbolic links, FIFOs and devices ----------------------------
# Each writer: the flags that make `parity` write the file at PATH, and how to read what it wrote.
OUTPUT_WRITERS = {
    "save_inputs": (("run", SMALL_CNN, "--ref", "--save-inputs", "PATH"), "json"),
    "save_outputs": (("run", SMALL_CNN, "--ref", "--save-outputs", "PATH"), "json"),
    "sanitize": (("surgeon", "sanitize", SMALL_CNN, "-o", "PATH"), "onnx"),
}


def writer_args(writer, path):
    return [path if arg == "PATH" else arg for arg in OUTPUT_WRITERS[writer][0]]


def read_written(writer, data: bytes):
    """What the file holds, in a form that compares equal between two runs of the same command."""
    if OUTPUT_WRITERS[writer][1] == "json":
        parsed = json.loads(data)
        # RunResults name the runner with the time it ran: compare the arrays only.
        text = json.dumps(parsed, sort_keys=True)
        return "".join(ch for ch in text if not ch.isdigit()) if writer == "save_outputs" else text
    model = onnx.load_from_string(data)
    return [numpy_helper.to_array(t).tobytes() for t in model.graph.initializer]


@pytest.mark.parametrize("writer", list(OUTPUT_WRITERS))
def test_symlinked_output_writes_the_target_and_keeps_the_link(run_parity, tmp_path, writer):
    plain = tmp_path / f"plain.{OUTPUT_WRITERS[writer][1]}"
    run = run_parity(*writer_args(writer, plain))
    assert run.returncode == 0, run.describe()

    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / plain.name
    target.write_bytes(b"stale")
    (tmp_path / "links").mkdir()
    link = tmp_path / "links" / plain.name
    link.symlink_to(Path("..") / "real" / plain.name)  # relative to the link's folder, not the cwd
    run = run_parity(*writer_args(writer, link))
    assert run.returncode == 0, run.describe()
    assert link.is_symlink(), f"the link was replaced by a regular file\n{run.describe()}"
    assert os.readlink(link) == str(Path("..") / "real" / plain.name)
    assert read_written(writer, target.read_bytes()) == read_written(writer, plain.read_bytes()), \
        f"the link's target was not written\n{run.describe()}"
    leftovers = [p.name for p in tmp_path.rglob("*parity-tmp*")]
    assert not leftovers, f"temp files left behind: {leftovers}"


def test_dangling_symlink_output_creates_its_target(run_parity, tmp_path):
    link = tmp_path / "inputs.json"
    link.symlink_to("created.json")
    run = run_parity(*writer_args("save_inputs", link))
    assert run.returncode == 0, run.describe()
    assert link.is_symlink() and (tmp_path / "created.json").is_file(), run.describe()
    json.loads((tmp_path / "created.json").read_bytes())


def test_symlink_loop_output_is_one_clear_error(run_parity, tmp_path):
    (tmp_path / "a.json").symlink_to("b.json")
    (tmp_path / "b.json").symlink_to("a.json")
    run = run_parity(*writer_args("save_inputs", tmp_path / "a.json"))
    assert_one_error(run, "a.json")


@pytest.mark.parametrize("writer", list(OUTPUT_WRITERS))
def test_fifo_output_is_written_through(run_parity, tmp_path, writer):
    plain = tmp_path / f"plain.{OUTPUT_WRITERS[writer][1]}"
    run = run_parity(*writer_args(writer, plain))
    assert run.returncode == 0, run.describe()

    fifo = tmp_path / f"fifo.{OUTPUT_WRITERS[writer][1]}"
    os.mkfifo(fifo)
    received = []

    def read_fifo():
        with open(fifo, "rb") as reader:  # blocks until the writer opens it
            received.append(reader.read())

    reader = threading.Thread(target=read_fifo, daemon=True)
    reader.start()
    try:
        run = run_parity(*writer_args(writer, fifo), timeout=60)
    finally:
        if reader.is_alive():  # the writer never opened the FIFO: release the reader
            with open(fifo, "wb"):
                pass
        reader.join(10)
    assert run.returncode == 0, run.describe()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), f"the FIFO was replaced\n{run.describe()}"
    assert received and read_written(writer, received[0]) == read_written(writer, plain.read_bytes()), \
        f"the FIFO's reader got {len(received[0]) if received else 0} bytes\n{run.describe()}"


def test_character_device_output_is_written_through_not_replaced(run_parity, tmp_path):
    """`--save-inputs /dev/null` must leave /dev/null the system's character device. As root a
    broken writer would replace it, so the same write first goes to a copy of /dev/null's device
    node made in tmp_path (mknod, root only); /dev/null is written only when that copy survives.
    Without root, /dev cannot be replaced and the write to /dev/null is harmless either way."""
    null = os.stat("/dev/null")
    assert stat.S_ISCHR(null.st_mode)
    if os.geteuid() == 0:
        copy = tmp_path / "null"
        os.mknod(copy, stat.S_IFCHR | 0o666, null.st_rdev)
        run = run_parity(*writer_args("save_inputs", copy))
        assert run.returncode == 0, run.describe()
        after = os.lstat(copy)
        assert stat.S_ISCHR(after.st_mode) and after.st_rdev == null.st_rdev, \
            f"the device node was replaced by a regular file of {after.st_size} bytes\n{run.describe()}"
    for writer in ("save_inputs", "save_outputs"):
        run = run_parity(*writer_args(writer, "/dev/null"))
        assert run.returncode == 0, run.describe()
        after = os.lstat("/dev/null")
        assert stat.S_ISCHR(after.st_mode) and after.st_rdev == null.st_rdev, \
            f"/dev/null is no longer the character device\n{run.describe()}"


def test_full_device_output_is_one_clear_error(run_parity, tmp_path):
    """/dev/full (writes fail with ENOSPC) is written to and the failure reported, never replaced."""
    full = os.stat("/dev/full")
    if os.geteuid() == 0:  # the same guard as for /dev/null above
        copy = tmp_path / "full"
        os.mknod(copy, stat.S_IFCHR | 0o666, full.st_rdev)
        assert_one_error(run_parity("run", SMALL_CNN, "--ref", "--gen-script", copy), "full")
        assert stat.S_ISCHR(os.lstat(copy).st_mode), "the device node was replaced by a regular file"
    assert_one_error(run_parity("run", SMALL_CNN, "--ref", "--gen-script", "/dev/full"), "/dev/full")
    after = os.lstat("/dev/full")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == full.st_rdev


def test_directory_output_is_one_clear_error(run_parity, tmp_path):
    folder = tmp_path / "outputs.json"
    folder.mkdir()
    assert_one_error(run_parity(*writer_args("save_outputs", folder)), "outputs.json")
    assert folder.is_dir()


# --- item 2: a failed in-place save with external data ------------------------------------------
def external_data_model(folder, one_file):
    """m.onnx: y = x + small + big + inline_0 + ... + inline_7, with `small` (128 bytes) and `big`
    (64 KiB) external and eight 60 KiB tensors inline. With `one_file`, both are in m.onnx.data at
    offsets 0 and 128 as onnx writes them (no alignment): saved again with a 64 KiB threshold,
    `small` moves inline and `big` to offset 0 of a new m.onnx.data, which the old model would read
    at the wrong offsets. Without, each is in a file named after it, the files a save with
    --no-save-all-tensors-to-one-file writes again. The model file (8 x 60 KiB) is larger than its
    data (64 KiB), so a per-file size limit between the two fails the model's write after the
    data's has succeeded."""
    rng = np.random.default_rng(39)
    small = rng.standard_normal(32).astype(np.float32)
    big = rng.standard_normal(16384).astype(np.float32)
    if one_file:
        (folder / "m.onnx.data").write_bytes(small.tobytes() + big.tobytes())
        places = (("m.onnx.data", 0), ("m.onnx.data", small.nbytes))
    else:
        (folder / "small").write_bytes(small.tobytes())
        (folder / "big").write_bytes(big.tobytes())
        places = (("small", 0), ("big", 0))
    external = []
    for (name, array), (location, offset) in zip((("small", small), ("big", big)), places):
        tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[array.size])
        for key, value in (("location", location), ("offset", str(offset)), ("length", str(array.nbytes))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        tensor.data_location = TensorProto.EXTERNAL
        external.append(tensor)
    inline = [numpy_helper.from_array(rng.standard_normal(15360).astype(np.float32), f"inline_{i}")
              for i in range(8)]
    # x has 32 elements: `big` and the inline tensors enter through a ReduceSum each, so every
    # weight reaches the output.
    nodes, total = [helper.make_node("Add", ["x", "small"], ["sum_0"])], "sum_0"
    for i, name in enumerate(["big"] + [t.name for t in inline]):
        nodes.append(helper.make_node("ReduceSum", [name], [f"r_{i}"], keepdims=1))
        nodes.append(helper.make_node("Add", [total, f"r_{i}"], [f"sum_{i + 1}"]))
        total = f"sum_{i + 1}"
    nodes.append(helper.make_node("Identity", [total], ["y"]))
    graph = helper.make_graph(nodes, "external", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32])],
                              initializer=external + inline)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = folder / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def run_with_file_size_limit(parity_bin, args, limit):
    """Runs parity with RLIMIT_FSIZE = limit bytes (writes past it fail with EFBIG; SIGXFSZ ignored,
    which the child keeps across exec)."""
    import resource
    import signal
    import subprocess

    from conftest import Run

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    command = [str(parity_bin), *map(str, args)]
    completed = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
                               preexec_fn=limit_file_size, env=dict(os.environ, NO_COLOR="1"))
    return Run(completed.returncode, completed.stdout.decode(errors="replace"),
               completed.stderr.decode(errors="replace"), tuple(command))


def reference_outputs(run_parity, model, folder, tag):
    inputs, outputs = folder / "inputs.json", folder / f"outputs_{tag}.json"
    if not inputs.exists():
        run = run_parity("run", model, "--ref", "--save-inputs", inputs)
        assert run.returncode == 0, run.describe()
    run = run_parity("run", model, "--ref", "--load-inputs", inputs, "--save-outputs", outputs)
    assert run.returncode == 0, f"{model.name} does not run\n{run.describe()}"
    results = json.loads(outputs.read_text())
    return json.dumps(results["lst"][0][1][0]["outputs"], sort_keys=True)


@pytest.mark.parametrize("one_file", [True, False], ids=["one_data_file", "file_per_tensor"])
def test_failed_in_place_save_with_external_data_keeps_the_old_model(parity_bin, run_parity, tmp_path, one_file):
    folder = tmp_path / "model"
    folder.mkdir()
    model = external_data_model(folder, one_file)
    before = reference_outputs(run_parity, model, tmp_path, "before")
    files_before = {p.name: p.read_bytes() for p in folder.iterdir()}

    save = ["surgeon", "sanitize", model, "--save-external-data", "--external-data-size-threshold", "64K",
            "-o", model] + ([] if one_file else ["--no-save-all-tensors-to-one-file"])
    run = run_with_file_size_limit(parity_bin, save, 256 * 1024)
    assert_one_error(run, "m.onnx")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == files_before, \
        f"the failed save changed the model's folder: {sorted(p.name for p in folder.iterdir())}\n{run.describe()}"
    assert reference_outputs(run_parity, model, tmp_path, "after_failure") == before

    # Control: the same save without the limit succeeds, and the saved model gives the same outputs.
    run = run_parity(*save)
    assert run.returncode == 0, run.describe()
    assert reference_outputs(run_parity, model, tmp_path, "after_save") == before


# --- item 10: NaN tolerances ----------------------------------------------------------------------
@pytest.mark.parametrize("flags", [("--atol", "nan"), ("--rtol", "NaN"), ("--atol", "1e-3", "--rtol", "-nan"),
                                   ("--atol", "probabilities:nan"), ("--rtol", "1e-3", "probabilities:nan")],
                         ids=["atol", "rtol", "negative_nan", "atol_per_output", "rtol_per_output"])
def test_nan_tolerance_is_refused(run_parity, flags):
    """A NaN tolerance passes every comparison (the failure test `difference > NaN` is false), so
    outputs 100x apart would be called equal: refused before anything runs."""
    run = run_parity("run", SMALL_CNN, "--ref", "--onnxrt", *flags)
    flag = "--atol" if "nan" in flags[1].lower() and flags[0] == "--atol" else "--rtol"
    error = assert_one_error(run, flag)
    assert "nan" in error.lower(), run.describe()
    assert "Completed" not in run.output and "PASSED" not in run.output, f"the runners ran\n{run.describe()}"


# --- item 6: count flags out of range ---------------------------------------------------------------
@pytest.mark.parametrize("flags", [("--onnxrt", "--ort-intra-op-threads", "1000000"),
                                   ("--onnxrt", "--ort-intra-op-threads", "-1"),
                                   ("--openvino", "--ov-threads", "1000000"),
                                   ("--openvino", "--ov-threads", "-2")],
                         ids=["ort_intra_huge", "ort_intra_negative", "ov_threads_huge", "ov_threads_negative"])
def test_thread_count_out_of_range_is_one_clear_error(run_parity, flags):
    """A backend asked for a million threads failed inside it (std::system_error, exit 134) or
    ran for minutes: refused before anything runs, the allowed range named."""
    run = run_parity("run", SMALL_CNN, *flags, timeout=60)
    error = assert_one_error(run, flags[1], flags[2])
    limit = 4 * os.cpu_count()
    assert f"between 0 (the backend's default) and {limit}" in error, run.describe()
    assert "Completed" not in run.output, f"the runner ran\n{run.describe()}"


def test_thread_count_at_the_limit_runs(run_parity):
    """Control: the largest allowed count runs."""
    run = run_parity("run", SMALL_CNN, "--onnxrt", "--ort-intra-op-threads", str(4 * os.cpu_count()), timeout=120)
    assert run.returncode == 0, run.describe()


@pytest.mark.parametrize("flags", [("--iterations", "-1"), ("--warm-up", "-3")])
def test_negative_iteration_counts_are_one_clear_error(run_parity, flags):
    assert_one_error(run_parity("run", SMALL_CNN, "--ref", *flags), flags[0])


# --- item 4: deeply nested JSON -------------------------------------------------------------------
DEEP = 100_000  # levels; the recursive copy of a parsed document overflowed the stack (SIGSEGV)


def deep_json(kind):
    nested = "[" * DEEP + "]" * DEEP
    return {
        "replay": '{"steps": [' + nested + '], "model_nodes": []}',
        "inputs": '[{"x": {"polygraphy_class": "ndarray", "array": ' + nested + '}}]',
        "objects": '[{"x": ' + '{"a": ' * DEEP + "1" + "}" * DEEP + "}]",
        "run_results": '{"lst": [' + nested + '], "polygraphy_class": "RunResults"}',
    }[kind]


DEEP_JSON_READERS = {
    "debug_reduce_replay": ("replay", ("debug", "reduce", SMALL_CNN, "-o", "OUT", "--onnxrt",
                                       "--load-debug-replay", "PATH")),
    "inspect_data": ("inputs", ("inspect", "data", "PATH")),
    "inspect_data_objects": ("objects", ("inspect", "data", "PATH")),
    "data_to_input": ("objects", ("data", "to-input", "PATH", "-o", "OUT")),
    "run_load_inputs": ("inputs", ("run", SMALL_CNN, "--ref", "--load-inputs", "PATH")),
    "run_load_outputs": ("run_results", ("run", SMALL_CNN, "--ref", "--load-outputs", "PATH")),
    "inspect_data_run_results": ("run_results", ("inspect", "data", "PATH")),
}


@pytest.mark.parametrize("reader", list(DEEP_JSON_READERS))
def test_deeply_nested_json_is_one_clear_error(run_parity, tmp_path, reader):
    kind, args = DEEP_JSON_READERS[reader]
    path = tmp_path / f"deep_{kind}.json"
    path.write_text(deep_json(kind))
    args = [path if a == "PATH" else tmp_path / "out" if a == "OUT" else a for a in args]
    error = assert_one_error(run_parity(*args, timeout=120), path.name)
    assert "nested deeper than 1024 levels" in error


def test_json_at_the_depth_limit_is_read(run_parity, tmp_path):
    """Control: 1024 levels pass the limit (the file is then refused for what it holds, not its depth)."""
    path = tmp_path / "limit.json"
    path.write_text("[" * 1024 + "]" * 1024)
    run = run_parity("inspect", "data", path)
    assert "nested deeper" not in run.output and not run.crash_markers(), run.describe()


# --- item 11: names of 4,096 characters and more ------------------------------------------------------
def long_name_run_results(path, runner_name, output_name, values):
    """A RunResults file written by Polygraphy (the peer) with one runner, one iteration, one output."""
    from polygraphy.comparator import RunResults
    from polygraphy.comparator.struct import IterationResult
    results = RunResults()
    results.append((runner_name, [IterationResult({output_name: values}, runner_name=runner_name)]))
    results.save(str(path))
    return path


@pytest.mark.parametrize("length", [4096, 20000])
def test_long_names_survive_run_results_and_data_to_input(run_parity, tmp_path, length):
    """The RunResults reader sets strings of 4,096+ characters aside before parsing (the base64
    arrays); names that long came back as its placeholder `parity-long-string-<random>-0`."""
    output_name = ("o" * length)[:-3] + "end"
    runner_name = ("r" * length)[:-3] + "end"
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    path = long_name_run_results(tmp_path / "outputs.json", runner_name, output_name, values)

    run = run_parity("inspect", "data", path, "--show-values")
    assert run.returncode == 0, run.describe()
    assert output_name in run.stdout and runner_name in run.stdout, f"names lost\n{run.describe()[:3000]}"
    assert "parity-long-string" not in run.output

    converted = tmp_path / "inputs.json"
    run = run_parity("data", "to-input", path, "-o", converted)
    assert run.returncode == 0, run.describe()
    from polygraphy.json import load_json
    feeds = load_json(str(converted))
    assert [list(feed) for feed in feeds] == [[output_name]], f"keys: {[k[:40] for f in feeds for k in f]}"
    assert np.array_equal(feeds[0][output_name], values)


# --- item 7: signals during a save ------------------------------------------------------------------
def big_output_model(path, elements):
    """y = x + zeros(elements): a float32 output of `elements` values, so that saving it takes a while."""
    graph = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["shape"], ["zeros"]),
         helper.make_node("Add", ["x", "zeros"], ["y"])], "big_output",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [elements])],
        initializer=[numpy_helper.from_array(np.array([elements], np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_signal_during_save_removes_the_temp_file(parity_bin, tmp_path, signal_name):
    """The signal arrives while `--save-outputs` writes its temp file (watched for, then sent):
    the process ends by that signal, as before, and leaves no `*.parity-tmp-*` file."""
    import signal
    import subprocess
    import time

    model = big_output_model(tmp_path / "big.onnx", 64 * 1024 * 1024)  # 256 MB of float32, ~350 MB of JSON
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    def default_dispositions():
        # A shell that starts the tests in the background leaves SIGINT ignored, and an ignored
        # signal stays ignored in the child (Parity then rightly keeps saving): start from the default.
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_DFL)

    process = subprocess.Popen([str(parity_bin), "run", model, "--ref", "--save-outputs", out_dir / "outputs.json"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               preexec_fn=default_dispositions)
    try:
        seen = None
        while process.poll() is None and not seen:
            seen = next(out_dir.glob("*.parity-tmp-*"), None)
            time.sleep(0.001)
        assert seen, f"the save ended before its temp file was seen (exit code {process.returncode})"
        process.send_signal(getattr(signal, signal_name))
        returncode = process.wait(60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert returncode == -getattr(signal, signal_name), f"exit status {returncode}"
    assert not list(out_dir.iterdir()), f"left behind: {[p.name for p in out_dir.iterdir()]}"


# --- item 7: a Loop that would run for ever -------------------------------------------------------------
def endless_loop_model(path):
    """hostile_models' endless Loop, written to path."""
    path.write_bytes(endless_loop_model_bytes())
    return path


def test_ref_max_loop_iterations_stops_an_endless_loop(run_parity, tmp_path):
    model = endless_loop_model(tmp_path / "endless.onnx")
    run = run_parity("run", model, "--ref", "--ref-max-loop-iterations", "1000", timeout=60)
    error = assert_one_error(run, "endless", "--ref-max-loop-iterations")
    assert "ran 1000 iterations" in error and "is 1000" in error, run.describe()


def test_ref_max_loop_iterations_allows_a_loop_within_it(run_parity, tmp_path):
    """Control: the same loop with 10 trips runs under a limit of 10."""
    model = endless_loop_model(tmp_path / "endless.onnx")
    loaded = onnx.load(str(model))
    loaded.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array(10, np.int64), "trips"))
    onnx.save(loaded, str(model))
    run = run_parity("run", model, "--ref", "--ref-max-loop-iterations", "10", "--onnxrt")
    assert run.returncode == 0, run.describe()
