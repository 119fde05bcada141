"""A PyTorch model prepared to run, and its loaders: the one implementation behind both the Python
API's PytRunner (in-process) and the `parity run --torch` runner (Parity's C++ runner starts a
Python worker whose commands call this file; its text is built into the `parity` binary).

Pure Python over torch, numpy and the standard library: it never imports Parity's compiled
extension, so any interpreter with torch runs it.

- Loaders: an nn.Module from a script's function (load_module_from_script, default function
  "load_model"), a TorchScript file (load_torchscript, torch.jit.load), a torch.export program
  (load_torch_export, torch.export.load(...).module()); load_module picks one from a source dict.
- TorchModel(module, options, output_names): eval() always; the device ("cpu", "cuda", "cuda:N");
  the precision ("fp32", or "fp16"/"bf16" as a cast copy of the module or under autocast); TF32 for
  CUDA matmuls and cuDNN convolutions (on, off, or torch's defaults left as they are); torch.compile
  with a mode. infer() runs under torch.inference_mode(), flattens the outputs (a tensor, tuples and
  lists, dicts and HF ModelOutputs) into the output names, and on CUDA copies each output to the
  host once, into pinned memory, synchronizing before it returns. Every option is described in
  TorchModel.messages when the model is prepared, so the user sees what ran.
"""
import importlib.util
import inspect
import os
import sys
import traceback

# Where a script's functions are looked for when the source names none.
DEFAULT_MODEL_FUNCTION = "load_model"
EXAMPLE_INPUTS_FUNCTION = "example_inputs"

DTYPES = ("fp32", "fp16", "bf16")
DTYPE_MODES = ("cast", "autocast")


class TorchModelError(Exception):
    """A problem with the model or its options, reported as its message alone."""


def _torch():
    import torch

    return torch


def _load_script(path):
    """Imports a Python file as a module of its own (its folder first on sys.path while it loads)."""
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise TorchModelError(f"model script {path} does not exist")
    name = "parity_torch_script_" + str(abs(hash(path)))
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(path)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    finally:
        if sys.path and sys.path[0] == folder:
            del sys.path[0]
    sys.modules[name] = module
    return module


def _script_function(path, function):
    script = _load_script(path)
    found = getattr(script, function, None)
    if found is None:
        defined = sorted(n for n, v in vars(script).items() if inspect.isfunction(v) and not n.startswith("_"))
        raise TorchModelError(f"{path} has no function '{function}' (its functions: {', '.join(defined) or 'none'})")
    if not callable(found):
        raise TorchModelError(f"{path}: '{function}' is not a function")
    return found


def load_module_from_script(path, function=None):
    """The nn.Module that `function` (default "load_model") of the Python file `path` returns."""
    torch = _torch()
    function = function or DEFAULT_MODEL_FUNCTION
    module = _script_function(path, function)()
    if not isinstance(module, torch.nn.Module):
        raise TorchModelError(f"{path}:{function} returned {type(module).__module__}.{type(module).__qualname__}, "
                              "not a torch.nn.Module")
    return module


def load_torchscript(path, device="cpu"):
    """A TorchScript module saved by torch.jit.save (torch.jit.trace or torch.jit.script), loaded
    onto `device`."""
    torch = _torch()
    if not os.path.isfile(path):
        raise TorchModelError(f"TorchScript file {path} does not exist")
    try:
        return torch.jit.load(path, map_location=device)
    except RuntimeError as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise TorchModelError(f"{path} is not a TorchScript file torch.jit.load can read ({first}); a torch.export "
                              "program is read from a .pt2 file") from None


def load_torch_export(path):
    """The module of a torch.export program saved by torch.export.save (a .pt2 file)."""
    torch = _torch()
    if not os.path.isfile(path):
        raise TorchModelError(f"torch.export program {path} does not exist")
    return torch.export.load(path).module()


def load_module(source, device="cpu"):
    """The module a source describes: {"kind": "script", "path", "function"}, {"kind":
    "torchscript", "path"} or {"kind": "export", "path"}."""
    kind = source["kind"]
    if kind == "script":
        return load_module_from_script(source["path"], source.get("function"))
    if kind == "torchscript":
        return load_torchscript(source["path"], device)
    if kind == "export":
        return load_torch_export(source["path"])
    raise TorchModelError(f"unknown model source kind '{kind}'")


def model_kind(path):
    """How a model file is loaded: "export" for a .pt2 file, else "torchscript"."""
    return "export" if str(path).endswith(".pt2") else "torchscript"


def example_inputs_from_script(path, function=None):
    """The example inputs of a script ({name: tensor}, or a tuple of tensors) from its function
    (default "example_inputs"); None when the script has no such function and none was named."""
    script = _load_script(path)
    name = function or EXAMPLE_INPUTS_FUNCTION
    if function is None and not hasattr(script, name):
        return None
    inputs = _script_function(path, name)()
    return inputs


def forward_parameter_names(module):
    """The names of the module's forward() parameters, in order (self left out); None when they
    cannot be read (a parameter taking *args)."""
    forward = getattr(module, "forward", None)
    schema = getattr(forward, "schema", None)
    if schema is not None:  # a TorchScript method
        return [argument.name for argument in schema.arguments[1:]]
    try:
        parameters = inspect.signature(forward).parameters.values()
    except (TypeError, ValueError):
        return None
    names = []
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            return None
        names.append(parameter.name)
    return names


def example_metadata(module, inputs):
    """[(name, numpy dtype string, shape)] of example inputs: a dict's keys, else forward()'s
    parameter names in order (input_<i> when they cannot be read)."""
    torch = _torch()
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    if isinstance(inputs, dict):
        items = list(inputs.items())
    elif isinstance(inputs, (tuple, list)):
        names = forward_parameter_names(module) or []
        items = [(names[i] if i < len(names) else f"input_{i}", value) for i, value in enumerate(inputs)]
    else:
        raise TorchModelError(f"the example inputs are a {type(inputs).__name__}: return a tensor, a tuple of "
                              "tensors or a dict of name -> tensor")
    metadata = []
    for name, value in items:
        if not isinstance(value, torch.Tensor):
            raise TorchModelError(f"example input '{name}' is a {type(value).__name__}, not a tensor")
        if value.dtype == torch.bfloat16:
            raise TorchModelError(f"example input '{name}' is bfloat16, which numpy (and so the data loader) lacks")
        metadata.append((str(name), torch.empty(0, dtype=value.dtype).numpy().dtype.str, list(value.shape)))
    return metadata


def _is_mapping(value):
    return isinstance(value, dict) or (hasattr(value, "keys") and hasattr(value, "__getitem__")
                                       and not hasattr(value, "shape"))


def flatten_outputs(value):
    """[(name, tensor)] of a forward()'s result: a tensor is "output"; a tuple or list's items
    "output_<i>"; a dict's (or ModelOutput's) items their keys; nested containers join their parts
    with "."; None items are left out; Python numbers become tensors."""
    torch = _torch()
    flat = []

    def visit(item, parts):
        if item is None:
            return
        if isinstance(item, torch.Tensor):
            flat.append((".".join(parts), item))
        elif _is_mapping(item):
            for key in item.keys():
                visit(item[key], parts + [str(key)])
        elif isinstance(item, (tuple, list)):
            for index, element in enumerate(item):
                visit(element, parts + [f"output_{index}"] if not parts else parts + [str(index)])
        elif isinstance(item, (bool, int, float)):
            flat.append((".".join(parts), torch.tensor(item)))
        else:
            raise TorchModelError(f"the module returned a {type(item).__module__}.{type(item).__qualname__}"
                                  f"{' at ' + '.'.join(parts) if parts else ''}, which is not a tensor")

    visit(value, [] if _is_mapping(value) or isinstance(value, (tuple, list)) else ["output"])
    return flat


def name_outputs(value, output_names):
    """[(name, tensor)]: the flattened outputs named by `output_names` (by key when the module returns
    a dict whose keys are those names, else in order); their own names when output_names is None.
    Raises TorchModelError when the count or a dict's keys do not match."""
    flat = flatten_outputs(value)
    if output_names is None:
        return flat
    names = list(output_names)
    own = [name for name, _ in flat]
    if _is_mapping(value):
        if set(names) == set(own) and len(names) == len(own):
            by_name = dict(flat)
            return [(name, by_name[name]) for name in names]
        raise TorchModelError(f"the module returns a dict with keys {own}, which are not the output names {names}")
    if len(names) != len(flat):
        raise TorchModelError(f"the module returns {len(flat)} tensor(s) but {len(names)} output name(s) were given "
                              f"({', '.join(names)})")
    return [(name, tensor) for name, (_, tensor) in zip(names, flat)]


class TorchRunOptions:
    """device: "cpu", "cuda" or "cuda:N". dtype: "fp32", "fp16" or "bf16"; dtype_mode: "cast" (a copy of
    the module and its floating inputs cast to dtype) or "autocast" (torch.autocast(dtype) around
    forward()). tf32: True/False sets torch.backends.cuda.matmul.allow_tf32 and
    torch.backends.cudnn.allow_tf32 (CUDA only); None leaves torch's defaults. compile_mode: None
    (eager), or torch.compile's mode ("default", "reduce-overhead", "max-autotune",
    "max-autotune-no-cudagraphs")."""

    def __init__(self, device="cpu", dtype="fp32", dtype_mode="cast", tf32=None, compile_mode=None):
        self.device = device
        self.dtype = dtype
        self.dtype_mode = dtype_mode
        self.tf32 = tf32
        self.compile_mode = compile_mode

    @staticmethod
    def from_dict(values):
        return TorchRunOptions(**{key: values[key] for key in ("device", "dtype", "dtype_mode", "tf32", "compile_mode")
                                  if key in values})


def _location_of(error):
    """"file:line in function" of the innermost frame of an exception's traceback."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return ""
    frame = frames[-1]
    return f"{frame.filename}:{frame.lineno} in {frame.name}"


def _inference_mode(torch):
    """torch.inference_mode() as a context: the guard the public context manager enters
    (torch._C._InferenceMode), a third of its cost per call, where this torch has it."""
    guard = getattr(torch._C, "_InferenceMode", None)
    return guard(True) if guard is not None else torch.inference_mode()


class ForwardError(Exception):
    """The module's forward() raised: the message names the exception and where it was raised."""

    def __init__(self, error):
        self.original = error
        self.traceback = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        where = _location_of(error)
        super().__init__(f"forward() raised {type(error).__name__}: {error}" + (f" (at {where})" if where else ""))


class TorchModel:
    """A module prepared to run with TorchRunOptions; `output_names`: the names of its flattened outputs
    (None: their own names, see flatten_outputs). `messages`: one line per option, as applied.

    capture_hook: how module outputs are captured besides the outputs (None: not available, and a
    capture request is an error). A callable (module, capture) -> context manager whose value is a dict
    it fills with {tensor name: tensor} while forward() runs inside it; `capture` is what the caller
    asked for (the C++ runner's {modules: {module name: tensor name}} through the worker's infer
    command, for _module_capture.PairedOutputsHook, which fills the dict as the block ends). The
    captured tensors follow the outputs, copied to the host like them."""

    def __init__(self, module, options=None, output_names=None):
        torch = _torch()
        options = options or TorchRunOptions()
        self.options = options
        self.output_names = list(output_names) if output_names is not None else None
        self.messages = []
        self._pinned = {}
        self.capture_hook = None
        # A torch.profiler range's name put around each call while a LayerProfiler profiles the model.
        self.profile_range = None

        if options.dtype not in DTYPES:
            raise TorchModelError(f"dtype '{options.dtype}': choose one of {', '.join(DTYPES)}")
        if options.dtype_mode not in DTYPE_MODES:
            raise TorchModelError(f"dtype mode '{options.dtype_mode}': choose one of {', '.join(DTYPE_MODES)}")
        self.messages.append(f"torch {torch.__version__} (Python {sys.version.split()[0]}, {sys.executable})")
        self.device = self._device(options.device)

        if not isinstance(module, torch.nn.Module):
            raise TorchModelError(f"the model is a {type(module).__module__}.{type(module).__qualname__}, not a "
                                  "torch.nn.Module")
        try:
            module.eval()
            mode = "eval() mode"
        except NotImplementedError:
            # torch.export's modules refuse eval(): an exported program runs as it was exported.
            mode = "eval(): not applicable to a torch.export module (it runs as it was exported)"
        self.parameter_names = forward_parameter_names(module)
        module = module.to(self.device)

        self.compute_dtype = {"fp32": None, "fp16": torch.float16, "bf16": torch.bfloat16}[options.dtype]
        if self.compute_dtype is None:
            self.messages.append("precision: fp32")
        elif options.dtype_mode == "cast":
            module = module.to(self.compute_dtype)
            self.messages.append(f"precision: {options.dtype}, a cast copy of the module (floating inputs cast to "
                                 f"{options.dtype}; outputs returned as float32)")
        else:
            self.messages.append(f"precision: {options.dtype} under torch.autocast('{self.device.type}') (weights and "
                                 "inputs stay float32; reduced-precision outputs returned as float32)")
        self._tf32(options.tf32)
        self.messages.append(f"threads: {torch.get_num_threads()} intra-op")
        if options.compile_mode is not None:
            module = torch.compile(module, mode=None if options.compile_mode == "default" else options.compile_mode)
            self.messages.append(f"torch.compile: inductor, mode {options.compile_mode} (compiled at the first "
                                 "inference)")
        else:
            self.messages.append("torch.compile: off (eager)")
        self.messages.append(f"{mode}, torch.inference_mode()")
        self.module = module

    def _device(self, name):
        torch = _torch()
        device = torch.device(name)
        if device.type == "cuda":
            if not torch.cuda.is_available():
                raise TorchModelError(f"device '{name}': torch.cuda.is_available() is false in this Python "
                                      f"({sys.executable}, torch {torch.__version__}, CUDA build "
                                      f"{torch.version.cuda or 'none'})")
            count = torch.cuda.device_count()
            index = device.index if device.index is not None else torch.cuda.current_device()
            if index >= count:
                raise TorchModelError(f"device '{name}': this machine has {count} CUDA device(s)")
            device = torch.device("cuda", index)
            self.messages.append(f"device: {device} ({torch.cuda.get_device_name(index)}, CUDA {torch.version.cuda})")
        elif device.type == "cpu":
            self.messages.append("device: cpu")
        else:
            raise TorchModelError(f"device '{name}': choose cpu, cuda or cuda:N")
        return device

    def _tf32(self, tf32):
        torch = _torch()
        if self.device.type != "cuda":
            if tf32 is not None:
                raise TorchModelError("TF32 applies to CUDA devices; the model runs on the CPU")
            self.messages.append("TF32: not used on the CPU")
            return
        if tf32 is not None:
            torch.backends.cuda.matmul.allow_tf32 = bool(tf32)
            torch.backends.cudnn.allow_tf32 = bool(tf32)
        state = lambda on: "on" if on else "off"  # noqa: E731
        self.messages.append(f"TF32: matmul {state(torch.backends.cuda.matmul.allow_tf32)}, cuDNN convolutions "
                             f"{state(torch.backends.cudnn.allow_tf32)}"
                             + (" (torch's defaults)" if tf32 is None else ""))

    def _arguments(self, feeds):
        """Positional or keyword arguments for forward() from {name: array or tensor}: positional when
        the names are forward()'s first parameters in order, or are not its parameters; by keyword when
        every name is a parameter, in another order."""
        torch = _torch()
        tensors = {}
        for name, value in feeds.items():
            tensor = value if isinstance(value, torch.Tensor) else torch.from_numpy(value)
            # From pinned host memory (a concurrent request's feed) the copy is queued on the current stream.
            pinned = self.device.type == "cuda" and tensor.device.type == "cpu" and tensor.is_pinned()
            tensor = tensor.to(self.device, non_blocking=pinned)
            if (self.compute_dtype is not None and self.options.dtype_mode == "cast"
                    and tensor.is_floating_point()):
                tensor = tensor.to(self.compute_dtype)
            tensors[name] = tensor
        names = list(tensors)
        if (self.parameter_names is not None and names != self.parameter_names[:len(names)]
                and all(name in self.parameter_names for name in names)):
            return (), tensors
        return tuple(tensors.values()), {}

    def forward(self, feeds):
        """The module's raw result for {name: array or tensor}; ForwardError when it raises."""
        args, kwargs = self._arguments(feeds)
        return self.call(args, kwargs)

    def call(self, args, kwargs):
        """The module's raw result for forward()'s arguments (on the device, in the dtype: _arguments),
        under torch.inference_mode() (and autocast); ForwardError when it raises."""
        torch = _torch()
        if self.profile_range is not None:
            with torch.profiler.record_function(self.profile_range):
                return self._call(torch, args, kwargs)
        return self._call(torch, args, kwargs)

    def _call(self, torch, args, kwargs):
        with _inference_mode(torch):
            try:
                if self.compute_dtype is not None and self.options.dtype_mode == "autocast":
                    with torch.autocast(device_type=self.device.type, dtype=self.compute_dtype):
                        return self.module(*args, **kwargs)
                return self.module(*args, **kwargs)
            except TorchModelError:
                raise
            except Exception as error:  # the user's forward()
                raise ForwardError(error) from error

    def infer(self, feeds, capture=None, copy=True, pinned=None, stream=None):
        """{name: numpy array} of the outputs for {name: array or tensor}. On CUDA each output is copied
        to the host once, into pinned memory kept for the next call (the dict `pinned` when given, one per
        concurrent request), and the device synchronized before returning (only `stream` when given: the
        caller runs this call on that stream); copy=False returns those buffers' arrays, overwritten by
        the next call. capture: module outputs to return besides, through capture_hook (none when it is
        unset)."""
        captured = {}
        if capture:
            if self.capture_hook is None:
                raise TorchModelError("module outputs were requested, but no module capture is installed: the runner "
                                      "returns only the module's outputs")
            with self.capture_hook(self.module, capture) as captured:
                result = self.forward(feeds)
        else:
            result = self.forward(feeds)
        named = name_outputs(result, self.output_names) + list(captured.items())
        return self.host_outputs(named, copy, pinned, stream)

    def host_outputs(self, named, copy=True, pinned=None, stream=None):
        """{name: numpy array} of [(name, tensor)] outputs, as infer() returns them."""
        torch = _torch()
        pinned = self._pinned if pinned is None else pinned
        outputs = {}
        cuda = self.device.type == "cuda"
        for name, tensor in named:
            tensor = tensor.detach()
            if tensor.dtype in (torch.float16, torch.bfloat16) and self.compute_dtype is not None:
                tensor = tensor.float()
            elif tensor.dtype == torch.bfloat16:
                tensor = tensor.float()
            if cuda and tensor.device.type == "cuda":
                buffer = pinned.get(name)
                if buffer is None or buffer.shape != tensor.shape or buffer.dtype != tensor.dtype:
                    buffer = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
                    pinned[name] = buffer
                buffer.copy_(tensor, non_blocking=True)
                outputs[name] = buffer
            else:
                outputs[name] = tensor.cpu()
        if cuda:
            if stream is not None:
                stream.synchronize()
            else:
                torch.cuda.synchronize(self.device)
        return {name: (value.numpy().copy() if copy and cuda else value.numpy()) for name, value in outputs.items()}


class BoundInference:
    """TorchModel.infer() on feeds whose arrays keep their memory, dtypes and shapes from call to call (the
    Python worker's shared memory, where each call's values are written): forward()'s arguments are made
    once, at binding. On the CPU without a cast they are torch tensors sharing the arrays' memory; else
    tensors on the device (or of the cast dtype) made once, into which each call copies the arrays.
    infer() returns TorchModel.infer(copy=False)'s outputs for the arrays' current values."""

    def __init__(self, model, feeds):
        torch = _torch()
        self.model = model
        self._refills = []  # (tensor given to forward(), the array's tensor it is copied from)
        tensors = {}
        cast = model.compute_dtype if model.options.dtype_mode == "cast" else None
        for name, value in feeds.items():
            host = torch.from_numpy(value)
            dtype = cast if cast is not None and host.is_floating_point() else host.dtype
            if model.device.type == "cpu" and dtype == host.dtype:
                tensors[name] = host
            else:
                target = torch.empty(host.shape, dtype=dtype, device=model.device)
                self._refills.append((target, host))
                tensors[name] = target
        self._args, self._kwargs = model._arguments(tensors)
        # On the CPU the outputs are the tensors' own arrays, float16 (from a reduced-precision model) and
        # bfloat16 widened to float32, as host_outputs does.
        self._cpu = model.device.type == "cpu"
        self._widened = (torch.bfloat16,) + ((torch.float16,) if model.compute_dtype is not None else ())

    def infer(self):
        for target, host in self._refills:
            target.copy_(host)
        result = self.model.call(self._args, self._kwargs)
        named = name_outputs(result, self.model.output_names)
        if not self._cpu:
            return self.model.host_outputs(named, copy=False)
        widened = self._widened
        return {name: (tensor.float() if tensor.dtype in widened else tensor).detach().cpu().numpy()
                for name, tensor in named}


def _host_float(tensor):
    """A host copy's tensor as numpy can hold it: float16/bfloat16 widened to float32 (exact)."""
    torch = _torch()
    tensor = tensor.detach()
    if tensor.dtype in (torch.float16, torch.bfloat16):
        tensor = tensor.float()
    return tensor.cpu()


def module_call_name(module, index=None):
    """The name a captured module call's tensor crosses under: "<module>#in<index>" for its positional
    argument `index`, "<module>#out" for its output (qualified names hold no '#')."""
    return f"{module}#out" if index is None else f"{module}#in{index}"


def _module_of(model, name):
    root = model.module
    root = getattr(root, "_orig_mod", root)  # under torch.compile, the module it wraps
    if not name:
        return root
    try:
        return root.get_submodule(name)
    except AttributeError:
        raise TorchModelError(f"the model has no module '{name}'") from None


def capture_module_calls(model, feeds, names, capture_class):
    """One forward pass of TorchModel `model` with each module of `names` watched by `capture_class`
    (_module_capture.ModuleCallCapture): ({module_call_name: numpy array} of each kept module's
    positional arguments and output, {module: argument count}, {module: why not kept}, {module: each
    argument's source: ["module", name], ["input", index or keyword] or None, see ModuleCallCapture})."""
    with capture_class(model.module, list(names)) as capture:
        model.forward(feeds)
    tensors, counts, reasons, sources = {}, {}, {}, {}
    for name in names:
        why = capture.reason(name)
        if why is not None:
            reasons[name] = why
            continue
        counts[name] = len(capture.inputs[name])
        sources[name] = [list(source) if source is not None else None for source in capture.sources[name]]
        for index, value in enumerate(capture.inputs[name]):
            tensors[module_call_name(name, index)] = _host_float(value).numpy()
        tensors[module_call_name(name)] = _host_float(capture.outputs[name]).numpy()
    return tensors, counts, reasons, sources


def run_module_alone(model, name, inputs, substitutes):
    """The output of module `name` of TorchModel `model` run alone in the model's configuration (device;
    a cast copy's dtype, or autocast; torch.compile with the model's mode, compiling the module alone),
    fed `inputs` (numpy arrays, its positional arguments: floating ones cast to the dtype of a cast copy),
    each submodule named in `substitutes` ({name: numpy array}) returning that value (in the dtype it
    computes) instead of its own. A numpy array (float16/bfloat16 widened to float32)."""
    torch = _torch()
    root = _module_of(model, "")
    module = _module_of(model, name)
    arguments = []
    for value in inputs:
        tensor = torch.from_numpy(value).to(model.device)
        if model.compute_dtype is not None and model.options.dtype_mode == "cast" and tensor.is_floating_point():
            tensor = tensor.to(model.compute_dtype)
        arguments.append(tensor)
    handles = []

    def replace_with(value):
        def hook(submodule, args, output):
            if isinstance(output, torch.Tensor):
                return value.to(dtype=output.dtype, device=output.device)
            return None
        return hook

    try:
        for child, value in substitutes.items():
            if not child.startswith(name + "." if name else ""):
                raise TorchModelError(f"'{child}' is not a submodule of '{name}'")
            submodule = root.get_submodule(child)
            handles.append(submodule.register_forward_hook(replace_with(torch.from_numpy(value).to(model.device))))
        runnable = module
        if model.options.compile_mode is not None:
            mode = None if model.options.compile_mode == "default" else model.options.compile_mode
            runnable = torch.compile(module, mode=mode)
        with torch.inference_mode():
            try:
                if model.compute_dtype is not None and model.options.dtype_mode == "autocast":
                    with torch.autocast(device_type=model.device.type, dtype=model.compute_dtype):
                        output = runnable(*arguments)
                else:
                    output = runnable(*arguments)
            except TorchModelError:
                raise
            except Exception as error:  # the user's forward()
                raise ForwardError(error) from error
    finally:
        for handle in handles:
            handle.remove()
    if not isinstance(output, torch.Tensor):
        kind = type(output).__name__
        raise TorchModelError(f"alone it returned a {kind}, not one tensor")
    return _host_float(output).numpy()


def serve_commands(command, Reply, CommandFailed):
    """Registers the commands Parity's C++ torch runner sends its Python worker
    (src/runtime/backends/torch/torch_runner.cpp):

    describe {} -> {python, python_version, torch (None without it), error}
    activate {source, options, output_names (None: the module's own), inputs_from_script}
             -> {messages, inputs: [[name, dtype, shape]] of the script's example inputs or None,
                 outputs: the output names (known once the module ran, else None)}
    modules  {} -> [[qualified name, class name]] of the module's named_modules()
    infer    {capture: {modules: {module name: tensor name}} or None} + the feeds in input order ->
             the outputs by name, then the captured module outputs by tensor name (through
             TorchModel.capture_hook); result: {not_captured: {module name: reason}} with a capture.
             Without a capture it may be bound (the worker's bound calls): a BoundInference of the feeds'
             arrays, whose outputs return in 8 bytes while their shapes stay
    infer_concurrently {requests, count, seconds (or None), feeds: how many} + every feed's tensors, named
             "<feed index>/<input name>", each feed in input order -> {requests, latencies, wall_seconds,
             device, intra_op_threads}
             (performance mode's --requests: _torch_requests.py)
    capture_module_calls {modules: [names]} + the feeds in input order -> each kept module's positional
             arguments and output (module_call_name); result: {inputs: {module: argument count},
             not_captured: {module: reason}, sources: {module: [each argument's source]}} (one
             forward pass, forward pre-hooks and hooks)
    run_module {module, inputs: count, substitutes: [submodule names]} + the module's arguments
             (module_call_name(module, i)) and each substitute's value (its name) -> {output}: the
             module alone in the model's configuration (run_module_alone)
    profile_layers_start {} -> None: a LayerProfiler (_torch_layer_profile.py) starts on the model; the
             inferences until profile_layers_stop are profiled
    profile_layers_stop {discard: bool} -> LayerProfiler.stop()'s table (None with discard: the profile
             is thrown away)
    memory   {} -> {peak_rss_bytes: this process's peak resident set, gpu_peak_bytes:
             torch.cuda.max_memory_allocated() of the model's CUDA device or None, gpu_note: why None}

    The worker runs python/parity/backend/pyt/_module_capture.py's text before this file's: its
    PairedOutputsHook, ModuleCallCapture and named_module_list are this program's globals; and
    _torch_requests.py's after it, whose infer_concurrently the infer_concurrently command calls, then
    _torch_layer_profile.py's, whose LayerProfiler the profile_layers commands run.
    """
    state = {}

    def failed(error):
        if isinstance(error, ForwardError):
            return CommandFailed(error.traceback.rstrip() + "\n" + str(error))
        return CommandFailed(str(error))

    @command("describe")
    def describe(arguments, tensors):
        reply = {"python": sys.executable, "python_version": sys.version.split()[0], "torch": None, "error": None}
        try:
            reply["torch"] = _torch().__version__
        except Exception as error:  # ImportError, or torch failing to import
            reply["error"] = f"{type(error).__name__}: {error}"
        return reply

    @command("activate")
    def activate(arguments, tensors):
        try:
            options = TorchRunOptions.from_dict(arguments["options"])
            source = arguments["source"]
            module = load_module(source, options.device)
            inputs = None
            if arguments.get("inputs_from_script"):
                if source["kind"] != "script":
                    raise TorchModelError("no input metadata: give an ONNX model, --input-shapes, or a model script "
                                          f"with an {EXAMPLE_INPUTS_FUNCTION}() function")
                examples = example_inputs_from_script(source["path"])
                if examples is None:
                    raise TorchModelError(f"no input metadata: {source['path']} has no {EXAMPLE_INPUTS_FUNCTION}() "
                                          "function; give an ONNX model, --input-shapes, or add "
                                          f"{EXAMPLE_INPUTS_FUNCTION}() returning a tuple or dict of tensors")
                inputs = [list(entry) for entry in example_metadata(module, examples)]
            state["model"] = TorchModel(module, options, arguments.get("output_names"))
            state["model"].capture_hook = state["capture"] = PairedOutputsHook()  # noqa: F821 (see above)
            return {"messages": state["model"].messages, "inputs": inputs}
        except (TorchModelError, ForwardError) as error:
            raise failed(error) from None

    @command("modules")
    def modules(arguments, tensors):
        return [list(entry) for entry in named_module_list(state["model"].module)]  # noqa: F821 (see above)

    @command("memory")
    def memory(arguments, tensors):
        import resource

        # ru_maxrss is in KiB on Linux.
        reply = {"peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "gpu_peak_bytes": None,
                 "gpu_note": ""}
        model = state.get("model")
        if model is not None and model.device.type == "cuda":
            reply["gpu_peak_bytes"] = int(_torch().cuda.max_memory_allocated(model.device))
        else:
            reply["gpu_note"] = "the model runs on the CPU (--torch-device cuda measures GPU memory)"
        return reply

    @command("profile_layers_start")
    def profile_layers_start(arguments, tensors):
        if state.get("profiler") is not None:
            state.pop("profiler").discard()
        state["profiler"] = LayerProfiler(state["model"])  # noqa: F821 (_torch_layer_profile.py, after this file)

    @command("profile_layers_stop")
    def profile_layers_stop(arguments, tensors):
        profiler = state.pop("profiler", None)
        if profiler is None:
            raise CommandFailed("no layer profile was started")
        if arguments.get("discard"):
            profiler.discard()
            return None
        try:
            return profiler.stop()
        except RuntimeError as error:
            raise CommandFailed(str(error)) from None

    @command("infer_concurrently")
    def concurrently(arguments, tensors):
        feeds = [{} for _ in range(int(arguments["feeds"]))]
        for key, value in tensors.items():
            index, name = key.split("/", 1)
            feeds[int(index)][name] = value
        try:
            return infer_concurrently(state["model"], feeds,  # noqa: F821 (_torch_requests.py, after this file)
                                      int(arguments["requests"]), int(arguments["count"]),
                                      arguments.get("seconds"))
        except (TorchModelError, ForwardError) as error:
            raise failed(error) from None

    @command("capture_module_calls")
    def capture_calls(arguments, tensors):
        try:
            outputs, counts, reasons, sources = capture_module_calls(state["model"], tensors, arguments["modules"],
                                                            ModuleCallCapture)  # noqa: F821 (see above)
        except (TorchModelError, ForwardError, ValueError) as error:
            raise failed(error) from None
        return Reply({"inputs": counts, "not_captured": reasons, "sources": sources}, outputs)

    @command("run_module")
    def run_module(arguments, tensors):
        name = arguments["module"]
        inputs = [tensors[module_call_name(name, i)] for i in range(arguments["inputs"])]
        substitutes = {child: tensors[child] for child in arguments["substitutes"]}
        try:
            output = run_module_alone(state["model"], name, inputs, substitutes)
        except (TorchModelError, ForwardError) as error:
            raise failed(error) from None
        return Reply(None, {"output": output})

    def bind_infer(arguments, tensors):
        if arguments.get("capture"):
            raise TorchModelError("an inference with module capture is not bound")
        bound = BoundInference(state["model"], tensors)

        def run():
            try:
                return Reply(None, bound.infer())
            except (TorchModelError, ForwardError) as error:
                raise failed(error) from None
        return run

    @command("infer", bind=bind_infer)
    def infer(arguments, tensors):
        capture = arguments.get("capture")
        try:
            outputs = state["model"].infer(tensors, capture, copy=False)
        except (TorchModelError, ForwardError) as error:
            raise failed(error) from None
        return Reply({"not_captured": state["capture"].not_captured} if capture else None, outputs)
