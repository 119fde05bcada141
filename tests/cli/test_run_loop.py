"""`parity run` over the library's Comparator: the model parsed once per command, a single runner's
unread intermediates streamed and dropped (still listed), --ort-profile, and the layerwise timing
line that bench/layerwise_overhead.py reads.
"""

import json
import re

import pytest

from conftest import blas_kernel_dependent, lines_with_prefix

RUN_TIMEOUT = 180


def output_listing(run):
    """The tensor names of the '---- Inference Output(s) ----' block."""
    text = run.stdout
    start = text.index("---- Inference Output(s) ----")
    block = text[start:].split("\n", 1)[1]
    body = block[: block.index("}") + 1]
    return [entry.strip().lstrip("{").split(" [")[0] for entry in body.split(",\n")]


@pytest.mark.parametrize("runners", [["--ref", "--onnxrt"], ["--onnxrt", "--onnxrt", "--onnx-outputs", "mark", "all"],
                                     ["--ref", "--onnxrt", "--check"]])
def test_the_model_is_parsed_once_per_command(run_parity, small_cnn, runners):
    run = run_parity("run", small_cnn, *runners, "--atol", "1e-4", "--rtol", "1e-3", timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    loads = [line for line in lines_with_prefix(run.output, "[I] ") if line.startswith("[I] Loading model:")]
    assert len(loads) == 1, run.describe()
    if "--check" in runners:
        checks = [line for line in lines_with_prefix(run.output, "[I] ") if "ONNX checker: the model is valid" in line]
        assert len(checks) == 1, run.describe()


@pytest.mark.parametrize("runner", ["--ref", "--onnxrt"])
def test_single_runner_mark_all_lists_every_tensor(run_parity, small_cnn, runner, tmp_path):
    dropped = run_parity("run", small_cnn, runner, "--onnx-outputs", "mark", "all", timeout=RUN_TIMEOUT)
    assert dropped.returncode == 0, dropped.describe()
    # The same run with the values kept (saved) lists the same tensors in the same order.
    saved = tmp_path / "outputs.json"
    kept = run_parity("run", small_cnn, runner, "--onnx-outputs", "mark", "all", "--save-outputs", saved,
                      timeout=RUN_TIMEOUT)
    assert kept.returncode == 0, kept.describe()
    names = output_listing(dropped)
    assert names == output_listing(kept), (dropped.describe(), kept.describe())
    assert names[0] == "probabilities" and "conv1_out" in names and "pool2_out" in names and len(names) == 11, names
    # A list of names is listed in the list's order, after the graph outputs.
    listed = run_parity("run", small_cnn, runner, "--onnx-outputs", "pool2_out", "conv1_out", timeout=RUN_TIMEOUT)
    assert listed.returncode == 0, listed.describe()
    assert output_listing(listed) == ["probabilities", "pool2_out", "conv1_out"], listed.describe()


def test_ort_profile_writes_a_trace(run_parity, small_cnn, tmp_path):
    prefix = tmp_path / "profile"
    run = run_parity("run", small_cnn, "--onnxrt", "--ort-profile", prefix, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    written = [line for line in lines_with_prefix(run.output, "[I] ") if "ONNX Runtime profile written to" in line]
    assert len(written) == 1, run.describe()
    path = written[0].split("written to ", 1)[1].strip()
    assert path.startswith(str(prefix)), path
    with open(path) as trace:
        events = json.load(trace)
    assert isinstance(events, list) and any(event.get("cat") == "Node" for event in events)


def test_ort_profile_needs_an_onnxrt_runner(run_parity, small_cnn, tmp_path):
    run = run_parity("run", small_cnn, "--ref", "--ort-profile", tmp_path / "p", timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    errors = lines_with_prefix(run.output, "[E] ")
    assert errors and "--ort-profile needs an ONNX Runtime runner (--onnxrt)" in errors[0], run.describe()
    assert not list(tmp_path.iterdir())


def test_layerwise_timing_is_logged_at_verbose_level(run_parity, small_cnn):
    quiet = run_parity("run", small_cnn, "--ref", "--onnxrt", "--onnx-outputs", "mark", "all", "--atol", "1e-4",
                       "--rtol", "1e-3", timeout=RUN_TIMEOUT)
    assert quiet.returncode == 0, quiet.describe()
    assert "Layerwise timing" not in quiet.output
    verbose = run_parity("run", small_cnn, "--ref", "--onnxrt", "--onnx-outputs", "mark", "all", "--atol", "1e-4",
                         "--rtol", "1e-3", "-v", timeout=RUN_TIMEOUT)
    assert verbose.returncode == 0, verbose.describe()
    timing = [line for line in lines_with_prefix(verbose.output, "[V] ") if "Layerwise timing |" in line]
    assert len(timing) == 1, verbose.describe()
    inference = float(timing[0].split("runners' own inference: ")[1].split(" s")[0])
    comparison = float(timing[0].split("logging): ")[1].split(" s")[0])
    assert inference > 0 and comparison > 0, timing[0]


@blas_kernel_dependent("the reference runner's Conv/Gemm results change with the BLAS thread count under "
                       "these kernels, so --threads 1 and 3 print different statistics")
def test_threads_do_not_change_the_numbers(run_parity, small_cnn):
    def comparison_lines(*extra):
        run = run_parity("run", small_cnn, "--ref", "--onnxrt", "--onnx-outputs", "mark", "all", "--atol", "1e-4",
                         "--rtol", "1e-3", *extra, timeout=RUN_TIMEOUT)
        assert run.returncode == 0, run.describe()
        # Runner names carry the time they were made (to the second): not part of the numbers.
        return [re.sub(r"-\d\d/\d\d/\d\d-\d\d:\d\d:\d\d", "", line) for line in run.stdout.splitlines()
                if "Stats:" in line or "Minimum Required Tolerance" in line]

    one = comparison_lines("--threads", "1")
    assert one and one == comparison_lines("--threads", "3")
    refused = run_parity("run", small_cnn, "--ref", "--threads", "0", timeout=RUN_TIMEOUT)
    assert refused.returncode != 0 and lines_with_prefix(refused.output, "[E] "), refused.describe()
