"""End-to-end tests of `parity inspect model` on good models.

Expected values (names, op types, dtypes, shapes, counts, attribute and weight values) are
derived from the models with the `onnx` Python package, never copied from a run. Assertions
are on content, not on exact whitespace (test_inspect_polygraphy_text.py checks the exact text
against Polygraphy's). Shape inference is opt-in, as in Polygraphy: the tests that check
inferred shapes pass --shape-inference.
"""

import concurrent.futures
import math
import re
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

EXAMPLE_MODELS = ["small_cnn.onnx", "small_transformer.onnx", "small_if.onnx"]
SHARED_MODELS = [
    "silero_vad_v5.onnx",
    "silero_vad_op18_ifless.onnx",
    "magika_standard_v3_3.onnx",
    "ppocrv4_det.onnx",
    "blazeface_front_128.onnx",
]
SHAPE_CHECK_NODE_CASES = [
    "test_add",
    "test_add_bcast",
    "test_conv_with_strides_padding",
    "test_conv_with_strides_no_padding",
    "test_conv_with_strides_and_asymmetric_padding",
    "test_reshape_allowzero_reordered",
    "test_reshape_extended_dims",
    "test_reshape_negative_dim",
    "test_reshape_negative_extended_dims",
    "test_reshape_one_dim",
    "test_reshape_reduced_dims",
    "test_reshape_reordered_all_dims",
    "test_reshape_reordered_last_dims",
    "test_reshape_zero_and_negative_dim",
    "test_reshape_zero_dim",
]

# Polygraphy's names for ONNX element types (the ones whose spelling is not in doubt).
DTYPE_NAMES = {
    TensorProto.FLOAT: "float32", TensorProto.DOUBLE: "float64", TensorProto.FLOAT16: "float16",
    TensorProto.BFLOAT16: "bfloat16", TensorProto.INT8: "int8", TensorProto.INT16: "int16",
    TensorProto.INT32: "int32", TensorProto.INT64: "int64", TensorProto.UINT8: "uint8",
    TensorProto.UINT16: "uint16", TensorProto.UINT32: "uint32", TensorProto.UINT64: "uint64",
    TensorProto.BOOL: "bool",
}

# Initializers this small must be shown with every value under --show weights; bigger ones
# may be summarized (numpy-style "..." or min/max/mean, which are then checked).
SMALL_TENSOR = 16

UNKNOWN_DIM = "?"          # a dimension with neither value nor (user-given) name
ANY_SHAPE = "<any>"        # rank unknown: any printed shape is accepted


# ------------------------------------------------------------------------------------------
# Parsing the Polygraphy-style summary
# ------------------------------------------------------------------------------------------
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
SECTION_RE = re.compile(r"^(?P<indent>\s*)-{2,}\s*(?:(?P<count>\d+)\s+)?(?P<title>.*?)\s*-{2,}\s*$")
NODE_RE = re.compile(r"^(?P<indent>\s*)Node\s+(?P<index>\d+)\s*\|\s?(?P<name>.*?)\s*"
                     r"\[Op:\s*(?P<op>[^\]]+?)\s*\]\s*$")
ITEM_RE = re.compile(r"^(?:Initializer\s*\|\s*)?(?P<name>.+?)"
                     r"(?:\s+\[dtype=(?P<dtype>[^,\]]*),\s*shape=(?P<shape>.*)\])?$", re.S)
NUMBER_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf", re.I)


def plain_lines(text):
    return ANSI_RE.sub("", text).splitlines()


def indent_of(line):
    return len(line) - len(line.lstrip(" "))


def split_top_level(text, separator=","):
    """Splits on `separator` where it is not inside (), [] or {}."""
    parts, depth, current = [], 0, []
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char == separator and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def normalize_printed_shape(text):
    text = text.strip()
    if text in ("None", "?", "unknown", "<unknown>", ""):
        return ANY_SHAPE
    inner = text
    if inner[:1] in "([" and inner[-1:] in ")]":
        inner = inner[1:-1]
    dims = []
    for token in split_top_level(inner):
        token = token.strip().strip("'\"")
        if re.fullmatch(r"-?\d+", token):
            value = int(token)
            dims.append(UNKNOWN_DIM if value < 0 else value)
        elif token in ("None", "?", "") or token.startswith("unk__"):
            dims.append(UNKNOWN_DIM)
        else:
            dims.append(token)
    return tuple(dims)


def parse_tensor_list(text):
    """'{a [dtype=float32, shape=(1, 2)], Initializer | w [dtype=..., shape=[2]], c}' ->
    [(name, dtype or None, shape tuple or None)]."""
    text = " ".join(line.strip() for line in text.strip().splitlines())
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    entries = []
    for item in split_top_level(text):
        match = ITEM_RE.match(item)
        assert match, f"cannot parse tensor entry {item!r}"
        shape = match.group("shape")
        entries.append((match.group("name").strip(), match.group("dtype"),
                        normalize_printed_shape(shape) if shape is not None else None))
    return entries


class Summary:
    """The parts of `parity inspect model` output the tests look at."""

    def __init__(self, stdout):
        self.text = ANSI_RE.sub("", stdout)
        self.lines = plain_lines(stdout)
        header = re.search(r"Name:\s*(?P<name>.*?)\s*\|\s*ONNX Opset:\s*(?P<opset>\S+)", self.text)
        assert header, f"no 'Name: ... | ONNX Opset: ...' line in:\n{self.text}"
        self.graph_name = header.group("name")
        self.opset = header.group("opset")
        ir = re.search(r"IR Version:\s*(\d+)", self.text)
        self.ir_version = int(ir.group(1)) if ir else None
        producer = re.search(r"Producer:\s*([^|\n]*?)\s*(?:\||$)", self.text, re.M)
        self.producer = producer.group(1) if producer else None

    def section(self, title_pattern):
        """(count, body lines) of the first section whose title matches, e.g. 'Graph Input'."""
        for i, line in enumerate(self.lines):
            match = SECTION_RE.match(line)
            if match and re.fullmatch(title_pattern, match.group("title")):
                body = []
                for following in self.lines[i + 1:]:
                    if SECTION_RE.match(following) or NODE_RE.match(following):
                        break
                    body.append(following)
                count = match.group("count")
                return (int(count) if count is not None else None), body
        raise AssertionError(f"no section matching {title_pattern!r} in:\n{self.text}")

    def tensor_section(self, title_pattern):
        count, body = self.section(title_pattern)
        return count, parse_tensor_list("\n".join(l for l in body if l.strip()))

    def nodes(self):
        """Every 'Node i | name [Op: X]' entry: dicts with line, indent, index, name, op,
        inputs and outputs (lists of (name, dtype, shape))."""
        nodes = []
        for i, line in enumerate(self.lines):
            match = NODE_RE.match(line)
            if not match:
                continue
            block = []
            for following in self.lines[i + 1:]:
                if not following.strip() or SECTION_RE.match(following) or NODE_RE.match(following):
                    break
                block.append(following)
            io_text = "\n".join(block)
            parts = re.split(r"(?:^|\s)->\s*", io_text, maxsplit=1)
            inputs = parse_tensor_list(parts[0]) if parts[0].strip() else []
            outputs = parse_tensor_list(parts[1]) if len(parts) > 1 else None
            nodes.append(dict(line=i, indent=indent_of(line), index=int(match.group("index")),
                              name=match.group("name"), op=match.group("op"),
                              inputs=inputs, outputs=outputs))
        return nodes

    def top_level_nodes(self):
        nodes = self.nodes()
        if not nodes:
            return []
        top = min(n["indent"] for n in nodes)
        return [n for n in nodes if n["indent"] == top]

    def block_of(self, node, all_nodes):
        """Lines from a node's header up to the next node at the same or smaller indentation."""
        end = len(self.lines)
        for other in all_nodes:
            if other["line"] > node["line"] and other["indent"] <= node["indent"]:
                end = other["line"]
                break
        return self.lines[node["line"]:end]


# ------------------------------------------------------------------------------------------
# What the models say
# ------------------------------------------------------------------------------------------
def shape_of_type(type_proto):
    tensor_type = type_proto.tensor_type
    if not tensor_type.HasField("shape"):
        return ANY_SHAPE
    dims = []
    for dim in tensor_type.shape.dim:
        if dim.HasField("dim_value"):
            dims.append(dim.dim_value if dim.dim_value >= 0 else UNKNOWN_DIM)
        elif dim.HasField("dim_param") and not dim.dim_param.startswith("unk__"):
            dims.append(dim.dim_param)
        else:
            dims.append(UNKNOWN_DIM)
    return tuple(dims)


def graph_inputs(graph):
    """Graph inputs that are not initializers, as Polygraphy lists them."""
    initializer_names = {t.name for t in graph.initializer}
    return [v for v in graph.input if v.name not in initializer_names]


def known_tensors(graph):
    """name -> (elem_type, shape) from a (shape-inferred) graph's declarations."""
    known = {}
    for value in list(graph.value_info) + list(graph.input) + list(graph.output):
        if value.type.HasField("tensor_type"):
            known[value.name] = (value.type.tensor_type.elem_type, shape_of_type(value.type))
    for tensor in graph.initializer:
        known[tensor.name] = (tensor.data_type, tuple(int(d) for d in tensor.dims))
    return known


def inferred_tensor_tables(model):
    """One table per acceptable shape-inference flavour (plain, and with data propagation)."""
    tables = []
    for data_prop in (False, True):
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=data_prop)
        tables.append(known_tensors(inferred.graph))
    return tables


def dtype_matches(printed, elem_type):
    expected = DTYPE_NAMES.get(elem_type)
    return expected is None or (printed or "").strip() == expected


def shape_matches(printed, expected):
    return expected == ANY_SHAPE or printed == expected


def default_opset(model):
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx"):
            return opset.version
    return None


# ------------------------------------------------------------------------------------------
# Shared assertions
# ------------------------------------------------------------------------------------------
def assert_ok(run):
    assert run.returncode == 0, f"expected exit code 0\n{run.describe()}"
    assert not run.crash_markers(), f"crash markers {run.crash_markers()}\n{run.describe()}"
    assert not run.lines("[E]"), f"error lines on success\n{run.describe()}"


def assert_tensor_list(printed, count, expected_values, what, run, inferred_tables=()):
    """printed: [(name, dtype, shape)]; expected_values: onnx ValueInfoProtos. A shape may also
    be the one ONNX shape inference gives (graph outputs can be refined by inference)."""
    names = [v.name for v in expected_values]
    assert count == len(expected_values), \
        f"{what}: header says {count}, model has {len(expected_values)}\n{run.describe()}"
    assert [p[0] for p in printed] == names, \
        f"{what}: printed {[p[0] for p in printed]}, model has {names}\n{run.describe()}"
    for (name, dtype, shape), value in zip(printed, expected_values):
        elem_type = value.type.tensor_type.elem_type
        assert dtype is not None and dtype_matches(dtype, elem_type), \
            f"{what} {name}: dtype {dtype!r}, expected {DTYPE_NAMES.get(elem_type)}\n{run.describe()}"
        expected_shape = shape_of_type(value.type)
        acceptable = [expected_shape] + [t[name][1] for t in inferred_tables if name in t]
        assert shape is not None and any(shape_matches(shape, a) for a in acceptable), \
            f"{what} {name}: shape {shape}, expected {expected_shape}\n{run.describe()}"


def assert_model_summary(run, model_path):
    """Header, inputs, outputs, initializer and node counts agree with the model file."""
    assert_ok(run)
    model = onnx.load(str(model_path), load_external_data=False)
    graph = model.graph
    loading = [l for l in run.lines("[I]") if "Loading model" in l]
    assert loading and Path(model_path).name in loading[0], \
        f"no '[I] Loading model: ...{Path(model_path).name}' line\n{run.describe()}"
    summary = Summary(run.stdout)
    assert summary.graph_name == graph.name, f"graph name\n{run.describe()}"
    assert summary.opset == str(default_opset(model)), f"opset\n{run.describe()}"
    if summary.ir_version is not None:
        assert summary.ir_version == model.ir_version, f"IR version\n{run.describe()}"
    if summary.producer is not None and model.producer_name:
        assert model.producer_name in summary.producer, f"producer\n{run.describe()}"

    count, printed = summary.tensor_section(r"Graph Input\(s\)")
    assert_tensor_list(printed, count, graph_inputs(graph), "graph input", run)
    count, printed = summary.tensor_section(r"Graph Output\(s\)")
    assert_tensor_list(printed, count, list(graph.output), "graph output", run,
                       inferred_tensor_tables(model))
    count, _ = summary.section(r"Initializer\(s\)")
    assert count == len(graph.initializer), f"initializer count\n{run.describe()}"
    count, _ = summary.section(r"Node\(s\)")
    assert count == len(graph.node), f"node count\n{run.describe()}"
    return summary, model


def assert_nodes_match(summary, graph, tables, run, check_shapes=True):
    """Top-level node entries: index, name, op, input/output names, dtypes and shapes."""
    printed = summary.top_level_nodes()
    assert [(n["index"], n["name"], n["op"]) for n in printed] == \
        [(i, node.name, node.op_type) for i, node in enumerate(graph.node)], \
        f"node list differs from the model\n{run.describe()}"
    for entry, node in zip(printed, graph.node):
        assert [i[0] for i in entry["inputs"]] == [n for n in node.input], \
            f"node {node.name}: inputs {entry['inputs']}, model has {list(node.input)}\n{run.describe()}"
        assert entry["outputs"] is not None, f"node {node.name}: no ' -> {{...}}'\n{run.describe()}"
        assert [o[0] for o in entry["outputs"]] == [n for n in node.output], \
            f"node {node.name}: outputs {entry['outputs']}, model has {list(node.output)}\n{run.describe()}"
        if not check_shapes:
            continue
        for name, dtype, shape in entry["inputs"] + entry["outputs"]:
            candidates = [t[name] for t in tables if name in t]
            if not candidates:
                continue  # inference knows nothing about it either
            assert shape is not None and dtype is not None, \
                f"node {node.name}: tensor {name} printed without dtype/shape, ONNX shape " \
                f"inference gives {candidates[0]}\n{run.describe()}"
            assert any(dtype_matches(dtype, e) and shape_matches(shape, s) for e, s in candidates), \
                f"node {node.name}: tensor {name} printed as dtype={dtype} shape={shape}, ONNX " \
                f"shape inference gives {[(DTYPE_NAMES.get(e, e), s) for e, s in candidates]}\n" \
                f"{run.describe()}"


def numbers_in(text):
    return [float(x) for x in NUMBER_RE.findall(text)]


# ------------------------------------------------------------------------------------------
# The example models
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model_name", EXAMPLE_MODELS)
def test_example_summary(inspect_model, examples_dir, model_name):
    path = examples_dir / model_name
    run = inspect_model(path)
    summary, _ = assert_model_summary(run, path)
    assert not summary.nodes(), f"nodes listed without --show layers\n{run.describe()}"


@pytest.mark.parametrize("model_name", EXAMPLE_MODELS)
def test_example_layers(inspect_model, examples_dir, model_name):
    path = examples_dir / model_name
    run = inspect_model(path, "--show", "layers", "--shape-inference")
    summary, model = assert_model_summary(run, path)
    assert_nodes_match(summary, model.graph, inferred_tensor_tables(model), run)


def test_example_meaningful_content(inspect_model, examples_dir):
    """The example generator did what it promised (names, dynamic batch) and inspect shows it."""
    path = examples_dir / "small_transformer.onnx"
    run = inspect_model(path, "--show", "layers", "--shape-inference")
    assert_ok(run)
    model = onnx.load(str(path))
    ops = {n.op_type for n in model.graph.node}
    assert {"LayerNormalization", "MatMul", "Softmax", "Erf", "Reshape", "Transpose"} <= ops
    by_name = {n["name"]: n for n in Summary(run.stdout).top_level_nodes()}
    # The attention scores are [batch, heads, seq, seq] and keep the symbolic batch.
    inferred = known_tensors(onnx.shape_inference.infer_shapes(model).graph)
    scores = by_name["attn.scores_matmul"]["outputs"][0]
    assert inferred["attn.scores"][1][0] == "batch"
    assert scores[2] == inferred["attn.scores"][1], f"attention scores shape\n{run.describe()}"


@pytest.mark.parametrize("model_name", EXAMPLE_MODELS)
def test_example_layers_attrs_weights(inspect_model, examples_dir, model_name):
    path = examples_dir / model_name
    run = inspect_model(path, "--show", "layers", "attrs", "weights", "--shape-inference")
    summary, model = assert_model_summary(run, path)
    graph = model.graph
    assert_nodes_match(summary, graph, inferred_tensor_tables(model), run)

    # Attributes: every scalar / list attribute of every node, with its value.
    all_nodes = summary.nodes()
    for entry, node in zip(summary.top_level_nodes(), graph.node):
        block = summary.block_of(entry, all_nodes)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                continue  # subgraphs: see the If tests
            line = next((l for l in block
                         if re.search(rf"(?:^|[\s.|]){re.escape(attr.name)}\s*[=:]", l)), None)
            assert line is not None, \
                f"node {node.name}: attribute {attr.name} not shown\n{run.describe()}"
            shown = line.split("=", 1)[1] if "=" in line else line.split(":", 1)[1]
            value = helper.get_attribute_value(attr)
            if attr.type in (onnx.AttributeProto.INT, onnx.AttributeProto.FLOAT,
                             onnx.AttributeProto.INTS, onnx.AttributeProto.FLOATS):
                expected = list(value) if isinstance(value, (list, tuple)) else [value]
                got = numbers_in(shown)
                assert len(got) == len(expected) and all(
                    math.isclose(g, e, rel_tol=1e-5, abs_tol=1e-12) for g, e in zip(got, expected)), \
                    f"node {node.name}: attribute {attr.name} shown as {shown.strip()!r}, " \
                    f"model has {expected}\n{run.describe()}"
            elif attr.type == onnx.AttributeProto.STRING:
                assert value.decode() in shown, f"attribute {attr.name}\n{run.describe()}"

    # Weights: every initializer is listed with dtype and shape; small ones with all values,
    # big ones with their values or a min/max/mean summary that agrees with the data.
    for tensor in graph.initializer:
        array = numpy_helper.to_array(tensor)
        header_index = next((i for i, l in enumerate(summary.lines)
                             if re.search(rf"Initializer\s*\|\s*{re.escape(tensor.name)}\s*\[", l)),
                            None)
        assert header_index is not None, f"initializer {tensor.name} not listed\n{run.describe()}"
        header = summary.lines[header_index]
        match = re.search(r"\[dtype=(?P<dtype>[^,\]]*),\s*shape=(?P<shape>.*?)\]\s*(?:\||$)", header)
        assert match, f"initializer {tensor.name}: no dtype/shape in {header!r}"
        assert dtype_matches(match.group("dtype"), tensor.data_type), f"{tensor.name} dtype"
        assert normalize_printed_shape(match.group("shape")) == tuple(array.shape), \
            f"initializer {tensor.name}: shape {match.group('shape')}, model has {array.shape}"
        if "Values" not in header:
            assert array.size > SMALL_TENSOR, \
                f"initializer {tensor.name} ({array.size} values) shown without its values\n{run.describe()}"
            stats = {k: float(v) for k, v in re.findall(rf"\b(min|max|mean)\s*[=:]\s*({NUMBER_RE.pattern})",
                                                         header, re.I)}
            assert set(stats) == {"min", "max", "mean"}, \
                f"initializer {tensor.name}: neither values nor min/max/mean in {header!r}"
            data = array.astype(np.float64)
            for key, want in (("min", data.min()), ("max", data.max()), ("mean", data.mean())):
                assert math.isclose(stats[key], want, rel_tol=1e-3, abs_tol=1e-4 * np.abs(data).max()), \
                    f"initializer {tensor.name}: {key} shown as {stats[key]}, data gives {want}"
            continue
        if array.size > SMALL_TENSOR:
            continue  # big ones may be summarized with "..."
        text = header.split("Values:", 1)[1]
        for following in summary.lines[header_index + 1:]:
            if not following.strip() or "Initializer" in following or SECTION_RE.match(following):
                break
            text += " " + following
        got = np.array(numbers_in(text), dtype=np.float64)
        want = array.astype(np.float64).ravel()
        assert got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-6), \
            f"initializer {tensor.name}: values shown {text.strip()!r}, model has {want}\n{run.describe()}"


def test_shape_inference_flag(inspect_model, examples_dir):
    """Shape inference is opt-in (--shape-inference), as in Polygraphy: by default intermediate
    tensors are shown by name only; with the flag they get their inferred dtype and shape.
    Declared ones are shown either way."""
    path = examples_dir / "small_cnn.onnx"
    model = onnx.load(str(path))
    assert not model.graph.value_info, "the example is expected to carry no value_info"
    inferred = known_tensors(onnx.shape_inference.infer_shapes(model).graph)

    default = inspect_model(path, "--show", "layers")
    with_inference = inspect_model(path, "--show", "layers", "--shape-inference")
    assert_ok(with_inference)
    assert_ok(default)
    first = Summary(with_inference.stdout).top_level_nodes()[0]
    first_default = Summary(default.stdout).top_level_nodes()[0]
    name, dtype, shape = first["outputs"][0]
    assert shape == inferred[name][1], with_inference.describe()
    assert first_default["outputs"][0] == (name, None, None), \
        f"without --shape-inference {name} is shown with a dtype or shape\n{default.describe()}"
    # The graph output keeps its declared shape either way.
    last = Summary(default.stdout).top_level_nodes()[-1]
    assert last["outputs"][0][2] == shape_of_type(model.graph.output[0].type), default.describe()


# ------------------------------------------------------------------------------------------
# Subgraphs
# ------------------------------------------------------------------------------------------
def assert_branches_under(summary, run, if_name, branch_node_names):
    nodes = summary.nodes()
    if_entries = [n for n in nodes if n["name"] == if_name and n["op"] == "If"]
    assert len(if_entries) == 1, f"If node {if_name} listed {len(if_entries)} times\n{run.describe()}"
    if_entry = if_entries[0]
    block_end = if_entry["line"] + len(summary.block_of(if_entry, nodes))
    for name in branch_node_names:
        entries = [n for n in nodes if n["name"] == name]
        assert len(entries) == 1, f"branch node {name} listed {len(entries)} times\n{run.describe()}"
        entry = entries[0]
        assert if_entry["line"] < entry["line"] < block_end, \
            f"branch node {name} is not listed under If node {if_name}\n{run.describe()}"
        assert entry["indent"] > if_entry["indent"], \
            f"branch node {name} (indent {entry['indent']}) is not indented more than If node " \
            f"{if_name} (indent {if_entry['indent']})\n{run.describe()}"
    return if_entry


def test_if_subgraph_display(inspect_model, examples_dir):
    path = examples_dir / "small_if.onnx"
    model = onnx.load(str(path))
    run = inspect_model(path, "--show", "layers", "attrs")
    summary, _ = assert_model_summary(run, path)
    if_node = next(n for n in model.graph.node if n.op_type == "If")
    branch_nodes = []
    for attr in if_node.attribute:
        branch_nodes += [n.name for n in attr.g.node]
        # Each branch's outputs are shown in its "Subgraph Output(s)" section.
        for output in attr.g.output:
            assert re.search(rf"(?:^|[\s{{,]){re.escape(output.name)}\b", summary.text), \
                f"subgraph output {output.name} not shown\n{run.describe()}"
    assert len(branch_nodes) == 4
    assert_branches_under(summary, run, if_node.name, branch_nodes)
    assert "Subgraph" in summary.text, f"no subgraph section\n{run.describe()}"
    # Top-level listing is unchanged by the subgraphs.
    assert [n["name"] for n in summary.top_level_nodes()] == [n.name for n in model.graph.node]


def make_nested_if_model():
    """outer If whose then-branch holds an inner If; every branch reads outer-scope `x`."""
    def value(name):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [2])

    inner_then = helper.make_graph([helper.make_node("Neg", ["x"], ["inner_then_out"], name="inner_neg")],
                                   "inner_then", [], [value("inner_then_out")])
    inner_else = helper.make_graph([helper.make_node("Abs", ["x"], ["inner_else_out"], name="inner_abs")],
                                   "inner_else", [], [value("inner_else_out")])
    outer_then = helper.make_graph(
        [helper.make_node("If", ["inner_cond"], ["outer_then_out"], name="inner_if",
                          then_branch=inner_then, else_branch=inner_else)],
        "outer_then", [], [value("outer_then_out")])
    outer_else = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["outer_else_out"], name="outer_sigmoid")],
                                   "outer_else", [], [value("outer_else_out")])
    graph = helper.make_graph(
        [helper.make_node("If", ["outer_cond"], ["y"], name="outer_if",
                          then_branch=outer_then, else_branch=outer_else)],
        "nested_if",
        [helper.make_tensor_value_info("outer_cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("inner_cond", TensorProto.BOOL, []), value("x")],
        [value("y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def test_nested_if_subgraph_display(inspect_model, tmp_path):
    path = tmp_path / "nested_if.onnx"
    onnx.save(make_nested_if_model(), str(path))
    run = inspect_model(path, "--show", "layers", "attrs")
    summary, _ = assert_model_summary(run, path)
    outer = assert_branches_under(summary, run, "outer_if",
                                  ["inner_if", "inner_neg", "inner_abs", "outer_sigmoid"])
    inner = assert_branches_under(summary, run, "inner_if", ["inner_neg", "inner_abs"])
    assert inner["indent"] > outer["indent"]


# ------------------------------------------------------------------------------------------
# Real third-party models
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model_name", SHARED_MODELS)
def test_shared_model_summary(inspect_model, shared_dir, model_name):
    path = shared_dir / "models" / model_name
    assert path.is_file(), f"missing shared model {path}"
    run = inspect_model(path)
    assert_model_summary(run, path)


@pytest.mark.parametrize("model_name", SHARED_MODELS)
def test_shared_model_layers(inspect_model, shared_dir, model_name):
    path = shared_dir / "models" / model_name
    run = inspect_model(path, "--show", "layers", "attrs", "--shape-inference")
    summary, model = assert_model_summary(run, path)
    assert_nodes_match(summary, model.graph, inferred_tensor_tables(model), run)
    if model_name == "silero_vad_v5.onnx":
        # Every If's branch nodes (the named ones) are listed under it, more indented.
        for node in model.graph.node:
            if node.op_type == "If":
                names = [n.name for a in node.attribute for n in a.g.node if n.name]
                assert_branches_under(summary, run, node.name, names)


# ------------------------------------------------------------------------------------------
# ONNX conformance node cases
# ------------------------------------------------------------------------------------------
def test_every_node_case_inspects(run_parity, shared_dir):
    cases = sorted((shared_dir / "onnx-tests" / "node").glob("*/model.onnx"))
    assert len(cases) > 1000, f"expected the ONNX node test cases, found {len(cases)}"

    def one(path):
        try:
            run = run_parity("inspect", "model", path, "--show", "layers", timeout=60)
        except subprocess.TimeoutExpired:
            return f"{path.parent.name}: timed out after 60 s"
        problems = []
        if run.returncode < 0:
            problems.append(f"killed by signal {-run.returncode}")
        elif run.returncode != 0:
            problems.append(f"exit code {run.returncode}")
        if run.crash_markers():
            problems.append(f"crash markers {run.crash_markers()}")
        if not problems:
            return None
        errors = run.lines("[E]") or [l for l in run.output.splitlines() if l.strip()][-3:]
        return f"{path.parent.name}: {', '.join(problems)}: {' / '.join(errors)[:400]}"

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        failures = [f for f in pool.map(one, cases) if f]
    assert not failures, f"{len(failures)} of {len(cases)} node cases failed:\n" + "\n".join(failures)


def strip_output_shapes(model):
    stripped = onnx.ModelProto()
    stripped.CopyFrom(model)
    for output in stripped.graph.output:
        output.type.tensor_type.ClearField("shape")
    return stripped


@pytest.mark.parametrize("declared", ["declared", "stripped"])
@pytest.mark.parametrize("case", SHAPE_CHECK_NODE_CASES)
def test_node_case_output_shapes(inspect_model, shared_dir, tmp_path, case, declared):
    """Printed output shapes equal onnx.shape_inference.infer_shapes; 'stripped' removes the
    declared graph-output shapes first, so the printed ones can only come from inference."""
    source = shared_dir / "onnx-tests" / "node" / case / "model.onnx"
    model = onnx.load(str(source))
    if declared == "stripped":
        model = strip_output_shapes(model)
        path = tmp_path / "model.onnx"
        onnx.save(model, str(path))
    else:
        path = source
    tables = inferred_tensor_tables(model)
    run = inspect_model(path, "--show", "layers", "--shape-inference")
    assert_ok(run)
    summary = Summary(run.stdout)
    nodes = summary.top_level_nodes()
    assert len(nodes) == len(model.graph.node), run.describe()
    for entry, node in zip(nodes, model.graph.node):
        assert entry["outputs"] is not None, run.describe()
        assert [o[0] for o in entry["outputs"]] == list(node.output), run.describe()
        for name, dtype, shape in entry["outputs"]:
            candidates = [t[name] for t in tables if name in t]
            assert candidates, f"python inference knows nothing about {name}"
            expected = [s for _, s in candidates]
            assert shape is not None and any(shape_matches(shape, s) for s in expected), \
                f"{case}: output {name} printed with shape {shape}, onnx.shape_inference gives " \
                f"{expected[0]}\n{run.describe()}"
            assert any(dtype_matches(dtype, e) for e, _ in candidates), run.describe()


# ------------------------------------------------------------------------------------------
# --style parity: Parity's own layout
# ------------------------------------------------------------------------------------------
def test_parity_style_adds_model_facts(inspect_model, examples_dir):
    """IR version and producer on the header line, weights with their values (small ones) or
    min/max/mean, subgraphs under their node without 'attrs'; the default has none of these."""
    path = examples_dir / "small_if.onnx"
    model = onnx.load(str(path))
    run = inspect_model(path, "--style", "parity", "--show", "layers", "weights")
    summary, _ = assert_model_summary(run, path)
    assert summary.ir_version == model.ir_version and model.producer_name in summary.producer, run.describe()
    for tensor in model.graph.initializer:
        values = numpy_helper.to_array(tensor).ravel()
        line = next(l for l in summary.lines if f"Initializer | {tensor.name} " in l)
        shown = numbers_in(line.split("Values:", 1)[1])
        assert np.allclose(shown, values, rtol=1e-6), f"{tensor.name}: {line!r}\n{run.describe()}"
    if_node = next(n for n in model.graph.node if n.op_type == "If")
    assert_branches_under(summary, run, if_node.name, [n.name for a in if_node.attribute for n in a.g.node])

    default = inspect_model(path, "--show", "layers", "weights")
    assert_ok(default)
    assert "IR Version" not in default.stdout and "Subgraph" not in default.stdout, default.describe()
