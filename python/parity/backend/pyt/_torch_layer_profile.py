"""Performance mode's per-layer time on a PyTorch model (`parity run --torch --perf --perf-layers N`), from
PyTorch's profiler (torch.profiler).

LayerProfiler(model) starts the profiler on a TorchModel and puts a profiler range around each of its
module calls (forward pre-hooks and hooks on every module of model.named_modules()) and around each
inference (TorchModel.profile_range); the caller then runs its inferences as usual, and stop() returns
the table. A layer is a module: its time is its calls' ranges less its submodules' ranges (its own code:
the functional ops of its forward()), so the layers of an inference add up to the inference's range but
for the time in no module at all; on a CUDA device the times are the device time of the kernels each
module launched (the profiler's CUDA activity), not the host time that launched them. Each layer's
kernel is the operator (CPU) or CUDA kernel that took most of its own time; its precision is the dtype
of its first tensor output. The first inference is left out (the profiler's start-up), as the other
backends' profiles leave out theirs.

Where no module hook runs (a torch.compile'd model, whose submodules run inside compiled graphs, and
TorchScript modules, which take no Python hooks) the layers are the operators the inference ran
instead: the profiler's events below the inference's range, going down into the event that holds more
than half of its level's time (a compiled region, the call of its compiled graph) while its siblings stay
layers; each is named by its operator and its count among the inference's calls of that operator
("aten::addmm #2"), so that the inferences' layers line up.

Like _torch_model.py, pure Python over torch and the standard library. The `parity` binary's Python
worker runs this file's text after _torch_model.py's (its profile_layers_start/stop commands use
LayerProfiler).
"""
import collections

INFERENCE_RANGE = "parity.inference"
_MODULE_RANGE = "parity.module:"
_TOP_MODULE = "(top module)"
_PRECISIONS = {"float32": "FP32", "float16": "FP16", "bfloat16": "BF16", "float64": "FP64"}


def _precision(output):
    """The precision of a module's first tensor output ("FP32", "BF16", "INT64"...), or ''."""
    torch = _torch()  # noqa: F821 (_torch_model.py, before this file)
    stack = [output]
    while stack:
        value = stack.pop(0)
        if isinstance(value, torch.Tensor):
            name = str(value.dtype).replace("torch.", "")
            return _PRECISIONS.get(name, name.upper())
        if isinstance(value, (tuple, list)):
            stack[:0] = list(value)
        elif isinstance(value, dict):
            stack[:0] = list(value.values())
    return ""


class _Layer:
    def __init__(self, name, kind, order):
        self.name, self.kind, self.order = name, kind, order
        self.seconds = 0.0
        self.kernels = collections.Counter()  # operator or CUDA kernel name -> its own seconds


class LayerProfiler:
    def __init__(self, model):
        torch = _torch()  # noqa: F821 (_torch_model.py, before this file)
        self.model = model
        self.cuda = model.device.type == "cuda"
        self.notes = []
        self._names, self._classes, self._precisions = {}, {}, {}
        self._hooks, self._open = [], []
        top = underlying_module(model.module)  # noqa: F821 (_module_capture.py, before _torch_model.py)
        if model.options.compile_mode is not None:
            self.notes.append("torch.compile runs the submodules inside compiled graphs, where no module hook runs: "
                              "the layers are the operators and compiled kernels the profiler saw")
        elif isinstance(top, torch.jit.ScriptModule):
            self.notes.append("a TorchScript module takes no Python hooks: the layers are the operators the profiler "
                              "saw")
        else:
            for name, module in top.named_modules():
                self._names[id(module)] = name or _TOP_MODULE
                self._classes[name or _TOP_MODULE] = type(module).__name__
                self._hooks.append(module.register_forward_pre_hook(self._enter))
                self._hooks.append(module.register_forward_hook(self._exit))
        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.cuda:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self._profiler = torch.profiler.profile(activities=activities)
        self._profiler.__enter__()
        model.profile_range = INFERENCE_RANGE

    def _enter(self, module, args):
        scope = _torch().profiler.record_function(_MODULE_RANGE + self._names[id(module)])  # noqa: F821
        scope.__enter__()
        self._open.append(scope)

    def _exit(self, module, args, output):
        if self._open:
            self._open.pop().__exit__(None, None, None)
        name = self._names[id(module)]
        if name not in self._precisions:
            self._precisions[name] = _precision(output)

    def _close(self):
        while self._open:  # a forward that raised between a module's hooks
            self._open.pop().__exit__(None, None, None)
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        self.model.profile_range = None
        self._profiler.__exit__(None, None, None)

    def discard(self):
        self._close()

    def _own(self, event):
        """An operator event's own time in seconds: CPU time, or on CUDA its kernels' device time."""
        if self.cuda:
            return event.self_device_time_total * 1e-6
        return event.self_cpu_time_total * 1e-6

    def _span(self, event):
        """A range's time in seconds: its wall time, or on CUDA the device time of every kernel below it."""
        if self.cuda:
            return event.device_time_total * 1e-6
        return event.time_range.elapsed_us() * 1e-6

    def _charge(self, layer, event):
        """Charges `event`'s own time to `layer`'s kernels (on CUDA, each kernel by its name)."""
        if self.cuda:
            for kernel in getattr(event, "kernels", []) or []:
                layer.kernels[_kernel_name(kernel.name)] += kernel.duration * 1e-6
        else:
            layer.kernels[event.name] += self._own(event)

    def stop(self):
        """{layers: [{name, type, kernel, precision, seconds}] in execution order (seconds: per inference, the
        mean over the profiled inferences), inferences, inference_seconds (the inference ranges' mean wall
        time), in_no_module_seconds, events_per_inference, source, notes}."""
        self._close()
        events = list(self._profiler.events())
        inferences = sorted((e for e in events if e.name == INFERENCE_RANGE and e.cpu_parent is None),
                            key=lambda e: e.time_range.start)
        counted = inferences[1:]
        if not counted:
            raise RuntimeError(f"the profiler recorded {len(inferences)} inference(s); at least 2 are needed (the "
                               "first is left out)")
        layers = {}

        def layer(name, kind):
            if name not in layers:
                layers[name] = _Layer(name, kind, len(layers))
            return layers[name]

        def children(event):
            return sorted(event.cpu_children, key=lambda e: e.time_range.start)

        def visit(event, owner):
            """Charges the operators below `event` to `owner`, and each module range below it to its module,
            taken out of `owner`'s time."""
            for child in children(event):
                if child.name.startswith(_MODULE_RANGE):
                    name = child.name[len(_MODULE_RANGE):]
                    inner = layer(name, self._classes.get(name, ""))
                    span = self._span(child)
                    inner.seconds += span
                    if owner is not None:
                        owner.seconds -= span
                    visit(child, inner)
                else:
                    if owner is not None:
                        self._charge(owner, child)
                    visit(child, owner)

        outside = _Layer("", "", -1)  # the inferences' time in no module
        hooked = any(e.name.startswith(_MODULE_RANGE) for e in events)

        events_seen = 0
        for inference in counted:
            events_seen += 1 + _descendants(inference)
            if hooked:
                outside.seconds += self._span(inference)
                visit(inference, outside)
                continue
            # No module ranges: the operators below the inference, each call a layer named by the operator and
            # its count among the inference's calls of it, so that the inferences' layers line up whatever
            # wrapped them (a compiled region's name carries its compile's number).
            calls = collections.Counter()
            for op in self._operator_layers(inference):
                entry = layer(f"{op.name} #{calls[op.name]}", op.name)
                calls[op.name] += 1
                entry.seconds += self._span(op)
                self._charge_tree(entry, op)
        count = len(counted)
        table = []
        for entry in sorted(layers.values(), key=lambda e: e.order):
            kernel = entry.kernels.most_common(1)[0][0] if entry.kernels else ""
            table.append({"name": entry.name, "type": entry.kind, "kernel": kernel,
                          "precision": self._precisions.get(entry.name, ""),
                          "seconds": max(entry.seconds, 0.0) / count})
        inference_seconds = sum(e.time_range.elapsed_us() for e in counted) * 1e-6 / count
        return {"layers": table, "inferences": count, "inference_seconds": inference_seconds,
                "in_no_module_seconds": max(outside.seconds, 0.0) / count if hooked else None,
                "events_per_inference": events_seen / count, "device": self.model.device.type,
                "source": ("PyTorch's profiler (torch.profiler): each module's calls less its submodules'"
                           if hooked else "PyTorch's profiler (torch.profiler): the operators of each inference")
                          + (", device time of the CUDA kernels" if self.cuda else ", wall time"),
                "notes": self.notes}

    def _operator_layers(self, inference):
        """The operator events that are the layers of `inference` when no module range is there: the events below
        it, going down into the event that holds more than half of its level's time and has events below it (a
        compiled region, the call of its compiled graph), whose siblings stay layers; in the order they started."""
        layers = []
        level = inference
        while True:
            kids = list(level.cpu_children)
            if not kids:
                break
            spans = [self._span(kid) for kid in kids]
            biggest = max(range(len(kids)), key=lambda i: spans[i])
            if not kids[biggest].cpu_children or spans[biggest] <= 0.5 * sum(spans):
                layers.extend(kids)
                break
            layers.extend(kid for i, kid in enumerate(kids) if i != biggest)
            level = kids[biggest]
        return sorted(layers, key=lambda e: e.time_range.start)

    def _charge_tree(self, layer, event):
        self._charge(layer, event)
        for child in event.cpu_children:
            self._charge_tree(layer, child)


def _kernel_name(name):
    """A CUDA kernel's name without its return type and parameter list: "void f<float>(int, float*)" ->
    "f<float>" (a "(anonymous namespace)" inside the name stays)."""
    if name.startswith("void "):
        name = name[len("void "):]
    if not name.endswith(")"):
        return name
    depth = 0
    for index in range(len(name) - 1, 0, -1):
        if name[index] == ")":
            depth += 1
        elif name[index] == "(":
            depth -= 1
            if depth == 0:
                return name[:index]
    return name


def _descendants(event):
    total = 0
    stack = list(event.cpu_children)
    while stack:
        child = stack.pop()
        total += 1
        stack.extend(child.cpu_children)
    return total
