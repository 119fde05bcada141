"""Layerwise streaming keeps memory bounded: on the BERT-base-sized encoder, a run that hands
every intermediate tensor to a callback (and frees it) peaks at most 1.5x the plain run's RSS.
Memory, not time, is asserted; each run is its own process so peaks are separate."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bert")
    model = folder / "bert_base.onnx"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_bert.py"), "-o", str(model)], check=True,
                   capture_output=True)
    inputs = folder / "inputs.npz"
    np.savez(inputs, hidden=np.random.RandomState(1).random_sample((1, 128, 768)).astype(np.float32))
    return model, inputs


def run_tool(parity_bin, *args):
    tool = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(parity_bin))), "bench",
                        "parity_bench_ref_latency")
    assert os.path.exists(tool), f"benchmark tool missing: {tool} (build the bench targets)"
    out = subprocess.run([tool, *map(str, args)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_streaming_every_intermediate_stays_within_1_5x_of_a_plain_run(parity_bin, bert):
    model, inputs = bert
    plain = run_tool(parity_bin, model, inputs, "--iterations", 1, "--warmup", 0)
    streamed = run_tool(parity_bin, model, inputs, "--iterations", 1, "--warmup", 0, "--stream")
    # Every node output is streamed: 12 layers produce hundreds of tensors.
    assert streamed["streamed"] > 12 * 20, streamed
    ratio = streamed["peak_rss_mb"] / plain["peak_rss_mb"]
    assert ratio <= 1.5, f"streaming peak {streamed['peak_rss_mb']} MB vs plain {plain['peak_rss_mb']} MB"
