"""OpenVINO's compile time grows about 1.9x per level of nested If (issue 39, item 9: 30 levels took
over 120 s): `run --openvino` warns, before the compile, about a model whose subgraphs nest deeper
than 16 levels, and stays quiet at 16.

The models are built with onnx.helper (exporters do not produce If chains this deep): If nodes
nested N levels, each then-branch holding the next If, each else-branch a Relu of the outer x.
"""
import pytest
from onnx import TensorProto, helper, save

from run_util import RUN_TIMEOUT


def nested_if_model(levels, path):
    def branch(level):
        name = f"g{level}"
        if level == levels:
            return helper.make_graph([helper.make_node("Neg", ["x"], [name + "_y"])], name, [],
                                     [helper.make_tensor_value_info(name + "_y", TensorProto.FLOAT, [1, 4])])
        other = helper.make_graph([helper.make_node("Relu", ["x"], [name + "_e"])], name + "_else", [],
                                  [helper.make_tensor_value_info(name + "_e", TensorProto.FLOAT, [1, 4])])
        node = helper.make_node("If", ["c"], [name + "_y"], then_branch=branch(level + 1), else_branch=other)
        return helper.make_graph([node], name, [], [helper.make_tensor_value_info(name + "_y", TensorProto.FLOAT, [1, 4])])

    top = branch(0)
    graph = helper.make_graph(list(top.node), "nested", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                                       helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              list(top.output))
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    return path


@pytest.mark.parametrize("levels, warned", [(16, False), (17, True)])
def test_deep_nesting_is_warned_before_the_compile(run_parity, tmp_path, levels, warned):
    model = nested_if_model(levels, tmp_path / f"if{levels}.onnx")
    run = run_parity("run", model, "--openvino", timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.describe()
    warnings = [line for line in run.lines("[W] ") if "nested" in line]
    if not warned:
        assert warnings == [], run.describe()
        return
    assert len(warnings) == 1, run.describe()
    assert f"{model}: subgraphs (If branches, Loop and Scan bodies) are nested {levels} levels deep" in warnings[0]
    assert "OpenVINO's compile time grows about 1.9x per level" in warnings[0]
    # Said before OpenVINO compiles (the runner's compile line comes after it).
    assert run.stdout.index(warnings[0]) < run.stdout.index("compiled"), run.describe()
