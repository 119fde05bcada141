"""Large layerwise runs in the HTML report (issue 35): file size, time to render in a real browser, and
the cost of writing the page, as a multiple of the same `parity run ... --onnx-outputs mark all` without
--report-html (both in the same run, least of --repeat CPU times, user + system, each).

Cases:
- ppocrv4_det (../shared/models) compared across three runners (--ref --onnxrt --openvino): each of
  its 330 non-constant tensors is compared twice, 660 points on the page;
- the BERT encoder of tests/cli/exported_models.py deepened to --bert-layers layers (default 12, as
  BERT-base): one comparison per tensor, 860+ points.

Render time is the page's own `data-render-ms` (performance.now() when its script has drawn everything,
counted from navigation start) in Debian's headless Chromium, median of --repeat loads. Target: under
2 s, and the file under ~10 MB.

    python bench/html_report_scale.py [--build build/release] [--repeat 3] [--bert-layers 12]
"""
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "cli"))
import exported_models  # noqa: E402  (tests/cli is on the path from here)

SHARED = ROOT.parent / "shared" / "models"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-default-apps",
                  "--disable-extensions", "--window-size=1280,900", "--dump-dom"]


def timed(command):
    """CPU seconds (user + system) of the command: steadier than wall time on a shared machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):  # 1: some comparison failed, which is expected across precisions
        sys.exit(f"{' '.join(map(str, command))} exited with {done.returncode}:\n{done.stdout[-3000:]}"
                 f"{done.stderr[-3000:]}")
    return seconds, done.stdout + done.stderr


def render_ms(browser, page):
    dom = subprocess.run([browser, *CHROMIUM_FLAGS, page.resolve().as_uri()], capture_output=True, text=True,
                         timeout=300).stdout
    if 'data-rendered="ok"' not in dom:
        sys.exit(f"{page} did not render: {dom[-2000:]}")
    return int(re.search(r'data-render-ms="(\d+)"', dom).group(1)), dom.count('class="point"')


def measure(name, command, page, browser, repeat):
    plain = min(timed(command)[0] for _ in range(repeat))
    with_page, log = zip(*(timed([*command, "--report-html", page]) for _ in range(repeat)))
    compared = len(re.findall(r"Comparing Output: ", log[0]))
    loads = [render_ms(browser, page) for _ in range(repeat)]
    points = loads[0][1]
    if points != compared:
        sys.exit(f"{name}: the page has {points} points for {compared} comparisons")
    size = page.stat().st_size / 1e6
    print(f"{name}: {compared} compared tensors | page {size:.2f} MB ({size / compared * 1e3:.1f} KB per tensor) | "
          f"render median {statistics.median(ms for ms, _ in loads):.0f} ms (runs {[ms for ms, _ in loads]}) | "
          f"CPU time of the run with --report-html / without: {min(with_page) / plain:.2f}x", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=str(ROOT / "build" / "release"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bert-layers", type=int, default=12)
    args = parser.parse_args()
    parity = str(Path(args.build) / "tools" / "parity" / "parity")
    browser = shutil.which("chromium")
    if not browser:
        sys.exit("chromium is not installed (scripts/apt-packages.txt lists it)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        measure("ppocrv4_det, ref/onnxrt/openvino, 256x256",
                [parity, "run", SHARED / "ppocrv4_det.onnx", "--ref", "--onnxrt", "--openvino", "--onnx-outputs",
                 "mark", "all", "--input-shapes", "x:[1,3,256,256]"], tmp / "ppocrv4.html", browser, args.repeat)
        exported_models.SIZES["deep"] = dict(exported_models.SIZES["bench"], layers=args.bert_layers)
        bert = exported_models.export("bert", tmp / "bert.onnx", "torchscript", size="deep")
        measure(f"BERT encoder, {args.bert_layers} layers, ref/onnxrt",
                [parity, "run", bert, "--ref", "--onnxrt", "--onnx-outputs", "mark", "all"],
                tmp / "bert.html", browser, args.repeat)


if __name__ == "__main__":
    main()
