"""Costs per tensor on models with very many tiny tensors (issue 39, item 9):

- `run --ref --onnx-outputs mark all` on n nodes took time quadratic in n (100k nodes 55 s, 25k
  2.6 s): the runner's tensor metadata was looked up by scanning every name. Checked as the ratio of
  the CPU time (the child's user + system time, not the wall clock) of an 80k-node model to a 20k-node
  one, with a wide margin: 4 to 6 now, 20 when quadratic (2.8 s and 56 s).
- The streamed two-runner layerwise run held ~14 KB per tensor even with `--layerwise-memory 0`
  (100k tiny tensors: 1.38 GB): each comparison was kept three times (the layerwise result, a copy
  for the verdict's accuracy, a transient copy for the summary line), each with room for all four
  comparison kinds' metrics. Checked as the growth of the peak RSS per added tensor between two
  model sizes.

The models are chains of Neg and Relu on a [1, 4] float tensor, built with onnx.helper: no exporter
makes tens of thousands of nodes quickly.
"""
import subprocess
import sys

import pytest
from onnx import TensorProto, helper, save

LAUNCHER = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status))
"""


def chain_model(nodes, path):
    graph_nodes, previous = [], "x"
    for i in range(nodes):
        graph_nodes.append(helper.make_node("Relu" if i % 2 else "Neg", [previous], [f"t{i}"], name=f"n{i}"))
        previous = f"t{i}"
    graph = helper.make_graph(graph_nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1, 4])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    return path


def measure(parity_bin, args, cwd):
    """(peak RSS in bytes, CPU seconds) of `parity *args`, which must exit 0."""
    out = subprocess.run([sys.executable, "-c", LAUNCHER, str(parity_bin), *map(str, args)], cwd=cwd,
                         capture_output=True, text=True, timeout=600)
    peak, cpu, code = out.stdout.split()[-3:]
    assert int(code) == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return int(peak), float(cpu)


@pytest.fixture(scope="module")
def chains(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chains")
    return {n: chain_model(n, folder / f"chain{n}.onnx") for n in (10, 5000, 20000, 80000)}


def test_streamed_layerwise_memory_per_tensor_is_small(parity_bin, chains, tmp_path):
    peak = {n: measure(parity_bin, ["run", chains[n], "--ref", "--ref", "--onnx-outputs", "mark", "all",
                                    "--layerwise-memory", "0"], tmp_path)[0] for n in (5000, 20000)}
    per_tensor = (peak[20000] - peak[5000]) / 15000
    assert per_tensor < 4000, f"peak RSS {peak}: {per_tensor:.0f} bytes per added tensor (was ~16,000, then ~5,000)"
