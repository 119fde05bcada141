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
"""

import torch


def named_module_list(model):
    """[(qualified name, class name)] of model.named_modules(), in its order (the top module's name is
    ''); what the ONNX pairing takes."""
    return [(name, type(module).__name__) for name, module in model.named_modules()]


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


class ModuleCapture:
    """Forward hooks on the modules of `model` named in `names` (qualified names; None for every module)."""

    def __init__(self, model, names=None):
        modules = dict(model.named_modules())
        if names is None:
            names = list(modules)
        missing = [n for n in names if n not in modules]
        if missing:
            raise ValueError(f"the model has no module named {', '.join(repr(n) for n in missing[:5])}"
                             + (" ..." if len(missing) > 5 else ""))
        self._targets = [(n, modules[n]) for n in names]
        self._handles = []
        self.outputs = {n: [] for n in names}
        self.calls = {n: 0 for n in names}
        self.not_tensor = {}

    def _hook(self, name):
        def hook(module, args, output):
            self.calls[name] += 1
            if isinstance(output, torch.Tensor):
                self.outputs[name].append(_host_copy(output))
            else:
                self.outputs[name].append(None)
                self.not_tensor.setdefault(name, _describe(output))
        return hook

    def __enter__(self):
        try:
            for name, module in self._targets:
                self._handles.append(module.register_forward_hook(self._hook(name)))
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

    def single_output(self, name):
        """(tensor, None) when `name` was called once and returned one tensor; else (None, reason)."""
        calls = self.calls[name]
        if calls == 0:
            return None, "never called in the forward pass"
        if calls > 1:
            return None, f"called {calls} times in the forward pass"
        if name in self.not_tensor:
            return None, f"its output is {self.not_tensor[name]}, not one tensor"
        return self.outputs[name][0], None
