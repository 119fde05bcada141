"""ONNX loaders (Polygraphy's polygraphy.backend.onnx): each takes a model (an onnx.ModelProto,
serialized bytes, a path, or a loader returning one) and returns an onnx.ModelProto; the passes
are Parity's C++ ones. Every loader has an immediately-evaluated snake_case twin."""
import os

from parity import _parity
from parity._models import serialized
from parity.backend.base.loader import BaseLoader, evaluate
from parity.constants import MARK_ALL


def _proto(data):
    import onnx

    return onnx.ModelProto.FromString(data)


class OnnxFromPath(BaseLoader):
    """Loads an ONNX model from a file (external data read in, relative to external_data_dir when
    given, else to the model's folder)."""

    def __init__(self, path, external_data_dir=None, ignore_external_data=None):
        if ignore_external_data:
            raise NotImplementedError(
                "OnnxFromPath: ignore_external_data is not supported; external data is always read"
            )
        self.path = os.fspath(path)
        self.external_data_dir = os.fspath(external_data_dir) if external_data_dir is not None else None

    def is_plain_path(self):
        return True

    def call_impl(self):
        return _proto(_parity.load_model_bytes(evaluate(self.path), self.external_data_dir or ""))


class OnnxFromBytes(BaseLoader):
    """Deserializes an ONNX model."""

    def __init__(self, serialized_onnx):
        self._serialized = serialized_onnx

    def call_impl(self):
        return _proto(bytes(evaluate(self._serialized)))


class BytesFromOnnx(BaseLoader):
    """Serializes an ONNX model."""

    def __init__(self, model):
        self._model = model

    def call_impl(self):
        return serialized(evaluate(self._model))


class SaveOnnx(BaseLoader):
    """Saves the model to `path` and returns it (external data as Parity's save decides, or
    always with external_data_path)."""

    def __init__(self, model, path, external_data_path=None, size_threshold=None, all_tensors_to_one_file=None):
        self._model = model
        self.path = os.fspath(path)
        self.external_data_path = external_data_path
        self.size_threshold = size_threshold

    def call_impl(self):
        model = evaluate(self._model)
        _parity.save_model_bytes(
            serialized(model),
            self.path,
            external_data=True if self.external_data_path is not None else None,
            size_threshold=self.size_threshold if self.size_threshold is not None else 1024,
            location=self.external_data_path or "",
        )
        return model if hasattr(model, "SerializeToString") else _proto(serialized(model))


class _BytesPass(BaseLoader):
    def __init__(self, model):
        self._model = model

    def call_impl(self):
        return _proto(self.run(serialized(evaluate(self._model))))


class InferShapes(_BytesPass):
    """ONNX shape inference (warns, does not fail, when it stops early)."""

    def __init__(self, model, error_ok=None, external_data_dir=None, save_to_disk_threshold_bytes=None,
                 allow_onnxruntime=None):
        super().__init__(model)

    def run(self, data):
        return _parity.infer_shapes(data)


class FoldConstants(_BytesPass):
    """Parity's constant folding (the CLI's `surgeon sanitize --fold-constants`)."""

    def __init__(self, model, num_passes=None, do_shape_inference=None, partitioning=None, fold_shapes=None,
                 size_threshold=None, allow_onnxruntime_shape_inference=None, error_ok=None):
        super().__init__(model)
        if partitioning not in (None, "basic", "recursive"):
            raise ValueError(f"FoldConstants: partitioning must be None, 'basic' or 'recursive', got {partitioning!r}")
        self.partitioning = partitioning
        self.num_passes = num_passes or 0
        self.fold_shapes = True if fold_shapes is None else fold_shapes
        self.size_threshold = size_threshold

    def run(self, data):
        return _parity.fold_constants(data, self.num_passes, self.size_threshold, self.fold_shapes, self.partitioning)


class ExtractSubgraph(_BytesPass):
    """Cuts the graph to the nodes computing `output_names` from `input_names` (dtypes and shapes
    from shape inference)."""

    def __init__(self, model, input_metadata=None, output_metadata=None, check_meta=None):
        super().__init__(model)
        self.input_names = list(input_metadata.keys()) if input_metadata is not None else None
        self.output_names = list(output_metadata.keys()) if output_metadata is not None else None

    def run(self, data):
        model = _proto(data)
        inputs = self.input_names
        if inputs is None:
            initializers = {i.name for i in model.graph.initializer}
            inputs = [i.name for i in model.graph.input if i.name not in initializers]
        outputs = self.output_names if self.output_names is not None else [o.name for o in model.graph.output]
        return _parity.extract_subgraph(data, inputs, outputs)


class ConvertToFp16(_BytesPass):
    """float32 -> float16 (Parity's `convert --fp-to-fp16`; graph inputs/outputs stay float32)."""

    def __init__(self, model):
        super().__init__(model)

    def run(self, data):
        return _parity.convert_to_reduced_precision(data, "float16")


class ModifyOutputs(BaseLoader):
    """Sets the graph outputs: a list of tensor names, or MARK_ALL for every tensor; exclude_outputs
    are left out."""

    def __init__(self, model, outputs=None, exclude_outputs=None, copy=None):
        self._model = model
        self.outputs = outputs
        self.exclude_outputs = set(exclude_outputs or [])

    def call_impl(self):
        import onnx

        model = evaluate(self._model)
        model = _proto(serialized(model))
        graph = model.graph
        if self.outputs == MARK_ALL:
            existing = {o.name for o in graph.output}
            names = [o.name for o in graph.output]
            for node in graph.node:
                names += [t for t in node.output if t and t not in existing]
                existing.update(node.output)
        elif self.outputs is not None:
            names = list(self.outputs)
        else:
            names = [o.name for o in graph.output]
        known = {v.name: v for v in list(graph.value_info) + list(graph.output) + list(graph.input)}
        del graph.output[:]
        for name in names:
            if name in self.exclude_outputs:
                continue
            graph.output.append(known[name] if name in known else onnx.ValueInfoProto(name=name))
        return model


def _twin(loader_class):
    def immediately(*args, **kwargs):
        return loader_class(*args, **kwargs)()

    immediately.__doc__ = f"Immediately evaluated {loader_class.__name__}: {loader_class.__doc__}"
    return immediately


onnx_from_path = _twin(OnnxFromPath)
onnx_from_bytes = _twin(OnnxFromBytes)
bytes_from_onnx = _twin(BytesFromOnnx)
save_onnx = _twin(SaveOnnx)
infer_shapes = _twin(InferShapes)
fold_constants = _twin(FoldConstants)
extract_subgraph = _twin(ExtractSubgraph)
convert_to_fp16 = _twin(ConvertToFp16)
modify_outputs = _twin(ModifyOutputs)
