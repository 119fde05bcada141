"""OpenVINO on models exported from PyTorch by both of torch's exporters (tests/cli/exported_models.py):

- `--ov-outputs mark fused` logs one summary line for all its compiles (the model, the precision,
  the tensors marked and compared, how many compiles), never one line per compile, and leaves no
  layer of the plain model changed by the marks.
"""

import re

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
