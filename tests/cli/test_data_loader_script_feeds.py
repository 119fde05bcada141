"""A --data-loader-script's feeds reach Parity exactly as the script yields them: every array of
every feed (the driver writes them into a pipe as .npy bytes, feed by feed: tools/parity/args/python_scripts.cpp), whatever
its dtype, byte order, memory order and rank, in the script's order (the driver writes a C-order array of a
(dtype, shape) it has met as that kind's .npy header and the array's bytes)."""

import textwrap

import numpy as np
import onnx
from onnx import TensorProto, helper

from run_util import load_polygraphy_json

INPUTS = [("f", TensorProto.FLOAT, [2, 3]), ("i", TensorProto.INT64, [4]), ("b", TensorProto.BOOL, [2, 2]),
          ("h", TensorProto.FLOAT16, []), ("d", TensorProto.DOUBLE, [3, 2])]
FEEDS = 37


def identity_model(path):
    """One Identity per input (built with onnx.helper: a model taking these five dtypes, a scalar among them)."""
    nodes = [helper.make_node("Identity", [name], [name + "_out"], name=name + "_id") for name, _, _ in INPUTS]
    graph = helper.make_graph(nodes, "identities", [helper.make_tensor_value_info(n, t, s) for n, t, s in INPUTS],
                              [helper.make_tensor_value_info(n + "_out", t, s) for n, t, s in INPUTS])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def expected_feeds():
    rng = np.random.default_rng(7)
    feeds = []
    for _ in range(FEEDS):
        feeds.append({"f": np.asfortranarray(rng.standard_normal((2, 3)).astype(np.float32)),  # Fortran order
                      "i": rng.integers(-2 ** 40, 2 ** 40, 4),
                      "b": rng.random((2, 2)) > 0.5,
                      "h": np.array(rng.standard_normal(), np.float16),  # rank 0
                      "d": rng.standard_normal((2, 3)).T})  # a transposed view: neither order is its own
    for index, feed in enumerate(feeds):
        if index % 3 == 1:  # C order and big-endian, among native ones: two kinds of header for one input
            feed["d"] = np.ascontiguousarray(feed["d"]).astype(">f8")
    return feeds


def test_every_feed_arrives_exactly(run_parity, tmp_path):
    model = identity_model(tmp_path / "identities.onnx")
    script = tmp_path / "feeds.py"
    script.write_text(textwrap.dedent(f"""\
        import numpy as np
        import sys
        sys.path.insert(0, {str(__import__("pathlib").Path(__file__).parent)!r})
        from test_data_loader_script_feeds import expected_feeds

        def load_data():
            yield from expected_feeds()
        """))
    saved = tmp_path / "inputs.json"
    result = run_parity("run", model, "--ref", "--data-loader-script", script, "--save-inputs", saved, timeout=300)
    assert result.returncode == 0, result.describe()
    got = load_polygraphy_json(saved)
    expected = expected_feeds()
    assert len(got) == FEEDS
    for feed, want in zip(got, expected):
        assert list(feed.keys()) == list(want.keys())
        for name, array in want.items():
            assert feed[name].dtype == array.dtype.newbyteorder("<") and feed[name].shape == array.shape, name
            np.testing.assert_array_equal(feed[name], array)


def test_feeds_of_more_shapes_than_the_driver_caches_arrive_exactly(run_parity, tmp_path):
    """The driver caches a .npy header per (dtype, shape) and starts its caches again past 256 kinds: 300
    shapes, each met twice, and a big-endian kind among them, arrive as yielded."""
    node = helper.make_node("Identity", ["x"], ["y"], name="x_id")
    graph = helper.make_graph([node], "identity", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "n"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "identity.onnx"))
    script = tmp_path / "shapes.py"
    script.write_text(textwrap.dedent("""\
        import numpy as np

        def load_data():
            rng = np.random.default_rng(3)
            for index in range(600):
                x = rng.standard_normal((1, index % 300 + 1)).astype(np.float32)
                yield {"x": x.astype(">f4") if index % 7 == 0 else x}
        """))
    saved = tmp_path / "inputs.json"
    result = run_parity("run", tmp_path / "identity.onnx", "--ref", "--data-loader-script", script,
                        "--save-inputs", saved, timeout=300)
    assert result.returncode == 0, result.describe()
    got = load_polygraphy_json(saved)
    rng = np.random.default_rng(3)
    assert len(got) == 600
    for index, feed in enumerate(got):
        want = rng.standard_normal((1, index % 300 + 1)).astype(np.float32)
        assert feed["x"].dtype == np.float32 and feed["x"].shape == want.shape, index
        np.testing.assert_array_equal(feed["x"], want)
