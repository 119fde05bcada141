"""Calibration takes a --data-loader-script's feeds as the script yields them (a pipe from its process,
tools/parity/args/python_scripts.cpp; the calibration pulls them, src/quantize/calibrator.cpp): the memory is
bounded by the feeds being run, not by how many the script yields, and a script that fails part way stops the
calibration with its own error and writes no model."""

import textwrap

import numpy as np

from conftest import lines_with_prefix
from int8_util import conv_chain_model
from run_util import peak_rss_bytes

FEEDS = 500
BATCH = 1024  # samples of [3, 8, 8] float32: 768 KiB a feed, 384 MiB in all


def write_big_feeds_script(path, fail_at=None):
    path.write_text(textwrap.dedent(f"""\
        import numpy as np

        def load_data():
            rng = np.random.default_rng(5)
            for index in range({FEEDS}):
                if index == {fail_at!r}:
                    raise ValueError("feed {fail_at} is unreadable")
                yield {{"x": rng.standard_normal(({BATCH}, 3, 8, 8), dtype=np.float32)}}
        """))
    return path


def test_memory_is_bounded_by_the_feeds_being_run_not_by_the_feeds_yielded(parity_bin, tmp_path):
    model = conv_chain_model(tmp_path / "chain.onnx")
    script = write_big_feeds_script(tmp_path / "calib.py")
    out = tmp_path / "q.onnx"
    total = FEEDS * BATCH * 3 * 8 * 8 * 4
    code, output, peak = peak_rss_bytes([parity_bin, "convert", model, "--int8", "--calibration-algo", "minmax",
                                         "--data-loader-script", script, "-o", out], tmp_path)
    assert code == 0, output
    assert f"Calibrating: {FEEDS}/{FEEDS} batches" in output, output
    assert out.is_file()
    # Holding the feeds would take all of `total` (384 MiB); streamed, a few feeds per runner are held.
    assert peak < total / 2, f"peak {peak / 2**20:.0f} MiB for {total / 2**20:.0f} MiB of feeds\n{output}"


def test_a_script_failing_part_way_stops_the_calibration_with_its_error(run_parity, tmp_path):
    model = conv_chain_model(tmp_path / "chain.onnx")
    script = write_big_feeds_script(tmp_path / "calib.py", fail_at=40)
    out = tmp_path / "q.onnx"
    result = run_parity("convert", model, "--int8", "--data-loader-script", script, "-o", out, timeout=300)
    assert result.returncode != 0, result.describe()
    errors = lines_with_prefix(result.output, "[E] ")
    assert len(errors) == 1, result.describe()
    assert "the script failed" in errors[0] and "ValueError: feed 40 is unreadable" in errors[0], errors[0]
    assert not out.exists()
    assert not list(tmp_path.glob("q.onnx*")), "a half-written model"


def test_a_script_yielding_nothing_is_named(run_parity, tmp_path):
    model = conv_chain_model(tmp_path / "chain.onnx")
    script = tmp_path / "empty.py"
    script.write_text("def load_data():\n    return iter(())\n")
    result = run_parity("convert", model, "--int8", "--data-loader-script", script, "-o", tmp_path / "q.onnx")
    assert result.returncode != 0, result.describe()
    errors = lines_with_prefix(result.output, "[E] ")
    assert len(errors) == 1 and "'load_data' gave no feeds" in errors[0], result.describe()


def test_the_scales_equal_those_of_the_same_feeds_from_a_file(run_parity, tmp_path):
    # The same 30 feeds through the script's pipe and through --load-inputs (a list): the same model.
    model = conv_chain_model(tmp_path / "chain.onnx")
    rng = np.random.default_rng(9)
    feeds = [{"x": rng.standard_normal((2, 3, 8, 8)).astype(np.float32)} for _ in range(30)]
    np.save(tmp_path / "feeds.npy", np.stack([f["x"] for f in feeds]))
    script = tmp_path / "calib.py"
    script.write_text("import numpy as np, os\n"
                      "def load_data():\n"
                      "    for x in np.load(os.path.join(os.path.dirname(__file__), 'feeds.npy')):\n"
                      "        yield {'x': x}\n")
    from polygraphy.json import save_json
    save_json(feeds, str(tmp_path / "feeds.json"))
    for name, flags in (("a", ["--data-loader-script", script]), ("b", ["--load-inputs", tmp_path / "feeds.json"])):
        result = run_parity("convert", model, "--int8", "--calibration-algo", "entropy", *flags,
                            "--calibration-cache", tmp_path / f"{name}.cache", "-o", tmp_path / f"{name}.onnx")
        assert result.returncode == 0, result.describe()
    assert (tmp_path / "a.cache").read_text() == (tmp_path / "b.cache").read_text()
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()


def test_a_script_writing_into_the_feeds_pipe_is_one_error(run_parity, tmp_path):
    # The driver passes the pipe's descriptor to the script's process (sys.argv[4]): a script that writes
    # there corrupts the records, which is one error naming the iteration, not a crash or a hang.
    model = conv_chain_model(tmp_path / "chain.onnx")
    script = tmp_path / "hostile.py"
    script.write_text("import os, sys\nimport numpy as np\n"
                      "def load_data():\n"
                      "    os.write(int(sys.argv[4]), b'\\xff' * 8 + b'garbage')\n"
                      "    yield {'x': np.zeros((2, 3, 8, 8), np.float32)}\n")
    result = run_parity("convert", model, "--int8", "--data-loader-script", script, "-o", tmp_path / "q.onnx")
    assert result.returncode != 0, result.describe()
    errors = lines_with_prefix(result.output, "[E] ")
    assert len(errors) == 1 and "iteration 0: a malformed record in the feeds' pipe" in errors[0], result.describe()
    assert not (tmp_path / "q.onnx").exists()


def test_the_script_starts_only_when_there_is_something_to_calibrate(run_parity, tmp_path):
    """`convert --int8` starts the script's process while it loads the model, unless the calibration cache
    it names exists (then nothing is calibrated and the script never runs)."""
    model = conv_chain_model(tmp_path / "chain.onnx")
    marker = tmp_path / "script_ran"
    script = tmp_path / "calib.py"
    script.write_text(textwrap.dedent(f"""\
        import pathlib
        import numpy as np

        pathlib.Path({str(marker)!r}).write_text("ran")

        def load_data():
            rng = np.random.default_rng(2)
            for _ in range(8):
                yield {{"x": rng.standard_normal((1, 3, 8, 8), dtype=np.float32)}}
        """))
    cache = tmp_path / "calib.cache"
    arguments = ["convert", model, "--int8", "--calibration-algo", "minmax", "--data-loader-script", script,
                 "--calibration-cache", cache]
    first = run_parity(*arguments, "-o", tmp_path / "q1.onnx")
    assert first.returncode == 0, first.describe()
    assert marker.is_file() and cache.is_file()
    marker.unlink()
    second = run_parity(*arguments, "-o", tmp_path / "q2.onnx")
    assert second.returncode == 0, second.describe()
    assert "read from the calibration cache" in second.output, second.output
    assert not marker.exists(), "the script ran although the calibration cache gave every scale"
    assert "Running data loader script" not in second.output, second.output
    assert (tmp_path / "q1.onnx").read_bytes() == (tmp_path / "q2.onnx").read_bytes()
