"""`parity run --dataset ... --ray`: the runners as Ray actors. A two-node Ray cluster is started on this
machine (`ray start --head` and a second node with its own resources, on their own ports and temporary
folder), a 2,000-sample validation runs across it while one actor is killed, and the results must equal a
run in local worker processes. Also: ray.init()'s local cluster, and an address nobody listens at.

The samples run the reference runner, whose Conv/Gemm results change by an ulp with the BLAS thread count under
some OpenBLAS kernels (OPENBLAS_CORETYPE=Haswell), and Ray starts its actors with OMP_NUM_THREADS=1: the results
equal the local ones only because every worker and actor computes with the driver's thread count."""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import run_binary
from exported_models import build, export
from test_dataset_validation import ended


SAMPLES = 2000
# Ray 2.60 starts clusters with token authentication; the test's cluster is local to this machine.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def ray_exe():
    return str(Path(sys.executable).parent / "ray")


def free_base_port():
    """A base port with the 40 above it free (each node takes several)."""
    for _ in range(50):
        base = random.randrange(20000, 60000, 100)
        try:
            for port in range(base, base + 40):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    pytest.fail("no free block of ports")


def node_ports(base):
    return ["--node-manager-port", base + 1, "--object-manager-port", base + 2,
            "--dashboard-agent-listen-port", base + 3, "--metrics-export-port", base + 4,
            "--min-worker-port", base + 10, "--max-worker-port", base + 19]


@pytest.fixture(scope="module")
def cluster():
    base = free_base_port()
    # A short folder: Ray's socket paths under it must fit in a Unix socket address.
    temp = tempfile.mkdtemp(prefix="pr", dir="/tmp")
    env = dict(os.environ, **RAY_ENV)
    common = ["--block", "--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--object-store-memory", "80000000"]
    head = subprocess.Popen([str(a) for a in [ray_exe(), "start", "--head", "--port", base, "--temp-dir", temp,
                                              "--include-dashboard", "false", "--dashboard-port", base + 5,
                                              *common, *node_ports(base)]],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    nodes = [head]
    address = f"127.0.0.1:{base}"
    try:
        deadline = time.time() + 60
        while subprocess.run([ray_exe(), "status", "--address", address], env=env,
                             capture_output=True).returncode != 0:
            assert time.time() < deadline and head.poll() is None, "the Ray head did not start"
            time.sleep(1)
        second = subprocess.Popen([str(a) for a in [ray_exe(), "start", "--address", address, "--resources",
                                                    '{"second_node": 1}', *common, *node_ports(base + 20)]],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        nodes.append(second)
        while "second_node" not in subprocess.run([ray_exe(), "status", "--address", address], env=env,
                                                  capture_output=True, text=True).stdout:
            assert time.time() < deadline and second.poll() is None, "the second Ray node did not join"
            time.sleep(1)
        yield address
    finally:
        # `ray start --block` stops its node's processes when it is terminated.
        for node in reversed(nodes):
            node.send_signal(signal.SIGTERM)
            try:
                node.wait(timeout=30)
            except subprocess.TimeoutExpired:
                node.kill()
                node.wait()
        left = [pid for pid in os.listdir("/proc") if pid.isdigit() and temp in _cmdline(pid)]
        assert not left, f"Ray processes of the test's cluster still running: {left}"


def _cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


@pytest.fixture(scope="module")
def resnet(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ray_resnet")
    path = folder / "resnet.onnx"
    export("resnet", path, "torchscript")
    _, args, _ = build("resnet")
    return path, tuple(args[0].shape)


def write_dataset(folder, count, shape, kill_marker=None):
    """A script dataset; with kill_marker, the first load of sample 700 kills the Ray actor running it (the
    parent of the parity worker that is the parent of the script's Python), as an out-of-memory kill would."""
    kill = ""
    if kill_marker:
        kill = f"""    if i == 700 and not os.path.exists({str(kill_marker)!r}):
        open({str(kill_marker)!r}, "w").close()
        with open(f"/proc/{{os.getppid()}}/stat") as stat:
            actor = int(stat.read().rsplit(")", 1)[1].split()[1])
        os.kill(actor, 9)
"""
    script = folder / "data.py"
    script.write_text(f"""import numpy as np, os
def num_samples():
    return {count}

def load(i):
{kill}    return {{"x": np.random.default_rng(i).standard_normal({shape}).astype(np.float32)}}
""")
    return script


def validate(parity_bin, model, dataset, folder, name, *extra):
    results, report = folder / f"{name}.jsonl", folder / f"{name}.json"
    run = run_binary(parity_bin, ["run", model, "--onnxrt", "--ref", "--dataset", dataset, "--atol", "6e-8",
                                  "--rtol", "0", "--sample-results", results, "--report", report, *extra],
                     cwd=folder, env=RAY_ENV, timeout=600)
    assert not run.crash_markers(), run.describe()
    verdicts = sorted((json.loads(line) for line in results.read_text().splitlines()), key=lambda r: r["index"])
    report = json.loads(report.read_text())
    for entry in report["outputs"] + report["metrics"]:
        entry.pop("pair")  # runner names hold each process's start time
    return run, verdicts, report


def test_two_node_cluster_survives_a_killed_actor(parity_bin, resnet, cluster, tmp_path):
    model, shape = resnet
    marker = tmp_path / "actor_killed"
    (tmp_path / "local").mkdir()
    local = write_dataset(tmp_path / "local", SAMPLES, shape)
    _, local_verdicts, local_report = validate(parity_bin, model, local, tmp_path, "local", "--workers", "2")
    killing = write_dataset(tmp_path, SAMPLES, shape, kill_marker=marker)
    run, verdicts, report = validate(parity_bin, model, killing, tmp_path, "ray", "--ray", cluster)
    assert marker.exists(), "no actor was killed"
    assert "samples per node (2 node(s))" in run.stdout, run.describe()
    assert any("was restarted" in line for line in run.lines("[W] ")), run.describe()
    # Every sample exactly once, with the results of local workers nobody killed.
    assert [v["index"] for v in verdicts] == list(range(SAMPLES))
    assert verdicts == local_verdicts
    assert report == local_report
    assert 0 < report["passed"] < SAMPLES  # the tolerance fails some samples: verdicts differ


def test_local_cluster_from_ray_init(parity_bin, resnet, tmp_path):
    model, shape = resnet
    dataset = write_dataset(tmp_path, 40, shape)
    _, local_verdicts, local_report = validate(parity_bin, model, dataset, tmp_path, "local")
    run, verdicts, report = validate(parity_bin, model, dataset, tmp_path, "ray", "--ray", "--workers", "2")
    assert run.returncode == (0 if report["passed"] == 40 else 1), run.describe()
    assert "on Ray (a local cluster)" in run.stdout
    assert verdicts == local_verdicts and report == local_report


def test_a_sample_that_hangs_is_failed_by_the_sample_timeout(parity_bin, resnet, tmp_path):
    model, shape = resnet
    clean = write_dataset(tmp_path, 24, shape)
    _, clean_verdicts, _ = validate(parity_bin, model, clean, tmp_path, "clean")
    (tmp_path / "hanging").mkdir()
    pid_file = tmp_path / "hung.pid"
    hanging = tmp_path / "hanging" / "data.py"
    # load(9) writes its process's id and hangs, alive: only the timeout ends it.
    hanging.write_text(clean.read_text().replace("def load(i):\n", f"""def load(i):
    if i == 9:
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        __import__("time").sleep(3600)
"""))
    run, verdicts, report = validate(parity_bin, model, hanging, tmp_path, "ray", "--ray", "--workers", "2",
                                     "--sample-timeout", "8")
    assert run.returncode == 1, run.describe()
    # Every sample counted exactly once: sample 9 failed with the timeout, the others as a run without the hang.
    assert [v["index"] for v in verdicts] == list(range(24))
    assert not verdicts[9]["passed"] and "no result within --sample-timeout 8s" in verdicts[9]["error"]
    assert verdicts[:9] + verdicts[10:] == clean_verdicts[:9] + clean_verdicts[10:]
    assert report["errors"] == 1
    assert any("sample 9 within --sample-timeout 8s" in line for line in run.lines("[W] ")), run.describe()
    assert ended(int(pid_file.read_text())), "the hung dataset script's process is still running"


def test_an_unreachable_address_is_a_clear_error(parity_bin, resnet, tmp_path):
    model, shape = resnet
    dataset = write_dataset(tmp_path, 10, shape)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connections are refused
        run = run_binary(parity_bin, ["run", model, "--onnxrt", "--dataset", dataset, "--ray", f"127.0.0.1:{port}"],
                         cwd=tmp_path, env=RAY_ENV)
    assert run.returncode == 1
    errors = run.lines("[E] ")
    assert len(errors) == 1 and "cannot reach a Ray cluster there" in errors[0], run.describe()
    assert "nothing was started" in errors[0]
    assert "Dataset progress" not in run.output
