"""Every call's output of chosen PyTorch modules, captured with forward hooks.

Pure Python over torch: it imports nothing of Parity's compiled extension, so the PyTorch worker (any
interpreter with torch) runs it as it is.

    with ModuleCapture(model, names) as capture:   # hooks registered
        model(*inputs)
    capture.outputs["m.layer1.0.conv1"]             # one entry per call, each a CPU tensor or None
    capture.calls["m.layer1.0.conv1"]               # how many times it was called
    capture.not_tensor["m.encoder"]                 # why an output was not kept ("a tuple of 2")

The hooks are removed when the `with` block ends, even by an exception. Each kept output is detached
and copied: a CUDA tensor once to the host; a CPU tensor cloned, because a later in-place operation
(nn.ReLU(inplace=True)) would otherwise change the kept value.

PairedOutputsHook is the PyTorch runner's capture hook (TorchModel.capture_hook in _torch_model.py):
the module outputs the C++ runner asks for, under the ONNX tensor names paired with them. The runner's
worker runs this file's text before _torch_model.py's, so torch is imported only when used (the worker
first reports whether its Python has torch at all).
"""
import contextlib


def underlying_module(model):
    """The module torch.compile wrapped (its OptimizedModule keeps it as _orig_mod), else the model."""
    return getattr(model, "_orig_mod", model)


def named_module_list(model):
    """[(qualified name, class name)] of model.named_modules(), in its order (the top module's name is
    ''), of the module under a torch.compile wrapper; what the ONNX pairing takes."""
    return [(name, type(module).__name__) for name, module in underlying_module(model).named_modules()]


def _describe(value):
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    if isinstance(value, dict):
        return f"a dict of {len(value)}"
    return f"a {type(value).__name__}"


def _host_copy(tensor):
    tensor = tensor.detach()
    if tensor.device.type == "cpu":
        return tensor.clone()
    return tensor.to("cpu")


class _HookedModules:
    """Hooks on the modules of `model` named in `names` (qualified names): the modules looked up, the
    hook handles kept and removed on exit (a `with` block), and per module its call count and, when a
    hook could not be registered, why."""

    def __init__(self, model, names):
        modules = dict(underlying_module(model).named_modules())
        missing = [n for n in names if n not in modules]
        if missing:
            raise ValueError(f"the model has no module named {', '.join(repr(n) for n in missing[:5])}"
                             + (" ..." if len(missing) > 5 else ""))
        self._targets = [(n, modules[n]) for n in names]
        self._compiled = model is not underlying_module(model)
        import torch
        self._scripted = isinstance(underlying_module(model), torch.jit.ScriptModule)
        self._handles = []
        self.calls = {n: 0 for n in names}
        self.unhookable = {}  # module name -> why its hook could not be registered

    def _register_root(self):
        """Hooks on the top module itself, before the others' (none by default)."""

    def _register(self, name, module):
        """Hooks on the module `name` (each kind of capture registers its own)."""
        raise NotImplementedError

    def __enter__(self):
        try:
            self._register_root()
            for name, module in self._targets:
                try:
                    self._register(name, module)
                except RuntimeError as error:  # "register_forward_hook is not supported on ScriptModules"
                    self.unhookable[name] = str(error)
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def remove(self):
        for handle in self._handles:
            handle.remove()
        self._handles = []


class ModuleCapture(_HookedModules):
    """Forward hooks on the modules of `model` named in `names` (qualified names; None for every module)."""

    def __init__(self, model, names=None):
        super().__init__(model, list(dict(underlying_module(model).named_modules())) if names is None else names)
        self.outputs = {n: [] for n in self.calls}
        self.not_tensor = {}
        self.finished = []  # module names in the order their calls returned (one entry per call)

    def _hook(self, name):
        import torch

        def hook(module, args, output):
            self.calls[name] += 1
            self.finished.append(name)
            if isinstance(output, torch.Tensor):
                self.outputs[name].append(_host_copy(output))
            else:
                self.outputs[name].append(None)
                self.not_tensor.setdefault(name, _describe(output))
        return hook

    def _register(self, name, module):
        self._handles.append(module.register_forward_hook(self._hook(name)))

    def single_output(self, name):
        """(tensor, None) when `name` was called once and returned one tensor; else (None, reason)."""
        calls = self.calls[name]
        if name in self.unhookable:
            return None, f"its forward hook cannot be registered ({self.unhookable[name]})"
        if calls == 0:
            if self._scripted and name:
                return None, ("its forward hook did not run: a TorchScript module calls its submodules without "
                              "Python's hooks")
            if self._compiled and name:
                return None, ("its forward hook did not run under torch.compile (the compiled graph runs its "
                              "operations without calling the module)")
            return None, "never called in the forward pass"
        if calls > 1:
            return None, f"called {calls} times in the forward pass"
        if name in self.not_tensor:
            return None, f"its output is {self.not_tensor[name]}, not one tensor"
        return self.outputs[name][0], None


class PairedOutputsHook:
    """TorchModel.capture_hook for module outputs under ONNX tensor names. Called with (model, request),
    request = {"modules": {qualified name: tensor name}}, it is a context manager around the forward pass
    whose value, a dict, holds {tensor name: CPU tensor} once the block ends: each requested module's
    output, where the module ran once and returned one tensor (modules sharing a tensor give it once),
    in the order the modules returned.
    `not_captured`: {module: reason} of the last forward pass, for the others."""

    def __init__(self):
        self.not_captured = {}

    @contextlib.contextmanager
    def __call__(self, model, request):
        targets = dict(request["modules"])
        captured = {}
        capture = ModuleCapture(model, list(targets))
        with capture:
            yield captured
        self.not_captured = {}
        # In the order the modules returned (a submodule before the module calling it), then the rest.
        names = list(dict.fromkeys(capture.finished + list(targets)))
        for name in names:
            tensor = targets[name]
            value, why = capture.single_output(name)
            if why is not None:
                self.not_captured[name] = why
            elif tensor not in captured:
                captured[tensor] = value


class ModuleCallCapture(_HookedModules):
    """Each chosen module's positional tensor arguments (forward pre-hooks) and its output (forward
    hooks) in one forward pass, for error attribution by module: what a module alone is fed and what it
    gives. Each kept tensor is copied to the host (a CPU tensor cloned) when the hook runs, so a later
    in-place operation does not change it. Only a module called once with tensors alone is kept;
    `reason(name)` says why another is not."""

    def __init__(self, model, names):
        super().__init__(model, names)
        self.inputs = {}   # module name -> [host tensors]: its positional arguments at its first call
        self.outputs = {}  # module name -> host tensor: its output at its first call
        # module name -> for each positional argument, where it came from: ("module", name) when it is
        # the output (the same tensor, unchanged since) of a watched module that returned before,
        # ("input", index or keyword) when it is an argument of the top module's call, else None.
        self.sources = {}
        self._refused = {}  # module name -> why its call cannot be replayed alone
        self._root = underlying_module(model)
        self._produced = {}  # id(output tensor) -> (module name, the tensor, kept so the id stays its own)
        self._root_arguments = {}  # id(argument of the top module's call) -> (index or keyword, the tensor)

    def _pre_hook(self, name):
        import torch

        def hook(module, args, kwargs):
            self.calls[name] += 1
            if self.calls[name] > 1:
                return None
            if kwargs:
                self._refused[name] = f"called with keyword argument(s) {', '.join(sorted(kwargs))}"
                return None
            for index, value in enumerate(args):
                if not isinstance(value, torch.Tensor):
                    self._refused[name] = f"its argument {index} is {_describe(value)}, not a tensor"
                    return None
            self.inputs[name] = [_host_copy(value) for value in args]
            self.sources[name] = [self._source(value, copy) for value, copy in zip(args, self.inputs[name])]
            return None
        return hook

    def _source(self, value, copy):
        import torch

        if id(value) in self._root_arguments and self._root_arguments[id(value)][1] is value:
            return ("input", self._root_arguments[id(value)][0])
        produced = self._produced.get(id(value))
        if produced is not None and produced[1] is value:
            # The same tensor object, unchanged since the module returned it (not modified in place).
            kept = self.outputs.get(produced[0])
            if kept is not None and kept.shape == copy.shape and torch.equal(kept, copy):
                return ("module", produced[0])
        return None

    def _root_pre_hook(self, module, args, kwargs):
        if self._root_arguments:
            return None
        for index, value in enumerate(args):
            self._root_arguments[id(value)] = (index, value)
        for key, value in kwargs.items():
            self._root_arguments[id(value)] = (key, value)
        return None

    def _hook(self, name):
        import torch

        def hook(module, args, output):
            if self.calls[name] != 1 or name in self.outputs:
                return None
            if isinstance(output, torch.Tensor):
                self.outputs[name] = _host_copy(output)
                self._produced[id(output)] = (name, output)
            else:
                self._refused.setdefault(name, f"its output is {_describe(output)}, not one tensor")
            return None
        return hook

    def _register_root(self):
        try:
            self._handles.append(self._root.register_forward_pre_hook(self._root_pre_hook, with_kwargs=True))
        except RuntimeError:  # a ScriptModule: its arguments are not told apart
            pass

    def _register(self, name, module):
        self._handles.append(module.register_forward_pre_hook(self._pre_hook(name), with_kwargs=True))
        self._handles.append(module.register_forward_hook(self._hook(name)))

    def remove(self):
        super().remove()
        self._produced = {}
        self._root_arguments = {}

    def reason(self, name):
        """Why the module's inputs and output were not kept; None when they were."""
        if name in self.unhookable:
            return f"its hooks cannot be registered ({self.unhookable[name]})"
        calls = self.calls[name]
        if calls == 0:
            if self._scripted and name:
                return "its hooks did not run: a TorchScript module calls its submodules without Python's hooks"
            if self._compiled and name:
                return ("its hooks did not run under torch.compile (the compiled graph runs its operations without "
                        "calling the module)")
            return "never called in the forward pass"
        if calls > 1:
            return f"called {calls} times in the forward pass"
        if name in self._refused:
            return self._refused[name]
        if name not in self.inputs or name not in self.outputs:
            return "its hooks did not see its inputs and output"
        return None
