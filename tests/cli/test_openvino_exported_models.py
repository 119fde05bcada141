"""OpenVINO on models exported from PyTorch by both of torch's exporters (tests/cli/exported_models.py):

- `--ov-outputs mark fused` logs one summary line for all its compiles (the model, the precision,
  the tensors marked and compared, how many compiles), never one line per compile, and leaves no
  layer of the plain model changed by the marks.
- `--ov-precision f16` (or bf16) on a CPU that OpenVINO's CPU plugin cannot infer in it: one clear
  error naming the precision it would run instead, never a silent run in another precision; where
  the plugin lists the precision among its optimization capabilities, the run is in it.
"""

import re

import openvino
import pytest

from exported_models import export
from run_util import RUN_TIMEOUT

MODELS = [(kind, exporter) for kind in ("bert", "gpt2", "vit") for exporter in ("torchscript", "dynamo")]
COMPILED_LINE = re.compile(r"openvino-runner\S*: OpenVINO \S+ compiled .* for CPU \| inference precision")
SUMMARY = re.compile(r"\| --ov-outputs mark fused: (\d+) of the (\d+) tensor\(s\) the compiled model's layers write "
                     r"out are compared.* \((\d+) compiles\):")


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("exported")
    cache = {}

    def get(kind, exporter):
        if (kind, exporter) not in cache:
            cache[kind, exporter] = export(kind, folder / f"{kind}_{exporter}.onnx", exporter)
        return cache[kind, exporter]

    return get


@pytest.mark.parametrize("kind,exporter", MODELS)
def test_mark_fused_sums_up_its_compiles_in_one_line(run_parity, exported, kind, exporter):
    run = run_parity("run", exported(kind, exporter), "--openvino", "--ov-outputs", "mark", "fused",
                     timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    compiled = [line for line in run.output.splitlines() if COMPILED_LINE.search(line)]
    assert len(compiled) == 1, f"one compile line expected, got {len(compiled)}:\n" + "\n".join(compiled)
    summary = SUMMARY.search(compiled[0])
    assert summary, run.describe()
    compared, written, compiles = (int(group) for group in summary.groups())
    assert 0 < compared <= written, run.describe()
    assert compiles >= 2, run.describe()  # the plain model, then the marked one
    assert "marking still changes" not in run.output, run.describe()


CAPABILITY = {"f16": "FP16", "bf16": "BF16"}


@pytest.mark.parametrize("precision", ["f16", "bf16"])
def test_a_precision_the_cpu_lacks_is_refused(run_parity, exported, precision):
    capabilities = openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    run = run_parity("run", exported("bert", "torchscript"), "--openvino", "--ov-precision", precision,
                     timeout=RUN_TIMEOUT)
    if CAPABILITY[precision] in capabilities:
        assert run.returncode == 0, run.describe()
        assert f"inference precision: {precision}" in run.output, run.describe()
        return
    errors = run.lines("[E] ")
    assert run.returncode == 1 and len(errors) == 1, run.describe()
    assert f"cannot run it in {precision} on this CPU" in errors[0], run.describe()
    assert re.search(r"it compiles it for (f32|bf16|f16)", errors[0]), run.describe()
    assert "inference precision" not in run.output, run.describe()
