"""PyTorch (Polygraphy's polygraphy.backend.pyt): PytRunner runs an nn.Module in this process;
PytWorkerRunner runs it with Parity's C++ runner in a Python worker of another interpreter (the CLI's
`--torch`). Both run parity/backend/pyt/_torch_model.py: eval() and torch.inference_mode() always,
the device, the precision (a cast copy or autocast), TF32 and torch.compile as options, each logged
when the runner activates.

Loaders (lazy, as Polygraphy's): ModuleFromScript (a script's function returning the module, default
"load_model"), ModuleFromTorchScript (torch.jit.load), ModuleFromTorchExport (a .pt2 program)."""
import os

import numpy as np

from parity import _parity
from parity._models import model_source
from parity.backend.base.loader import BaseLoader, evaluate
from parity.backend.base.runner import BaseRunner, NativeRunner
from parity.backend.pyt import _torch_model
from parity.common import TensorMetadata


def _loaded(load, *args):
    """load(*args), its TorchModelError (a missing file or function, a non-module) an InvalidInputError."""
    try:
        return load(*args)
    except _torch_model.TorchModelError as error:
        raise _parity.InvalidInputError(str(error)) from None


class ModuleFromScript(BaseLoader):
    """The torch.nn.Module that `function` (default "load_model") of the Python file `path` returns;
    the file's example_inputs() (when it has one) gives PytRunner its inputs when no input metadata
    or ONNX model is given."""

    def __init__(self, path, function=None):
        self.path = os.fspath(path)
        self.function = function

    def call_impl(self):
        return _loaded(_torch_model.load_module_from_script, self.path, self.function)

    def _source(self):
        return {"kind": "script", "path": self.path, "function": self.function}


class ModuleFromTorchScript(BaseLoader):
    """A TorchScript module saved with torch.jit.save (torch.jit.trace or torch.jit.script)."""

    def __init__(self, path, device="cpu"):
        self.path = os.fspath(path)
        self.device = device

    def call_impl(self):
        return _loaded(_torch_model.load_torchscript, self.path, self.device)

    def _source(self):
        return {"kind": "torchscript", "path": self.path}


class ModuleFromTorchExport(BaseLoader):
    """The module of a torch.export program saved with torch.export.save (a .pt2 file)."""

    def __init__(self, path):
        self.path = os.fspath(path)

    def call_impl(self):
        return _loaded(_torch_model.load_torch_export, self.path)

    def _source(self):
        return {"kind": "export", "path": self.path}


def _onnx_io(onnx_model):
    """(TensorMetadata of the graph inputs, graph output names) of an ONNX model: a path, an
    onnx.ModelProto, bytes, or a loader of one."""
    import onnx

    model = onnx_model
    if not isinstance(model, (str, os.PathLike, bytes)) and not hasattr(model, "SerializeToString"):
        path = getattr(model, "path", None)
        model = path if isinstance(path, str) and getattr(model, "is_plain_path", lambda: False)() else evaluate(model)
    if isinstance(model, (str, os.PathLike)):
        model = onnx.load(os.fspath(model), load_external_data=False)
    elif isinstance(model, bytes):
        model = onnx.load_from_string(model)
    graph = model.graph
    initializers = {initializer.name for initializer in graph.initializer}
    metadata = TensorMetadata()
    for value in graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        shape = None
        if tensor_type.HasField("shape"):
            shape = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor_type.shape.dim]
        metadata.add(value.name, onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type), shape)
    return metadata, [output.name for output in graph.output]


def _log(name, messages):
    from parity.logger import G_LOGGER

    for message in messages:
        G_LOGGER.info(f"{name:35} | {message}")


class PytRunner(BaseRunner):
    """Runs a PyTorch module in this process (Polygraphy's PytRunner, working on the CPU and on GPUs).

    model: a torch.nn.Module, or a callable returning one (a loader). input_metadata: TensorMetadata of
    the inputs; output_names: the names of the module's flattened outputs (a tensor, tuples, lists,
    dicts and ModelOutputs, see _torch_model.flatten_outputs). When they are not given, onnx_model (the
    module's ONNX export: a path, onnx.ModelProto or loader) gives both; else a ModuleFromScript's
    example_inputs() gives the inputs, and the outputs keep their own names ("output", "output_<i>",
    a dict's keys).

    device: "cpu", "cuda" or "cuda:N"; dtype: "fp32", "fp16" or "bf16", run as dtype_mode "cast" (a
    cast copy of the module and its floating inputs) or "autocast" (torch.autocast); tf32: True/False
    for CUDA matmuls and cuDNN convolutions, None for torch's defaults; compile_mode: torch.compile's
    mode ("default", "reduce-overhead", "max-autotune", ...), None for eager. Reduced-precision outputs
    are returned as float32."""

    def __init__(self, model, input_metadata=None, output_names=None, name=None, onnx_model=None, device="cpu",
                 dtype="fp32", dtype_mode="cast", tf32=None, compile_mode=None):
        super().__init__(name=name, prefix="pytorch-runner")
        self._model = model
        self.input_metadata = input_metadata
        self.output_names = list(output_names) if output_names is not None else None
        self._onnx_model = onnx_model
        self._options = _torch_model.TorchRunOptions(device, dtype, dtype_mode, tf32, compile_mode)
        self._torch_model = None
        self._metadata = None

    def activate_impl(self):
        torch = _torch_model._torch()
        module = self._model
        while callable(module) and not isinstance(module, torch.nn.Module):
            module = module()
        metadata, output_names = self.input_metadata, self.output_names
        if self._onnx_model is not None and (metadata is None or output_names is None):
            onnx_metadata, onnx_outputs = _onnx_io(self._onnx_model)
            metadata = metadata if metadata is not None else onnx_metadata
            output_names = output_names if output_names is not None else onnx_outputs
        if metadata is None:
            examples = None
            if isinstance(self._model, ModuleFromScript):
                examples = _torch_model.example_inputs_from_script(self._model.path)
            if examples is None:
                raise _parity.InvalidInputError(
                    f"{self.name}: no input metadata: give input_metadata, onnx_model, or a ModuleFromScript whose "
                    f"script has an {_torch_model.EXAMPLE_INPUTS_FUNCTION}() function")
            metadata = TensorMetadata()
            for input_name, dtype, shape in _torch_model.example_metadata(module, examples):
                metadata.add(input_name, np.dtype(dtype), shape)
        try:
            self._torch_model = _torch_model.TorchModel(module, self._options, output_names)
        except _torch_model.TorchModelError as error:
            raise _parity.InvalidInputError(f"{self.name}: {error}") from None
        self._metadata = metadata
        _log(self.name, self._torch_model.messages)

    def get_input_metadata_impl(self):
        return self._metadata

    def infer_impl(self, feed_dict):
        feeds = {name: feed_dict[name] for name in self._metadata if name in feed_dict}
        try:
            return self._torch_model.infer(feeds)
        except _torch_model.ForwardError as error:
            raise _parity.InvalidInputError(f"{self.name}: {error}") from error.original
        except _torch_model.TorchModelError as error:
            raise _parity.InvalidInputError(f"{self.name}: {error}") from None

    def deactivate_impl(self):
        self._torch_model = None


class PytWorkerRunner(NativeRunner):
    """Runs a PyTorch module with Parity's C++ runner (the CLI's --torch) in a Python worker of
    `python` (default: $PARITY_PYTHON, else python3 on PATH), e.g. an interpreter whose torch has CUDA.
    model: a ModuleFromScript, ModuleFromTorchScript or ModuleFromTorchExport (the worker loads it).
    onnx_model: the module's ONNX export, giving the inputs and output names; without it, input_shapes
    ({name: shape}, float32) or the script's example_inputs(). The other options are PytRunner's."""

    def __init__(self, model, onnx_model=None, input_shapes=None, name=None, device="cpu", dtype="fp32",
                 dtype_mode="cast", tf32=None, compile_mode=None, python=None):
        source = model._source() if hasattr(model, "_source") else None
        if source is None:
            raise TypeError("PytWorkerRunner: model must be a ModuleFromScript, ModuleFromTorchScript or "
                            f"ModuleFromTorchExport, got {type(model).__name__}")
        native = _parity.TorchRunner(
            source["kind"], source["path"], source.get("function") or "",
            model_source(onnx_model) if onnx_model is not None else None, device, dtype, dtype_mode, tf32,
            compile_mode, python or "", [(k, [int(d) for d in v]) for k, v in (input_shapes or {}).items()])
        super().__init__(native, name)
