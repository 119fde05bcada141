"""The user's documents' examples (seeds 001 and 002) with Parity's runners in place of
TensorFlow/TensorRT."""
import numpy as np

from parity.backend.base import BaseRunner
from parity.backend.onnx import BytesFromOnnx, OnnxFromPath
from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx, SessionFromOnnxBytes
from parity.backend.openvino import OpenVINORunner
from parity.backend.ref import RefRunner
from parity.common import TensorMetadata
from parity.comparator import Comparator, CompareFunc, DataLoader, RunResults


def test_seed_001_putting_it_all_together(models):
    # Loaders composed into each other; nothing is loaded until the runners activate.
    load_model = OnnxFromPath(models["mixed"])
    export_serialized_onnx = BytesFromOnnx(load_model)
    build_onnxrt_session = SessionFromOnnxBytes(export_serialized_onnx)

    runners = [
        RefRunner(load_model),
        OnnxrtRunner(build_onnxrt_session),
        OpenVINORunner(export_serialized_onnx, precision="f32"),
    ]
    # For this model, assume inputs need to be bounded.
    data_loader = DataLoader(int_range=(0, 2), float_range=(0.0, 2.0))
    run_results = Comparator.run(runners, data_loader=data_loader)
    assert bool(Comparator.compare_accuracy(run_results, compare_func=CompareFunc.simple(atol=1e-5)))

    [(_, [ref_outputs])] = run_results[:1]
    assert ref_outputs["y"].dtype == np.float32 and ref_outputs["y"].shape == (1, 3, 4, 4)
    x_range = (ref_outputs["y"].min(), ref_outputs["y"].max())
    assert 0.0 <= x_range[0] and x_range[1] <= 2.0 + 3.0  # tanh(x) * 3 + x over x in [0, 2]
    assert set(np.unique((ref_outputs["z"] - 1) // 2)) <= {0, 1, 2}


def test_seed_002_identity_build_run_compare_and_save(models, tmp_path):
    # Build and run: a runner as a context manager.
    with OnnxrtRunner(SessionFromOnnx(models["identity"])) as runner:
        inp_data = np.ones(shape=(1, 1, 2, 2), dtype=np.float32)
        outputs = runner.infer(feed_dict={"x": inp_data})
        assert np.array_equal(outputs["y"], inp_data)
        assert runner.last_inference_time() > 0

    # Compare two runners on synthetic data, then save the results.
    runners = [RefRunner(models["identity"]), OnnxrtRunner(SessionFromOnnx(models["identity"]))]
    run_results = Comparator.run(runners)
    assert bool(Comparator.compare_accuracy(run_results, compare_func=CompareFunc.simple(atol=1e-8)))
    run_results.save(str(tmp_path / "inference_results.json"))
    loaded = RunResults.load(str(tmp_path / "inference_results.json"))
    assert list(loaded.keys()) == list(run_results.keys())
    for (_, [saved]), (_, [ran]) in zip(loaded.items(), run_results.items()):
        assert np.array_equal(saved["y"], ran["y"])


class IdentityInPython(BaseRunner):
    """A custom runner written in Python (seed 001's "Writing A Custom Runner")."""

    def __init__(self):
        super().__init__(prefix="python-identity")
        self.activations = 0

    def activate_impl(self):
        self.activations += 1

    def get_input_metadata_impl(self):
        return TensorMetadata().add("x", np.float32, (1, 1, 2, 2))

    def infer_impl(self, feed_dict):
        return {"y": np.array(feed_dict["x"], copy=True)}

    def deactivate_impl(self):
        pass


def test_custom_python_runner_against_onnxrt(models, capsys):
    custom = IdentityInPython()
    assert custom.name.startswith("python-identity-N")
    run_results = Comparator.run([custom, OnnxrtRunner(SessionFromOnnx(models["identity"]))],
                                 data_loader=DataLoader(iterations=3))
    assert f"[I] {custom.name:35} | Activating and starting inference" in capsys.readouterr().out
    assert custom.activations == 1 and not custom.is_active
    assert list(run_results.keys())[0] == custom.name
    assert len(run_results[custom.name]) == 3
    accuracy = Comparator.compare_accuracy(run_results, compare_func=CompareFunc.simple(atol=0, rtol=0))
    assert bool(accuracy)
    assert accuracy.stats() == (3, 0, 3)

    # A custom runner that is wrong is reported as a mismatch, not an error.
    class Doubling(IdentityInPython):
        def infer_impl(self, feed_dict):
            return {"y": feed_dict["x"] * 2}

    run_results = Comparator.run([Doubling(), OnnxrtRunner(SessionFromOnnx(models["identity"]))])
    assert not bool(Comparator.compare_accuracy(run_results))


class NamedIdentityInPython(IdentityInPython):
    def __init__(self, name):
        BaseRunner.__init__(self, name=name)
        self.activations = 0


def test_runners_given_a_name_show_it_in_log_lines(models, capsys):
    """name=: the log lines and the results carry exactly that name, for Python and C++ runners."""
    runners = [NamedIdentityInPython("my-python-runner"),
               OnnxrtRunner(SessionFromOnnx(models["identity"]), name="my-ort")]
    run_results = Comparator.run(runners)
    output = capsys.readouterr().out
    for name in ("my-python-runner", "my-ort"):
        assert f"[I] {name:35} | Activating and starting inference" in output, output
        assert f"{name}-N" not in output, output
    assert list(run_results.keys()) == ["my-python-runner", "my-ort"]
    renamed = RefRunner(models["identity"])
    renamed.name = "renamed-ref"
    Comparator.run([renamed])
    assert f"[I] {'renamed-ref':35} | Activating and starting inference" in capsys.readouterr().out


def test_custom_data_loaders_warm_up_and_saved_inputs(models, tmp_path):
    """data_loader may be any iterable of feed dicts (seed 002's TIP), e.g. a generator or a list."""
    from parity.json import load_json

    feeds = [{"x": np.full((1, 1, 2, 2), float(i), np.float32)} for i in range(3)]

    def generator():
        yield from feeds

    for data_loader in (feeds, generator()):
        runners = [RefRunner(models["identity"]), OnnxrtRunner(SessionFromOnnx(models["identity"]))]
        run_results = Comparator.run(runners, data_loader=data_loader, warm_up=2,
                                     save_inputs_path=str(tmp_path / "inputs.json"))
        for _, iterations in run_results.items():
            assert [float(result["y"][0, 0, 0, 0]) for result in iterations] == [0.0, 1.0, 2.0]
        saved = load_json(tmp_path / "inputs.json")
        assert all(np.array_equal(s["x"], f["x"]) for s, f in zip(saved, feeds)) and len(saved) == 3


def test_unsupported_options_raise():
    import pytest

    with pytest.raises(NotImplementedError, match="use_subprocess"):
        Comparator.run([], use_subprocess=True)
    with pytest.raises(NotImplementedError, match="find_output_func"):
        CompareFunc.simple(find_output_func=lambda *args: [])
