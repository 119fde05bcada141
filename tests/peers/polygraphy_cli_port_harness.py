"""Machinery for tests/peers/test_polygraphy_cli_port.py: runs one ported Polygraphy CLI case through
`polygraphy` and through `parity`, each in a fresh working folder, and lists how the two differ.

A case is a list of steps. A tool step (`Step`) is a command line without the program name
(`["run", "{models}/identity.onnx", "--onnxrt"]`) that both tools run; a setup step (`Setup`) is a
command that runs the same way in both folders (a Python script that writes input data, Polygraphy's
fake reduce checker...). Placeholders: {models} Polygraphy's test models, {examples} its CLI
examples, {tools} its tools tests folder, {python} this interpreter, {tool} the program under test
(for commands that call the tool again, such as debug reduce's --check).

What is compared, per tool step: the verdict (exit status zero or not) against the one Polygraphy's
test expects, for both tools; the text the Polygraphy test looks for (`expect`/`reject`, checked in
both outputs; `same_text`: present in both or in neither); after the steps, each saved file in
`compare_files` (an ONNX model: node op types, graph inputs/outputs with dtypes and shapes,
initializer names; JSON from `run`/`data`/`lint`: its structure) and the case's own `check`
(Polygraphy's assertions), run on both folders. A failure of Polygraphy itself is reported too,
marked as such: the case then tests nothing.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List, Optional, Sequence

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DIR = REPO_ROOT.parent / "shared"
POLYGRAPHY_DIR = SHARED_DIR / "polygraphy"
MODELS_DIR = POLYGRAPHY_DIR / "tests" / "models"
EXAMPLES_DIR = POLYGRAPHY_DIR / "examples" / "cli"
TOOLS_TESTS_DIR = POLYGRAPHY_DIR / "tests" / "tools"
TIMEOUT_S = 300
DEFAULT_PARITY = REPO_ROOT / "build" / "release" / "tools" / "parity" / "parity"

PLACEHOLDERS = {
    "models": str(MODELS_DIR),
    "examples": str(EXAMPLES_DIR),
    "tools": str(TOOLS_TESTS_DIR),
    "python": sys.executable,
}


@dataclass
class Step:
    """One command both tools run. `fails`: Polygraphy's test expects a non-zero exit."""

    args: List[str]
    fails: bool = False
    expect: List[str] = field(default_factory=list)
    reject: List[str] = field(default_factory=list)
    same_text: List[str] = field(default_factory=list)


@dataclass
class Setup:
    """A command (program included) run identically in both working folders."""

    command: List[str]


@dataclass
class Case:
    case_id: str
    steps: list
    compare_files: List[str] = field(default_factory=list)
    # Polygraphy's assertions on a working folder (and the outputs of its steps); raises AssertionError.
    check: Optional[Callable] = None
    # Compare the printed text of step N (0-based) between the tools, as test_inspect.py compares it.
    compare_text_of_step: Optional[int] = None

    @property
    def command(self) -> str:
        """The command the case belongs to, for the per-command counts ("run", "surgeon sanitize"...)."""
        return self.case_id.split("/")[0]


@dataclass
class StepResult:
    returncode: int
    output: str
    command: List[str]


def parity_binary() -> Path:
    configured = os.environ.get("PARITY_BIN")
    path = Path(configured) if configured else DEFAULT_PARITY
    if not path.is_absolute():
        path = REPO_ROOT / path
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise FileNotFoundError(f"parity binary not found at {path}: build it (CMake preset 'release') "
                                f"or point PARITY_BIN at one")
    return path


def polygraphy_program() -> str:
    beside = Path(sys.executable).parent / "polygraphy"
    if beside.is_file():
        return str(beside)
    raise FileNotFoundError(f"the polygraphy command is not installed beside {sys.executable} "
                            f"(scripts/setup.sh installs it into .venv)")


PLACEHOLDER = re.compile(r"\{(" + "|".join([*PLACEHOLDERS, "tool"]) + r")\}")


def expand(arg: str, program: str) -> str:
    values = dict(PLACEHOLDERS, tool=program)
    return PLACEHOLDER.sub(lambda match: values[match.group(1)], arg)


def run_command(command: Sequence[str], cwd: Path) -> StepResult:
    env = dict(os.environ, NO_COLOR="1")
    completed = subprocess.run([str(part) for part in command], cwd=cwd, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT_S, env=env)
    return StepResult(completed.returncode, completed.stdout.decode("utf-8", errors="replace"), list(command))


def run_case_with(program: str, case: Case, workdir: Path) -> List[StepResult]:
    results = []
    for step in case.steps:
        if isinstance(step, Setup):
            results.append(run_command([expand(part, program) for part in step.command], workdir))
        else:
            results.append(run_command([program, *[expand(part, program) for part in step.args]], workdir))
    return results


# ----- what a saved file looks like, for comparing the two tools' files ---------------------------

def shape_of(value_info) -> Optional[tuple]:
    tensor_type = value_info.type.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    return tuple(dim.dim_param if dim.HasField("dim_param") else
                 (dim.dim_value if dim.HasField("dim_value") else None) for dim in tensor_type.shape.dim)


def describe_onnx(path: Path) -> dict:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    graph = model.graph
    return {
        "node op types": [node.op_type for node in graph.node],
        "graph inputs": [(value.name, value.type.tensor_type.elem_type, shape_of(value)) for value in graph.input],
        "graph outputs": [(value.name, value.type.tensor_type.elem_type, shape_of(value)) for value in graph.output],
        "initializers": sorted(tensor.name for tensor in graph.initializer),
    }


def structure_of(value):
    """JSON data reduced to its structure: keys, list lengths, arrays' dtype and shape (values differ
    between tools where inputs are random)."""
    if isinstance(value, dict):
        if value.get("polygraphy_class") == "ndarray":
            return "<array>"
        return {key: structure_of(item) for key, item in value.items()}
    if isinstance(value, list):
        return [structure_of(item) for item in value]
    return type(value).__name__


def describe_json(path: Path):
    data = json.loads(path.read_text())
    if isinstance(data, dict) and "lint_entries" in data:  # check lint's report
        summary = {key: sorted(names) for key, names in data.get("summary", {}).items()}
        entries = sorted((entry.get("level"), entry.get("source"), tuple(entry.get("nodes", [])))
                         for entry in data["lint_entries"])
        return {"summary": summary, "entries (level, source, nodes)": entries}
    return structure_of(data)


def describe_file(path: Path):
    if not path.is_file():
        return "<missing>"
    if path.suffix == ".onnx":
        try:
            return describe_onnx(path)
        except Exception as error:  # noqa: BLE001 - an unloadable file is a finding, not a harness error
            return f"<not loadable by onnx: {error}>"
    if path.suffix == ".json":
        try:
            return describe_json(path)
        except Exception as error:  # noqa: BLE001
            return f"<not loadable as JSON: {error}>"
    return "<empty>" if path.stat().st_size == 0 else "<non-empty>"


# ----- the comparison ---------------------------------------------------------------------------

ERROR_DETAIL = re.compile(r"^(\s*Note: Error was: ).*$", re.M)
# Runner names carry the time they were made ("onnxrt-runner-N0-11/24/26-03:33:01"); the tools run apart.
RUNNER_TIME = re.compile(r"(-runner-N\d+-)\d\d/\d\d/\d\d-\d\d:\d\d:\d\d")


def printed_text(output: str) -> str:
    """A step's text as test_inspect.py's check_lines_match compares it: without "Loading" lines,
    [V] and [W] lines; error details (library messages) masked, trailing spaces dropped."""
    text = RUNNER_TIME.sub(r"\1<time>", ERROR_DETAIL.sub(r"\1<detail>", output))
    return "\n".join(line.rstrip() for line in text.splitlines()
                     if "Loading" not in line and not line.startswith(("[V]", "[W]")))


def contains(output: str, text: str) -> bool:
    return text in output


def compare_case(case: Case, polygraphy_dir: Path, parity_dir: Path, polygraphy_results: List[StepResult],
                 parity_results: List[StepResult]) -> List[str]:
    """Every difference between the tools on this case, and every Polygraphy expectation either
    tool misses, as sentences; empty when the case passes."""
    problems = []
    for index, step in enumerate(case.steps):
        ours, theirs = parity_results[index], polygraphy_results[index]
        label = f"step {index + 1} ({' '.join(ours.command[1:]) if isinstance(step, Step) else ' '.join(ours.command)})"
        if isinstance(step, Setup):
            for name, result in (("polygraphy", theirs), ("parity", ours)):
                if result.returncode != 0:
                    problems.append(f"{label}: setup failed in {name}'s folder: {result.output[-800:]}")
            continue
        for name, result in (("polygraphy itself", theirs), ("parity", ours)):
            if (result.returncode != 0) != step.fails:
                expected = "fail" if step.fails else "succeed"
                problems.append(f"{label}: {name} exited {result.returncode}, Polygraphy's test expects it to "
                                f"{expected}; output tail:\n{result.output[-1500:]}")
            for text in step.expect:
                if not contains(result.output, text):
                    problems.append(f"{label}: {name} does not print {text!r}")
            for text in step.reject:
                if contains(result.output, text):
                    problems.append(f"{label}: {name} prints {text!r}")
        for text in step.same_text:
            if contains(theirs.output, text) != contains(ours.output, text):
                problems.append(f"{label}: {text!r} printed by {'polygraphy' if contains(theirs.output, text) else 'parity'} only")
    if case.compare_text_of_step is not None:
        theirs = printed_text(polygraphy_results[case.compare_text_of_step].output)
        ours = printed_text(parity_results[case.compare_text_of_step].output)
        if theirs != ours:
            problems.append(f"printed text differs:\n--- polygraphy ---\n{theirs}\n--- parity ---\n{ours}")
    for name in case.compare_files:
        theirs, ours = describe_file(polygraphy_dir / name), describe_file(parity_dir / name)
        if theirs != ours:
            problems.append(f"saved file {name} differs:\n  polygraphy: {theirs}\n  parity:     {ours}")
    if case.check is not None:
        for name, folder, results in (("polygraphy itself", polygraphy_dir, polygraphy_results),
                                      ("parity", parity_dir, parity_results)):
            try:
                case.check(folder, [result.output for result in results])
            except Exception as error:  # noqa: BLE001 - any failed assertion or unreadable file
                problems.append(f"Polygraphy's check fails for {name}: {type(error).__name__}: {error}")
    return problems


def run_case(case: Case, parity: Path) -> List[str]:
    with tempfile.TemporaryDirectory(prefix="poly-port-") as root:
        polygraphy_dir, parity_dir = Path(root) / "polygraphy", Path(root) / "parity"
        polygraphy_dir.mkdir()
        parity_dir.mkdir()
        polygraphy_results = run_case_with(polygraphy_program(), case, polygraphy_dir)
        parity_results = run_case_with(str(parity), case, parity_dir)
        return compare_case(case, polygraphy_dir, parity_dir, polygraphy_results, parity_results)


def read_known_differences(path: Path):
    """The data file: 'skip <id pattern>: reason' (Polygraphy tests not ported) and '<case id>: reason'
    (ported cases that still fail). Returns (known: {case id: reason}, skipped: [(pattern, reason)])."""
    known, skipped = {}, []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        key, separator, reason = line.partition(": ")
        if not separator or not reason.strip():
            raise ValueError(f"{path.name}:{number}: expected '<case id>: <reason>', got {line!r}")
        if key.startswith("skip "):
            skipped.append((key[len("skip "):].strip(), reason.strip()))
        else:
            known[key.strip()] = reason.strip()
    return known, skipped
