"""The ported cases: Polygraphy's CLI tests (../shared/polygraphy/tests/tools/test_*.py) and CLI examples
(../shared/polygraphy/examples/cli/) that need no TensorRT, TensorFlow, GPU or plugin, as data for
polygraphy_cli_port_harness. Case ids are '<command>/<Polygraphy test name>[parameters]', or
'example/<example folder>'. Each `check` restates what the Polygraphy test asserts on its files; the
Polygraphy CLI fixture's `-v` after the subcommand is kept. The examples' cases are in
polygraphy_cli_port_examples.py.
"""

import onnx

from polygraphy_cli_port_examples import EXAMPLE_CASES  # the CLI examples, in their own file
from polygraphy_cli_port_harness import Case, Setup, Step

M = "{models}"


def cmd(subcommand: str, *args, **step_options) -> Step:
    """A step as Polygraphy's poly_<subcommand> fixture runs it: the subcommand words, then -v."""
    return Step([*subcommand.split(), "-v", *args], **step_options)


def sanity(model: str) -> Step:
    """Polygraphy's onnx_model_sanity_check: the saved model runs under ONNX Runtime."""
    return cmd("run", model, "--model-type=onnx", "--onnxrt")


def load(folder, name):
    return onnx.load(str(folder / name), load_external_data=False)


def dims(value_info):
    return [dim.dim_param if dim.HasField("dim_param") else dim.dim_value
            for dim in value_info.type.tensor_type.shape.dim]


def run_results(folder, name):
    from polygraphy.json import load_json

    return load_json(str(folder / name))


# ----- run (tests/tools/test_run.py) --------------------------------------------------------------

def check_log_file(path):
    def check(folder, outputs):
        assert (folder / path).read_text(), f"{path} is empty"
    return check


def check_layerwise(expected_names):
    def check(folder, outputs):
        [result] = list(run_results(folder, "out.json").values())[0]
        assert sorted(result.keys()) == sorted(expected_names), f"outputs saved: {sorted(result.keys())}"
    return check


def check_merged_inputs(folder, outputs):
    import numpy as np
    from polygraphy.json import load_json

    merged = load_json(str(folder / "merged.json"))
    assert len(merged) == 1 and list(merged[0].keys()) == ["x", "y"], f"merged: {merged}"
    assert all(isinstance(value, np.ndarray) for value in merged[0].values())


COMPARED = "Difference is within tolerance"

RUN_CASES = [
    Case("run/test_logger_verbosity", [cmd("run", "--silent")]),
    *[Case(f"run/test_log_file[{path}]", [cmd("run", "--log-file", path)], check=check_log_file(path))
      for path in ("example/example.log", "example.log")],
    Case("run/test_polygraphy_run_gen_script",
         [cmd("run", "--gen-script=script.py", f"{M}/identity.onnx"), Setup(["{python}", "script.py"])]),
    Case("run/test_onnx_rt", [cmd("run", f"{M}/identity.onnx", "--onnxrt")]),
    Case("run/test_onnx_rt_save_onnx", [cmd("run", f"{M}/identity.onnx", "--onnxrt", "--save-onnx", "out.onnx")],
         compare_files=["out.onnx"]),
    Case("run/test_onnx_rt_custom_outputs",
         [cmd("run", f"{M}/identity_identity.onnx", "--onnxrt", "--onnx-outputs", "identity_out_0")]),
    Case("run/test_onnx_rt_layerwise_outputs",
         [cmd("run", f"{M}/identity_identity.onnx", "--onnxrt", "--onnx-outputs", "mark", "all",
              "--save-outputs", "out.json")],
         compare_files=["out.json"], check=check_layerwise(["identity_out_0", "identity_out_2"])),
    Case("run/test_onnx_rt_exclude_outputs_with_layerwise",
         [cmd("run", f"{M}/identity_identity.onnx", "--onnxrt", "--onnx-outputs", "mark", "all",
              "--onnx-exclude-outputs", "identity_out_2", "--save-outputs", "out.json")],
         compare_files=["out.json"], check=check_layerwise(["identity_out_0"])),
    Case("run/test_external_data",
         [cmd("run", f"{M}/ext_weights.onnx", "--onnxrt", "--external-data-dir", f"{M}/data")]),
    Case("run/test_providers", [cmd("run", f"{M}/identity.onnx", "--onnxrt", "--providers", "cpu")]),
    Case("run/test_0_iterations", [cmd("run", f"{M}/identity.onnx", "--onnxrt", "--iterations=0")]),
    Case("run/test_subprocess_sanity", [cmd("run", f"{M}/identity.onnx", "--onnxrt", "--use-subprocess")]),
    Case("run/test_exit_status_on_fail_comparison",
         [cmd("run", f"{M}/identity.onnx", "--onnxrt", "--save-outputs", "outputs0.json", "--seed=1"),
          cmd("run", f"{M}/identity.onnx", "--onnxrt", "--load-outputs", "outputs0.json", "--seed=2", fails=True)]),
    Case("run/test_custom_tolerance",
         [cmd("run", f"{M}/identity.onnx", "--onnxrt", "--onnxrt", "--iterations=0", "--atol=1.0", "--rtol=1.0")]),
    Case("run/test_custom_per_output_tolerance",
         [cmd("run", f"{M}/identity_identity.onnx", "--onnxrt", "--onnxrt", "--onnx-outputs", "mark", "all",
              "--atol", "identity_out_0:1.0", "identity_out_2:3.0", "0.5",
              "--rtol", "identity_out_0:1.0", "identity_out_2:3.0", "0.5")]),
    Case("run/test_custom_input_ranges",
         [cmd("run", f"{M}/identity_identity.onnx", "--onnxrt", "--val-range", "X:[1.0,2.0]", "[0.5,1.5]")]),
    Case("run/test_index_comparison",
         [cmd("run", f"{M}/identity.onnx", "--onnxrt", "--postprocess", "top-1", "--compare-func=indices")]),
    *[Case(f"run/test_check_error_stat[{stat}]",
           [cmd("run", f"{M}/identity.onnx", "--onnxrt", "--onnxrt", "--check-error-stat", stat)])
      for stat in ("max", "median", "mean", "quantile")],
    Case("run/test_save_load_outputs",
         [cmd("run", f"{M}/identity.onnx", "--onnxrt", "--save-outputs", "outputs0.json"),
          cmd("run", f"{M}/identity.onnx", "--onnxrt", "--save-outputs", "outputs1.json"),
          cmd("run", f"{M}/identity.onnx", "--onnxrt", "--load-outputs", "outputs0.json", "outputs1.json",
              expect=[COMPARED]),
          cmd("run", f"{M}/identity.onnx", "--load-outputs", "outputs0.json", reject=[COMPARED]),
          cmd("run", f"{M}/identity.onnx", "--load-outputs", "outputs0.json", "outputs1.json", expect=[COMPARED]),
          cmd("run", f"{M}/identity.onnx", "--load-outputs", "outputs0.json", "outputs0.json", expect=[COMPARED])],
         compare_files=["outputs0.json"]),
    Case("run/test_save_load_inputs",
         [cmd("run", f"{M}/identity.onnx", "--onnxrt", "--save-input-data", "in0.json"),
          cmd("run", f"{M}/identity.onnx", "--onnxrt", "--load-input-data", "in0.json", "--save-input-data", "in1.json"),
          cmd("run", f"{M}/identity.onnx", "--onnxrt", "--load-input-data", "in0.json", "in1.json")],
         compare_files=["in0.json", "in1.json"]),
    Case("run/test_load_torch_inputs",
         [Setup(["{python}", "-c", "import torch; from polygraphy.json import save_json; "
                 "save_json([{'x': torch.ones((1, 1, 2, 2), dtype=torch.float32)}], 'torch_inputs.json')"]),
          cmd("run", f"{M}/identity.onnx", "--onnxrt", "--onnxrt", "--load-inputs", "torch_inputs.json")]),
]

# ----- surgeon (tests/tools/test_surgeon.py) -----------------------------------------------------

SHAPE_INFERENCE_DONE = "Shape inference completed successfully"


def check_shape_inference(expected_run: bool, step: int = 0):
    """Polygraphy's was_shape_inference_run: the log says so and every value_info has a shape."""
    def check(folder, outputs):
        model = load(folder, "out.onnx")
        ran = SHAPE_INFERENCE_DONE in outputs[step] and all(
            value.type.tensor_type.HasField("shape") for value in model.graph.value_info)
        assert ran == expected_run, f"shape inference {'not ' if expected_run else ''}run"
    return check


def check_all_shapes_fixed(folder, outputs):
    model = load(folder, "out.onnx")
    assert dims(model.graph.input[0]) == [1, 2, 1, 1], dims(model.graph.input[0])
    assert dims(model.graph.output[0]) == [1, 2, 1, 1], dims(model.graph.output[0])
    for value in [*model.graph.value_info, *model.graph.input, *model.graph.output]:
        assert value.type.tensor_type.HasField("shape"), f"{value.name} has no shape"


def check_insert(ops, inputs, outputs, more=None):
    def check(folder, _outputs):
        model = load(folder, "out.onnx")
        assert [node.op_type for node in model.graph.node] == ops, [node.op_type for node in model.graph.node]
        assert {value.name for value in model.graph.output} == set(outputs)
        assert all(value.type.tensor_type.elem_type for value in model.graph.output), "an output has no dtype"
        assert {value.name for value in model.graph.input} == set(inputs)
        if more:
            more(model)
    return check


def insert_single_path(model):
    other_branch = model.graph.node[-1]
    assert other_branch.name == "onnx_graphsurgeon_node_7", other_branch.name
    assert list(other_branch.input) == ["add_out_4"], list(other_branch.input)


def insert_all_paths(model):
    for branch in model.graph.node[-2:]:
        assert list(branch.input) == ["add_out_4_polygraphy_surgeon_insert_output"], list(branch.input)


def insert_attributes(model):
    attributes = model.graph.node[0].attribute
    expected = [("str_attr", "s", b"0"), ("int_attr", "i", 0), ("float_attr", "f", 0.0),
                ("other_str_attr", "s", b"name"), ("str_list_attr", "strings", [b"0", b"1"]),
                ("int_list_attr", "ints", [1, 2, 3]), ("float_list_attr", "floats", [0.0, -1.0, -2.0])]
    for attribute, (name, field, value) in zip(attributes, expected):
        got = getattr(attribute, field)
        assert attribute.name == name and (list(got) if isinstance(value, list) else got) == value, \
            f"{attribute.name}: {got!r}, expected {name}: {value!r}"


def check_node_count(count, only_op=None):
    def check(folder, outputs):
        model = load(folder, "out.onnx")
        assert len(model.graph.node) == count, [node.op_type for node in model.graph.node]
        if only_op:
            assert model.graph.node[0].op_type == only_op
    return check


def check_input_dims(expected):
    def check(folder, outputs):
        assert dims(load(folder, "out.onnx").graph.input[0]) == expected
    return check


def check_input_names(expected):
    def check(folder, outputs):
        assert [value.name for value in load(folder, "out.onnx").graph.input] == expected
    return check


def check_min_upper_bound(bound):
    def check(folder, outputs):
        from onnx import numpy_helper

        model = load(folder, "out.onnx")
        constants = {tensor.name: numpy_helper.to_array(tensor) for tensor in model.graph.initializer}
        for node in model.graph.node:
            if node.op_type == "Constant":
                constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
        mins = [node for node in model.graph.node if node.op_type == "Min"]
        assert mins, "no Min node"
        for node in mins:
            assert str(constants[node.input[1]]) == bound, f"bound {constants.get(node.input[1])}"
    return check


def check_cleanup(folder, outputs):
    model = load(folder, "out.onnx")
    assert len(model.graph.node) == 1 and model.graph.output[0].name == "identity_out_0"


def check_toposort(folder, outputs):
    names = [node.name for node in load(folder, "out.onnx").graph.node]
    assert names[:2] == ["onnx_graphsurgeon_node_1", "onnx_graphsurgeon_node_3"], names


def check_external_data(folder, outputs):
    assert (folder / "out_model.onnx").stat().st_size > 0
    assert (folder / "ext_weights.data").stat().st_size > 0


def fold_constants_case(per_pass, fold_shapes, partitioning, no_ort_shape_inference):
    options = [option for option in (fold_shapes, per_pass, no_ort_shape_inference) if option]
    if partitioning:
        options[1:1] = ["--partitioning", partitioning]
    parameters = "-".join(str(value) for value in (no_ort_shape_inference, partitioning, fold_shapes, per_pass))
    return Case(f"surgeon-sanitize/test_fold_constants[{parameters}]",
                [cmd("surgeon", "sanitize", f"{M}/const_foldable.onnx", "-o", "out.onnx", "--fold-constants", "-v",
                     *options,
                     same_text=["Inferred shapes in the model with `onnxruntime.tools.symbolic_shape_infer`"]),
                 sanity("out.onnx")],
                check=check_node_count(1))


SURGEON_CASES = [
    Case("surgeon-extract/test_no_shape_inference_if_has_metadata",
         [cmd("surgeon extract", f"{M}/identity_identity.onnx", "-o", "out.onnx", "--inputs", "X:auto:auto"),
          sanity("out.onnx")], compare_files=["out.onnx"], check=check_shape_inference(False)),
    Case("surgeon-extract/test_onnx_shape_inference_if_no_metadata",
         [cmd("surgeon extract", f"{M}/identity_identity.onnx", "-o", "out.onnx", "--inputs",
              "identity_out_0:auto:auto"), sanity("out.onnx")],
         compare_files=["out.onnx"], check=check_shape_inference(True)),
    Case("surgeon-extract/test_fallback_shape_inference_no_onnx_shape_inference",
         [cmd("surgeon extract", f"{M}/identity_identity.onnx", "-o", "out.onnx", "--inputs",
              "identity_out_0:auto:auto", "--outputs", "identity_out_2:auto", "--force-fallback-shape-inference"),
          sanity("out.onnx")], compare_files=["out.onnx"], check=check_shape_inference(False)),
    Case("surgeon-extract/test_force_fallback_shape_inference_will_override_model_shapes",
         [cmd("surgeon extract", f"{M}/dynamic_identity.onnx", "-o", "out.onnx", "--outputs", "Y:auto",
              "--force-fallback-shape-inference"), sanity("out.onnx")],
         compare_files=["out.onnx"], check=check_all_shapes_fixed),
    Case("surgeon-extract/test_sanity_dim_param",
         [cmd("surgeon extract", f"{M}/dim_param.onnx", "-o", "out.onnx"), sanity("out.onnx")],
         compare_files=["out.onnx"]),
    Case("surgeon-insert/test_insert_at_tensor",
         [cmd("surgeon", "insert", f"{M}/identity_identity.onnx", "-o", "out.onnx", "--inputs=identity_out_0",
              "--outputs=identity_out_0", "--op=FakeOp")],
         compare_files=["out.onnx"], check=check_insert(["Identity", "FakeOp", "Identity"], ["X"], ["identity_out_2"])),
    Case("surgeon-insert/test_graph_output",
         [cmd("surgeon", "insert", f"{M}/identity_identity.onnx", "-o", "out.onnx", "--inputs=identity_out_2",
              "--outputs=identity_out_2", "--op=FakeOp")],
         compare_files=["out.onnx"], check=check_insert(["Identity", "Identity", "FakeOp"], ["X"], ["identity_out_2"])),
    Case("surgeon-insert/test_at_graph_input",
         [cmd("surgeon", "insert", f"{M}/identity_identity.onnx", "-o", "out.onnx", "--inputs=X", "--outputs=X",
              "--op=FakeOp")],
         compare_files=["out.onnx"], check=check_insert(["FakeOp", "Identity", "Identity"], ["X"], ["identity_out_2"])),
    Case("surgeon-insert/test_multi_use_input_replace_single_path",
         [cmd("surgeon", "insert", f"{M}/reducable.onnx", "-o", "out.onnx", "--inputs=add_out_4",
              "--outputs=identity_out_8", "--op=FakeOp")],
         compare_files=["out.onnx"],
         check=check_insert(["Identity", "Identity", "Add", "FakeOp", "Identity"], ["X0", "Y0"],
                            ["identity_out_6", "identity_out_8"], insert_single_path)),
    Case("surgeon-insert/test_multi_use_input_replace_all_paths",
         [cmd("surgeon", "insert", f"{M}/reducable.onnx", "-o", "out.onnx", "--inputs=add_out_4",
              "--outputs=add_out_4", "--op=FakeOp")],
         compare_files=["out.onnx"],
         check=check_insert(["Identity", "Identity", "Add", "FakeOp", "Identity", "Identity"], ["X0", "Y0"],
                            ["identity_out_6", "identity_out_8"], insert_all_paths)),
    Case("surgeon-insert/test_with_attributes",
         [cmd("surgeon", "insert", f"{M}/identity_identity.onnx", "-o", "out.onnx", "--inputs=X", "--outputs=X",
              "--op=FakeOp", "--attrs", "str_attr='0'", "int_attr=0", "float_attr=0.0", "other_str_attr=name",
              "str_list_attr=['0','1']", "int_list_attr=[1,2,3]", "float_list_attr=[0.0,-1.0,-2.0]")],
         compare_files=["out.onnx"],
         check=check_insert(["FakeOp", "Identity", "Identity"], ["X"], ["identity_out_2"], insert_attributes)),
    *[fold_constants_case(per_pass, fold_shapes, partitioning, no_ort)
      for no_ort in (None, "--no-onnxruntime-shape-inference") for partitioning in (None, "basic", "recursive")
      for fold_shapes in (None, "--no-fold-shapes") for per_pass in (None, "--no-per-pass-shape-inference")],
    *[Case(f"surgeon-sanitize/test_set_upper_bound[{specified}-{global_bound}]",
           [cmd("surgeon", "sanitize", f"{M}/unbounded_dds.onnx", "-o", "out.onnx", "--set-unbounded-dds-upper-bound",
                *([value for value in (global_bound, specified) if value] or ["1000"])),
            sanity("out.onnx")],
           check=check_min_upper_bound("4000" if specified else "2000" if global_bound else "1000"))
      for specified in (None, "cast_out_6:4000") for global_bound in (None, "2000")],
    Case("surgeon-sanitize/test_fold_constants_single_pass",
         [cmd("surgeon", "sanitize", f"{M}/const_foldable.onnx", "-o", "out.onnx", "--fold-constants",
              "--num-passes=1", expect=["Pass 1"], reject=["Pass 2"]), sanity("out.onnx")],
         compare_files=["out.onnx"], check=check_node_count(1)),
    *[Case(f"surgeon-sanitize/test_override_shapes[{dim}]",
           [cmd("surgeon", "sanitize", f"{M}/dynamic_identity.onnx", "-o", "out.onnx",
                f"--override-input-shapes=X:[1,2,{dim},{dim}]"), sanity("out.onnx")],
           compare_files=["out.onnx"], check=check_input_dims([1, 2, dim, dim]))
      for dim in (1, 2, 3)],
    Case("surgeon-sanitize/test_override_shapes_no_clear_const_tensors_meta",
         [cmd("surgeon", "sanitize", f"{M}/const_foldable.onnx", "-o", "out.onnx",
              "--override-input-shapes=input:[1,3]")], compare_files=["out.onnx"]),
    Case("surgeon-sanitize/test_override_shapes_partial_inputs",
         [cmd("surgeon", "sanitize", f"{M}/dynamic_identity.onnx", "-o", "out.onnx",
              "--override-input-shapes=Y:[1,2,3,4]")],
         compare_files=["out.onnx"], check=check_input_dims([1, 2, "height", "width"])),
    Case("surgeon-sanitize/test_override_shapes_no_reorder",
         [cmd("surgeon", "sanitize", f"{M}/reducable.onnx", "-o", "out.onnx", "--override-input-shapes",
              "Y0:[5]", "X0:[5]")],
         compare_files=["out.onnx"], check=check_input_names(["X0", "Y0"])),
    Case("surgeon-sanitize/test_modify_onnx_outputs",
         [cmd("surgeon", "sanitize", f"{M}/identity_identity.onnx", "-o", "out.onnx", "--outputs", "mark", "all")],
         compare_files=["out.onnx"]),
    Case("surgeon-sanitize/test_cleanup",
         [cmd("surgeon", "sanitize", f"{M}/identity_identity.onnx", "-o", "out.onnx", "--outputs",
              "identity_out_0", "--cleanup")], compare_files=["out.onnx"], check=check_cleanup),
    Case("surgeon-sanitize/test_toposort",
         [cmd("surgeon", "sanitize", f"{M}/unsorted.onnx", "-o", "out.onnx", "--toposort")],
         compare_files=["out.onnx"], check=check_toposort),
    Case("surgeon-sanitize/test_external_data",
         [cmd("surgeon", "sanitize", f"{M}/ext_weights.onnx", "--external-data-dir", f"{M}/data",
              "--fold-constants", "-o", "out_model.onnx", "--save-external-data", "ext_weights.data",
              "--external-data-size-threshold=0", "-vvvvv"),
          cmd("run", "out_model.onnx", "--onnxrt", "--external-data-dir", ".")],
         compare_files=["out_model.onnx"], check=check_external_data),
    Case("surgeon-sanitize/test_force_fallback_shape_inference_will_override_model_shapes",
         [cmd("surgeon", "sanitize", f"{M}/dynamic_identity.onnx", "-o", "out.onnx",
              "--force-fallback-shape-inference"), sanity("out.onnx")],
         compare_files=["out.onnx"], check=check_all_shapes_fixed),
    Case("surgeon-sanitize/test_size_threshold[10M-True]",
         [cmd("surgeon", "sanitize", f"{M}/constant_fold_bloater.onnx", "-o", "out.onnx", "--fold-constants",
              "--fold-size-threshold", "10M"), sanity("out.onnx")],
         compare_files=["out.onnx"], check=check_node_count(0)),
    Case("surgeon-sanitize/test_size_threshold[9.99M-False]",
         [cmd("surgeon", "sanitize", f"{M}/constant_fold_bloater.onnx", "-o", "out.onnx", "--fold-constants",
              "--fold-size-threshold", "9.99M"), sanity("out.onnx")],
         compare_files=["out.onnx"], check=check_node_count(1, "Tile")),
    *[Case(f"surgeon-prune/test_prune[{model}]",
           [cmd("surgeon", "prune", f"{M}/{model}.onnx", "-o", "out.onnx"), sanity("out.onnx")],
           compare_files=["out.onnx"])
      for model in ("matmul", "matmul.fp16", "matmul.bf16", "matmul.bf16.i32data", "conv")],
    *[Case(f"surgeon-weight-strip/test_weight_strip[{model}]",
           [cmd("surgeon", "weight-strip", f"{M}/{model}.onnx", "-o", "out.onnx")], compare_files=["out.onnx"])
      for model in ("matmul", "matmul.fp16", "matmul.bf16", "conv", "sparse.matmul", "sparse.conv",
                    "transpose_matmul", "qdq_conv")],
    *[Case(f"surgeon-weight-strip/test_weight_strip_exclude_file[{model}-{exclude}]",
           [cmd("surgeon", "weight-strip", f"{M}/{model}.onnx", "-o", "out.onnx", "--exclude-list",
                f"{M}/{exclude}")], compare_files=["out.onnx"])
      for model, exclude in (("matmul", "matmul.exclude_list.txt"), ("sparse.conv", "sparse.conv.exclude_list.txt"),
                             ("qdq_conv", "qdq_conv.exclude_list.txt"))],
    *[Case(f"surgeon-weight-reconstruct/test_weight_reconstruct[{model}]",
           [cmd("surgeon", "weight-reconstruct", f"{M}/{model}.onnx", "-o", "out.onnx")], compare_files=["out.onnx"])
      # weightless.sparse.matmul, weightless.sparse.conv, weightless.transpose_matmul: not in the shared copy.
      for model in ("weightless.matmul.fp16", "weightless.matmul.bf16", "weightless.conv", "weightless.qdq_conv")],
]

# ----- check lint (tests/tools/test_check.py) -----------------------------------------------------

ORT_MATMUL_ERROR = " Incompatible dimensions for matrix multiplication"


def lint_report(folder):
    import json

    return json.loads((folder / "report.json").read_text())


def check_lint_summary(passing, failing):
    def check(folder, outputs):
        summary = lint_report(folder)["summary"]
        assert sorted(summary.get("passing", [])) == sorted(passing), summary
        assert sorted(summary.get("failing", [])) == sorted(failing), summary
    return check


def check_lint_entry(level, source, message=None, nodes=None, message_part=None, count=None, index=None):
    """Some entry (or entry `index`) of the report has this level and source, and the message (equal,
    or containing `message_part`) and nodes given."""
    def matches(entry):
        return (entry["level"] == level and entry["source"] == source
                and (message is None or entry["message"] == message)
                and (message_part is None or message_part in entry["message"])
                and (nodes is None or entry.get("nodes") == nodes))

    def check(folder, outputs):
        entries = lint_report(folder)["lint_entries"]
        if count is not None:
            assert len(entries) == count, entries
        candidates = entries if index is None else [entries[index]]
        assert any(matches(entry) for entry in candidates), f"no {level}/{source} entry {message or message_part!r}: {entries}"
    return check


def all_checks(*checks):
    def check(folder, outputs):
        for each in checks:
            each(folder, outputs)
    return check


def lint(model, *args, fails=False):
    return cmd("check", "lint", model, "-o", "report.json", *args, fails=fails)


def parallel_invalid_nodes(folder, outputs):
    report = lint_report(folder)
    expected_failing = {"Add_0": " Incompatible dimensions", "MatMul_0": ORT_MATMUL_ERROR, "MatMul_3": ORT_MATMUL_ERROR}
    for node, message in expected_failing.items():
        entry = {"level": "exception", "nodes": [node], "message": message, "source": "onnxruntime"}
        assert entry in report["lint_entries"], f"missing {entry}: {report['lint_entries']}"
    assert sorted(report["summary"]["passing"]) == ["MatMul_1", "NonZero", "cast_to_int64"], report["summary"]
    assert sorted(report["summary"]["failing"]) == sorted(expected_failing), report["summary"]


CUSTOM_OP_SUBSTRINGS = ("No opset import for domain", "is not a registered function/op",
                        "Could not find an implementation for")

def check_custom_op_warning(folder, outputs):
    entries = lint_report(folder)["lint_entries"]
    assert any(entry["level"] == "warning" and entry["source"] == "onnxruntime"
               and any(part in entry["message"] for part in CUSTOM_OP_SUBSTRINGS) for entry in entries), entries


def assert_in(item, collection):
    assert item in collection, f"{item!r} not in {collection!r}"


CHECK_CASES = [
    Case("check-lint/test_summary[identity_identity]", [lint(f"{M}/identity_identity.onnx")],
         compare_files=["report.json"],
         check=check_lint_summary(["onnx_graphsurgeon_node_1", "onnx_graphsurgeon_node_3"], [])),
    Case("check-lint/test_duplicate_node_names_caught",
         [lint(f"{M}/bad_graph_with_duplicate_node_names.onnx", fails=True)], compare_files=["report.json"],
         check=check_lint_entry("exception", "onnx_graphsurgeon", nodes=["identical"], index=0,
                                message="Duplicate node name: 'identical' for nodes with topological IDs: [0, 1] found.")),
    *[Case(f"check-lint/test_onnx_spec_check[{model}]", [lint(f"{M}/{model}.onnx", fails=True)],
           compare_files=["report.json"], check=check_lint_entry("exception", "onnx_checker"))
      for model in ("bad_graph_with_no_name", "bad_graph_with_no_import_domains", "bad_graph_with_dup_value_info")],
    Case("check-lint/test_onnxrt_parity[ext_weights]",
         [cmd("run", f"{M}/ext_weights.onnx", "--onnxrt", "--ext", f"{M}/data"),
          lint(f"{M}/ext_weights.onnx", "--ext", f"{M}/data")], compare_files=["report.json"]),
    Case("check-lint/test_onnxrt_parity[capability]",
         [cmd("run", f"{M}/capability.onnx", "--onnxrt", fails=True), lint(f"{M}/capability.onnx", fails=True)],
         compare_files=["report.json"]),
    Case("check-lint/test_parallel_invalid_nodes_caught",
         [lint(f"{M}/bad_graph_with_parallel_invalid_nodes.onnx", fails=True)], compare_files=["report.json"],
         check=parallel_invalid_nodes),
    *[Case(f"check-lint/test_data_dependent_errors_caught[{value}]",
           [Setup(["{python}", "-c", "import numpy as np; from polygraphy.json import save_json; "
                   f"save_json([{{'cond': np.array(({value},))}}], 'cond.json')"]),
            lint(f"{M}/bad_graph_conditionally_invalid.onnx", "--load-input-data", "cond.json", fails=not value)],
           compare_files=["report.json"],
           check=check_lint_summary(["If_Node", "MatMul"], []) if value else all_checks(
               check_lint_summary(["If_Node"], ["MatMul"]),
               check_lint_entry("exception", "onnxruntime", message=ORT_MATMUL_ERROR, nodes=["MatMul"])))
      for value in (True, False)],
    Case("check-lint/test_custom_op", [lint(f"{M}/custom_op_node.onnx")], compare_files=["report.json"],
         check=all_checks(check_custom_op_warning, lambda folder, outputs: assert_in(
             "polygraphy_unnamed_node_0", lint_report(folder)["summary"]["passing"]))),
    Case("check-lint/test_multi_level_errors", [lint(f"{M}/bad_graph_with_multi_level_errors.onnx", fails=True)],
         compare_files=["report.json"],
         check=all_checks(check_lint_entry("exception", "onnx_checker",
                                           message_part="Field 'name' of 'graph' is required to be non-empty."),
                          check_lint_entry("exception", "onnxruntime", message_part=ORT_MATMUL_ERROR))),
    Case("check-lint/test_empty_model_warning", [lint(f"{M}/empty.onnx")], compare_files=["report.json"],
         check=check_lint_entry("warning", "onnx_loader", message_part="ONNX model has no nodes", count=1, index=0)),
    Case("check-lint/test_cleanable_warning", [lint(f"{M}/cleanable.onnx")], compare_files=["report.json"],
         check=all_checks(
             check_lint_entry("warning", "onnx_graphsurgeon", message_part="Input: 'e' does not affect outputs, can be removed",
                              count=2, index=0),
             check_lint_entry("warning", "onnx_graphsurgeon", message_part="Does not affect outputs, can be removed",
                              nodes=["G"], index=1))),
    Case("check-lint/test_empty_nodes_renaming", [lint(f"{M}/renamable.onnx")], compare_files=["report.json"],
         check=check_lint_summary(["polygraphy_unnamed_node_0_0", "polygraphy_unnamed_node_3",
                                   "polygraphy_unnamed_node_0_1", "polygraphy_unnamed_node_0"], [])),
]

# ----- convert, data (tests/tools/test_convert.py, test_data.py) ------------------------------------


def check_fp16_casts(folder, outputs):
    model = load(folder, "out.onnx")
    ops = [node.op_type for node in model.graph.node]
    assert ops == ["Cast", "Identity", "Identity", "Cast"], ops
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert model.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT


def check_output_count(count):
    def check(folder, outputs):
        assert len(load(folder, "out.onnx").graph.output) == count
    return check


CONVERT_AND_DATA_CASES = [
    Case("convert/test_fp_to_fp16",
         [cmd("convert", f"{M}/identity_identity.onnx", "--convert-to=onnx", "--fp-to-fp16", "-o", "out.onnx")],
         compare_files=["out.onnx"], check=check_fp16_casts),
    Case("convert/test_modify_onnx_outputs",
         [cmd("convert", f"{M}/identity_identity.onnx", "-o", "out.onnx", "--onnx-outputs", "mark", "all")],
         compare_files=["out.onnx"], check=check_output_count(2)),
    Case("data-to-input/test_merge_inputs_outputs",
         [cmd("run", f"{M}/identity.onnx", "--onnxrt", "--save-inputs", "inputs.json", "--save-outputs", "outputs.json"),
          cmd("data", "to-input", "inputs.json", "outputs.json", "-o", "merged.json")],
         compare_files=["merged.json"], check=check_merged_inputs),
]

# ----- inspect (tests/tools/test_inspect.py) --------------------------------------------------------

INSPECT_MODEL_CASES = [
    Case(f"inspect-model/test_onnx[{model}-{show}]",
         [cmd("inspect", "model", f"{M}/{model}.onnx", "--log-format=no-colors",
              *(["--show", *show] if show else []), *extra)],
         compare_text_of_step=0)
    for model, show, extra in (
        ("identity", [], []), ("identity", ["layers"], []), ("identity_with_initializer", ["layers"], []),
        ("identity_with_initializer", ["layers", "attrs", "weights"], []), ("add_with_dup_inputs", ["layers"], []),
        ("tensor_attr", ["layers"], []), ("tensor_attr", ["layers", "attrs"], []),
        ("tensor_attr", ["layers", "attrs", "weights"], []), ("scan", ["layers", "attrs", "weights"], []),
        ("dim_param", ["layers"], []), ("ext_weights", ["layers", "weights"], ["--ignore-external-data"]),
        ("inp_dim_val_not_set", [], []))
] + [
    Case("inspect-model/test_list_unbounded_dds",
         [cmd("inspect", "model", f"{M}/unbounded_dds.onnx", "--list-unbounded-dds", "--shape-inference",
              expect=["cast_out_6"])]),
]

INSPECT_DATA_CASES = [
    *[Case(f"inspect-data/test_{kind}[{'-'.join(options) or 'none'}]",
           [cmd("run", f"{M}/identity.onnx", "--onnxrt", f"--save-{kind}", "data.json"),
            cmd("inspect", "data", "data.json", *options)], compare_text_of_step=1)
      for kind in ("outputs", "inputs") for options in ([], ["--show-values"])],
    *[Case(f"inspect-data/test_num_items[{count}]",
           [cmd("run", f"{M}/dynamic_identity.onnx", "--onnxrt", "--save-inputs", "inputs.json",
                "--input-shapes=X:[1,2,24,24]"),
            cmd("inspect", "data", "inputs.json", "--show-values", "--line-width=-1", f"--num-items={count}")],
           compare_text_of_step=1)
      for count in (-1, 1, 2, 10, 12)],
    *[Case(f"inspect-sparsity/test_prune_check[{model}]", [cmd("inspect", "sparsity", f"{M}/{model}.onnx")])
      for model in ("matmul", "matmul.bf16", "matmul.bf16.i32data", "conv")],
]

# ----- debug reduce (tests/tools/test_debug.py, TestReduce) ----------------------------------------

FAKE_CHECKER = ["--check", "{python}", "{tools}/fake_reduce_checker.py", "polygraphy_debug.onnx", "--fail-node"]


def check_reduced(count, contains=None, input_count=None, first_input=None, output_count=None, first_output=None):
    """Polygraphy's assertions on reduced.onnx: its node count, a node it keeps, and the number of graph
    inputs/outputs with the name of the first where the test names it."""
    def check(folder, _outputs):
        model = load(folder, "reduced.onnx")
        names = [node.name for node in model.graph.node]
        inputs = [value.name for value in model.graph.input]
        outputs = [value.name for value in model.graph.output]
        assert len(names) == count, names
        if contains:
            assert contains in names, names
        if input_count is not None:
            assert len(inputs) == input_count, inputs
        if first_input is not None:
            assert inputs[:1] == [first_input], inputs
        if output_count is not None:
            assert len(outputs) == output_count, outputs
        if first_output is not None:
            assert outputs[:1] == [first_output], outputs
    return check


def isolate_count(mode, node):
    if mode == "bisect" and node == "onnx_graphsurgeon_node_1":
        return 3
    if mode == "bisect" and node == "onnx_graphsurgeon_node_7":
        return 2
    return 1


DEBUG_CASES = [
    *[Case(f"debug-reduce/test_can_isolate_node[{mode}-{node}]",
           [cmd("debug", "reduce", f"{M}/reducable.onnx", "--output=reduced.onnx", "--mode", mode, "--show-output",
                "--min-good=good_reduced.onnx", *FAKE_CHECKER, node)],
           compare_files=["reduced.onnx"], check=check_reduced(isolate_count(mode, node), node))
      for mode in ("linear", "bisect")
      for node in ("onnx_graphsurgeon_node_1", "onnx_graphsurgeon_node_3", "onnx_graphsurgeon_node_5",
                   "onnx_graphsurgeon_node_7", "onnx_graphsurgeon_node_9")],
    Case("debug-reduce/test_no_reduce_inputs",
         [cmd("debug", "reduce", f"{M}/reducable.onnx", "--output=reduced.onnx", "--show-output",
              "--no-reduce-inputs", "--mode=linear", *FAKE_CHECKER, "onnx_graphsurgeon_node_7")],
         compare_files=["reduced.onnx"],
         check=check_reduced(4, "onnx_graphsurgeon_node_7", input_count=2, output_count=1,
                             first_output="identity_out_6")),
    Case("debug-reduce/test_no_reduce_outputs",
         [cmd("debug", "reduce", f"{M}/reducable.onnx", "--output=reduced.onnx", "--show-output",
              "--no-reduce-outputs", "--mode=linear", *FAKE_CHECKER, "onnx_graphsurgeon_node_3")],
         compare_files=["reduced.onnx"],
         check=check_reduced(4, "onnx_graphsurgeon_node_7", input_count=1, first_input="Y0", output_count=2)),
    Case("debug-reduce/test_reduce_custom_return_code",
         [cmd("debug", "reduce", f"{M}/reducable.onnx", "--output=reduced.onnx", "--show-output", "--fail-code=1",
              *FAKE_CHECKER, "onnx_graphsurgeon_node_5", "--default-return-code=2")],
         compare_files=["reduced.onnx"], check=check_reduced(1, "onnx_graphsurgeon_node_5")),
]


def check_kept_branches(fail_nodes):
    """test_no_reduce_required_branches: both failing nodes kept, the other side's branch removed."""
    def check(folder, _outputs):
        names = [node.name for node in load(folder, "reduced.onnx").graph.node]
        assert all(node in names for node in fail_nodes), names
        assert len(names) <= 3, names
    return check


def check_static_io(folder, _outputs):
    """test_reduce_shape_inference: the reduced model's input and output have the --model-input-shapes shape."""
    model = load(folder, "reduced.onnx")
    assert dims(model.graph.input[0]) == [1, 2, 5, 5], dims(model.graph.input[0])
    assert dims(model.graph.output[0]) == [1, 2, 5, 5], dims(model.graph.output[0])


def check_constant_lowered(folder, _outputs):
    """test_reduce_with_constant: one node (the failing one) and no graph input, the Constant's output
    being a constant tensor rather than a graph input."""
    model = load(folder, "reduced.onnx")
    assert [node.name for node in model.graph.node] == ["onnx_graphsurgeon_node_3"], model.graph.node
    initializers = {tensor.name for tensor in model.graph.initializer}
    assert not [value.name for value in model.graph.input if value.name not in initializers], model.graph.input


def check_same_reduction(folder, _outputs):
    """test_reduce_with_replay: the run from the replay gives the same model as the first run."""
    assert load(folder, "first.onnx") == load(folder, "second.onnx")


def check_iteration_info_removed(folder, _outputs):
    assert not (folder / "iter_info.json").exists(), "the --iteration-info file is left behind"


# Polygraphy's test writes this check into its folder: each iteration's number names a file that must be new.
ITERATION_CHECK = """
import json, os
iteration = json.load(open('iter_info.json'))['iteration']
path = os.path.abspath(str(iteration) + '.txt')
print(path)
assert not os.path.exists(path)
open(path, 'w').write('File')
"""

# Polygraphy's test saves these inputs with polygraphy.json.save_json (Y0 float64, as its np.array gives).
CUSTOM_INPUTS_SCRIPT = ("import numpy as np; from polygraphy.json import save_json; "
                        "save_json([{'X0': np.array([3.14159265], dtype=np.float32), 'Y0': np.array([2.7749389])}], "
                        "'custom_inputs.json')")

DEBUG_MORE_CASES = [
    *[Case(f"debug-reduce/test_reduce_custom_fail_message[{'fail-code-0' if fail_code else 'no-fail-code'}]",
           [cmd("debug", "reduce", f"{M}/reducable.onnx", "--output=reduced.onnx", "--show-output", "--fail-regex",
                "REALLY BAD", "BAD NODE", *fail_code, *FAKE_CHECKER, "onnx_graphsurgeon_node_5",
                "--fail-return-code=0")],
           compare_files=["reduced.onnx"], check=check_reduced(1, "onnx_graphsurgeon_node_5"))
      for fail_code in ([], ["--fail-code=0"])],
    *[Case(f"debug-reduce/test_no_reduce_required_branches[{'-'.join(nodes)}]",
           [cmd("debug", "reduce", f"{M}/reducable.onnx", "--output=reduced.onnx", "--show-output", *FAKE_CHECKER,
                *nodes)],
           compare_files=["reduced.onnx"], check=check_kept_branches(nodes))
      for nodes in (["onnx_graphsurgeon_node_1", "onnx_graphsurgeon_node_3"],
                    ["onnx_graphsurgeon_node_7", "onnx_graphsurgeon_node_9"])],
    *[Case(f"debug-reduce/test_reduce_shape_inference[{'force-fallback' if opts else 'onnx'}]",
           [cmd("debug", "reduce", f"{M}/dynamic_identity.onnx", "--output=reduced.onnx", "--show-output",
                "--model-input-shapes=X:[1,2,5,5]", *opts, "--check", "false")],
           compare_files=["reduced.onnx"], check=check_static_io)
      for opts in ([], ["--force-fallback-shape-inference"])],
    # Custom input data given to reduce (not negative) or only to the check (negative): with it, the branch
    # folded away takes the check's values and the check passes; without, it fails.
    *[Case(f"debug-reduce/test_reduce_custom_data_multibranch_input[{'negative' if negative else 'positive'}]",
           [Setup(["{python}", "-c", CUSTOM_INPUTS_SCRIPT]),
            cmd("run", f"{M}/reducable.onnx", "--onnxrt", "--load-inputs", "custom_inputs.json", "--onnx-outputs",
                "mark", "all", "--save-outputs", "layerwise_outputs.json"),
            cmd("debug", "reduce", f"{M}/reducable.onnx", "--no-reduce-outputs", "-o", "reduced.onnx",
                *([] if negative else ["--load-inputs", "custom_inputs.json"]), "--check", "{tool}", "run",
                "polygraphy_debug.onnx", "--onnxrt", "--load-inputs", "custom_inputs.json", "--load-outputs",
                "layerwise_outputs.json",
                **{"expect" if negative else "reject": ["FAILED", "Difference exceeds tolerance",
                                                        "Please ensure that you have provided a data loader "
                                                        "argument directly"]})])
      for negative in (True, False)],
    Case("debug-reduce/test_reduce_with_constant",
         [cmd("debug", "reduce", f"{M}/reducable_with_const.onnx", "--no-shape-inference", "--mode=linear",
              "--output=reduced.onnx", *FAKE_CHECKER, "onnx_graphsurgeon_node_3")],
         compare_files=["reduced.onnx"], check=check_constant_lowered),
    Case("debug-reduce/test_reduce_with_replay",
         [cmd("debug", "reduce", f"{M}/reducable.onnx", "--output=first.onnx", *FAKE_CHECKER,
              "onnx_graphsurgeon_node_1", expect=["Running fake_reduce_checker.py"]),
          Setup(["{python}", "-c", "import os; assert os.path.exists('polygraphy_debug_replay.json'), os.listdir()"]),
          cmd("debug", "reduce", f"{M}/reducable.onnx", "--output=second.onnx",
              "--load-debug-replay=polygraphy_debug_replay.json", *FAKE_CHECKER, "onnx_graphsurgeon_node_1",
              reject=["Running fake_reduce_checker.py"], expect=["Loading iteration information from debug replay"])],
         compare_files=["first.onnx", "second.onnx"], check=check_same_reduction),
    Case("debug-reduce/test_reduce_node_with_multiple_outputs_that_are_graph_outputs",
         [cmd("debug", "reduce", f"{M}/multi_output.onnx", "--output=reduced.onnx", "--no-reduce-outputs",
              "--mode=linear", "--check", "{tool}", "run", "polygraphy_debug.onnx", "--onnxrt", reject=["FAILED"])]),
    *[Case(f"debug-repeat/test_until[{until}-{check}]",
           [cmd("debug", "repeat", "--until", until, "--check", check,
                expect=[f"Finished {iterations} iteration(s)"])])
      for until, check, iterations in (("good", "true", 1), ("bad", "false", 1), ("5", "false", 5))],
    Case("debug-repeat/test_iteration_info",
         [Setup(["{python}", "-c", f"open('check.py', 'w').write({ITERATION_CHECK!r})"]),
          cmd("debug", "repeat", "--until=5", "--iteration-info", "iter_info.json", "--show-output", "--check",
              "{python}", "check.py", reject=["FAILED"], expect=["Passed: 5/5 | Pass Rate: 100.0%"])],
         check=check_iteration_info_removed),
    *[Case(f"debug-repeat/test_ignore_fail_code[{' '.join(opts) or 'none'}]",
           [cmd("debug", "repeat", "--until=5", *opts, "--check", "false", expect=[expected])])
      for opts, expected in (([], "Passed: 0/5 | Pass Rate: 0.0%"),
                             (["--ignore-fail-code=2"], "Passed: 0/5 | Pass Rate: 0.0%"),
                             (["--ignore-fail-code=1"], "Passed: 5/5 | Pass Rate: 100.0%"))],
]

# ----- template (tests/tools/test_template.py) -------------------------------------------------------

TEMPLATE_CASES = [
    # As Polygraphy's test, on a copy of the model: the script writes <model>_updated.onnx beside it.
    Case("template/test_onnx_gs_basic",
         [Setup(["{python}", "-c", f"import shutil; shutil.copyfile('{M}/identity.onnx', 'model.onnx')"]),
          cmd("template", "onnx-gs", "model.onnx", "-o", "process_model.py"), Setup(["{python}", "process_model.py"])],
         compare_files=["model_updated.onnx"]),
]

ALL_CASES = [*RUN_CASES, *SURGEON_CASES, *CHECK_CASES, *CONVERT_AND_DATA_CASES, *INSPECT_MODEL_CASES,
             *INSPECT_DATA_CASES, *DEBUG_CASES, *DEBUG_MORE_CASES, *TEMPLATE_CASES, *EXAMPLE_CASES]
