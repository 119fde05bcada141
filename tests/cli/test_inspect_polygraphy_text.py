"""`parity inspect model` prints Polygraphy's text: for every ONNX model in Polygraphy's own test models
(../shared/polygraphy/tests/models, TensorFlow and TensorRT files aside), and also the real models in
../shared/models and the examples in examples/models, with every `--show` variant
Polygraphy's CLI test uses and `--list-unbounded-dds` with and without `--shape-inference`, both tools
run side by side and their whole output must be identical, byte for byte, after two normalizations:

- Polygraphy's "'colored' module is not installed" warning (a fact about this venv) is dropped;
- the path on the "Loading model:" line is masked: Polygraphy's shape inference writes the model to a
  temporary file and logs loading that one instead;
- the detail after "Note: Error was:" (numpy's or ONNX's message for weights that cannot be read versus
  Parity's) is masked, as Polygraphy's own test_inspect.py ignores those lines; the "[E] Failed to load
  weights." line itself and the "<error: failed to load weights>" placeholder must match.

With `--shape-inference`, Polygraphy also gets `--no-onnxruntime-shape-inference`: Parity's shape
inference is ONNX's own (onnx.shape_inference), which Polygraphy otherwise uses only after failing to
import ONNX Runtime's symbolic shape inference (it needs sympy) and saying so in three warnings. Exit
statuses must agree. A model and variant that still differ is listed, with its reason, in
tests/cli/data/inspect_polygraphy_text_differences.txt; a listed case that no longer differs fails too
(so the list stays true). Missing binary or polygraphy: the tests FAIL, never skip.
"""

import concurrent.futures
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT, run_binary
from run_util import polygraphy_exe

MODELS_DIR = REPO_ROOT.parent / "shared" / "polygraphy" / "tests" / "models"
# Other model folders, under the names the cases use for them.
MORE_MODEL_DIRS = {"shared": REPO_ROOT.parent / "shared" / "models", "examples": REPO_ROOT / "examples" / "models"}
DIFFERENCES_FILE = Path(__file__).parent / "data" / "inspect_polygraphy_text_differences.txt"
TIMEOUT_S = 120

VARIANTS = {
    "default": [],
    "layers": ["--show", "layers"],
    "layers-attrs": ["--show", "layers", "attrs"],
    "layers-attrs-weights": ["--show", "layers", "attrs", "weights"],
    "weights": ["--show", "weights"],
    "shape-inference-layers": ["--shape-inference", "--show", "layers"],
    "list-unbounded-dds": ["--list-unbounded-dds"],
    "list-unbounded-dds-shape-inference": ["--list-unbounded-dds", "--shape-inference"],
}


def onnx_models():
    """Case name -> model path: Polygraphy's test models by their path in its folder, the others
    as 'shared/<file>' and 'examples/<file>'."""
    for folder in [MODELS_DIR, *MORE_MODEL_DIRS.values()]:
        if not folder.is_dir():
            pytest.fail(f"model folder missing: {folder}", pytrace=False)
    models = {path.relative_to(MODELS_DIR).as_posix(): path for path in MODELS_DIR.rglob("*.onnx")}
    for name, folder in MORE_MODEL_DIRS.items():
        models.update({f"{name}/{path.name}": path for path in folder.glob("*.onnx")})
    return dict(sorted(models.items()))


MODELS = onnx_models()


def known_differences():
    """'model variant: reason' lines -> {(model, variant): reason}."""
    differences = {}
    for line in DIFFERENCES_FILE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        key, reason = line.split(":", 1)
        model, variant = key.split()
        assert variant in VARIANTS, f"{DIFFERENCES_FILE.name}: unknown variant {variant!r}"
        differences[(model, variant)] = reason.strip()
    return differences


COLORED_WARNING = re.compile(r"^\[W\] '?colored'? module is not installed.*\n", re.M)
ERROR_DETAIL = re.compile(r"^(\s*Note: Error was: ).*$", re.M)
LOADING_PATH = re.compile(r"^(\[I\] Loading model: ).*$", re.M)


def normalize(text):
    text = COLORED_WARNING.sub("", text)
    text = LOADING_PATH.sub(r"\1<path>", text)
    return ERROR_DETAIL.sub(r"\1<detail>", text)


def run_polygraphy(args):
    completed = subprocess.run([polygraphy_exe(), "inspect", "model", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=TIMEOUT_S, env=dict(os.environ, NO_COLOR="1"))
    return completed.returncode, completed.stdout.decode(errors="replace")


def run_parity(parity_bin, args):
    run = run_binary(parity_bin, ["inspect", "model", *args], timeout=TIMEOUT_S)
    return run.returncode, run.stdout + run.stderr


CASES = [(model, variant) for model in MODELS for variant in VARIANTS]


@pytest.fixture(scope="module")
def outputs(parity_bin):
    """Both tools' (status, text) for every case, two processes at a time."""
    def both(case):
        model, variant = case
        args = [str(MODELS[model]), *VARIANTS[variant]]
        polygraphy_args = args + (["--no-onnxruntime-shape-inference"] if "--shape-inference" in args else [])
        return case, run_polygraphy(polygraphy_args), run_parity(parity_bin, args)

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return {case: (poly, parity) for case, poly, parity in pool.map(both, CASES)}


def test_every_known_difference_names_a_case():
    for case in known_differences():
        assert case in CASES, f"{DIFFERENCES_FILE.name} lists {case}, which is not a case here"


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case[0]}-{case[1]}")
def test_same_text_as_polygraphy(outputs, case):
    (poly_status, poly_text), (parity_status, parity_text) = outputs[case]
    assert "Traceback" not in parity_text and "terminate called" not in parity_text, parity_text
    reason = known_differences().get(case)
    same_status = (poly_status == 0) == (parity_status == 0)
    same_text = normalize(poly_text) == normalize(parity_text)
    if reason is not None:
        assert not (same_status and same_text), \
            f"{case} is listed as a known difference ({reason}) but the outputs now match: remove it"
        return
    assert same_status, (f"exit status: polygraphy {poly_status}, parity {parity_status}\n"
                         f"--- polygraphy\n{poly_text[-3000:]}\n--- parity\n{parity_text[-3000:]}")
    assert normalize(parity_text) == normalize(poly_text)
