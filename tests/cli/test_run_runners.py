"""`parity run` end to end: exit codes, runners in command-line order, the Polygraphy-style log,
--compare-to, and the fp64 reference."""

from conftest import lines_with_prefix
from run_util import RUN_TIMEOUT, accumulation_model

# ---- exit codes, order, log ----

def test_ref_vs_onnxrt_passes_with_polygraphy_style_log(run_parity, small_cnn):
    run = run_parity("run", small_cnn, "--ref", "--onnxrt", "--atol", "1e-4", "--rtol", "1e-3", timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    info = lines_with_prefix(run.output, "[I] ")
    activations = [line for line in info if "| Activating and starting inference" in line]
    assert len(activations) == 2 and activations[0].startswith("[I] ref-runner-N0-") \
        and activations[1].startswith("[I] onnxrt-runner-N0-"), run.describe()
    assert any("| Completed 1 iteration(s) in" in line and "Average inference time:" in line
               and line.startswith("[I] ref-runner-N0-") for line in info), run.describe()
    assert "---- Inference Input(s) ----" in run.output and "{image [dtype=float32, shape=(1, 3, 32, 32)]}" in run.output
    assert any(line.startswith("[I] Accuracy Comparison | ref-runner-N0-") and "vs. onnxrt-runner-N0-" in line
               for line in info), run.describe()
    assert any("Accuracy Summary |" in line and "Passed: 1/1 iterations | Pass Rate: 100.0%" in line
               for line in info), run.describe()
    assert info[-1].startswith("[I] PASSED | Runtime: ") and "| Command: " in info[-1], run.describe()
    assert not lines_with_prefix(run.output, "[E] ")


def test_runners_run_in_command_line_order(run_parity, small_cnn):
    run = run_parity("run", small_cnn, "--onnxrt", "--ref", "--onnxrt", "--atol", "1e-4", "--rtol", "1e-3",
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    starts = [line.split()[1] for line in lines_with_prefix(run.output, "[I] ")
              if "| Activating and starting inference" in line]
    assert [s.split("-N")[0] for s in starts] == ["onnxrt-runner", "ref-runner", "onnxrt-runner"], starts
    assert starts[2].startswith("onnxrt-runner-N1-")
    pairs = [line for line in lines_with_prefix(run.output, "[I] ") if line.startswith("[I] Accuracy Comparison |")]
    assert len(pairs) == 2 and "onnxrt-runner-N0" in pairs[0] and "vs. ref-runner-N0" in pairs[0] \
        and "ref-runner-N0" in pairs[1] and "vs. onnxrt-runner-N1" in pairs[1], pairs


def test_compare_to_first_compares_every_runner_with_it(run_parity, small_cnn):
    run = run_parity("run", small_cnn, "--ref", "--onnxrt", "--onnxrt", "--compare-to", "first",
                     "--atol", "1e-4", "--rtol", "1e-3", timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    pairs = [line for line in lines_with_prefix(run.output, "[I] ") if line.startswith("[I] Accuracy Comparison |")]
    assert len(pairs) == 2 and all(line.rstrip().split(" vs. ")[1].startswith("ref-runner-N0") for line in pairs), pairs


def test_fp64_reference_vs_onnxrt_fails_at_zero_tolerance(run_parity, tmp_path):
    model = accumulation_model(tmp_path / "accumulate.onnx")
    run = run_parity("run", model, "--ref", "--ref-precision", "fp64", "--onnxrt", "--atol", "0", "--rtol", "0",
                     "--val-range", "[0,1]", timeout=RUN_TIMEOUT)
    assert run.returncode == 1, run.describe()
    errors = lines_with_prefix(run.output, "[E] ")
    assert any("FAILED | Output: 'y'" in line for line in errors), run.describe()
    assert errors[-1].startswith("[E] FAILED | Runtime: "), run.describe()
    assert not run.crash_markers()
    # The same two runners agree once the tolerance covers float32 accumulation error.
    ok = run_parity("run", model, "--ref", "--ref-precision", "fp64", "--onnxrt", "--atol", "1e-4", timeout=RUN_TIMEOUT)
    assert ok.returncode == 0, ok.describe()
