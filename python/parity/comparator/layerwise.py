"""The result of Comparator.run_layerwise: every tensor of two runs compared, the first divergence
in topological order and the worst tensors, as `parity run --onnx-outputs` reports them."""
import json

from parity.comparator.compare import OutputCompareResult
from parity.comparator.struct import AccuracyResult, RunResults


class LayerwiseEntry(OutputCompareResult):
    """One compared tensor: OutputCompareResult's attributes (passed, max_absdiff, ...) plus tensor,
    iteration, order (its topological position), node and op (the node that produced it), and module:
    the PyTorch module that node was exported from ("path: Class", from torch.onnx.export(dynamo=True)'s
    node metadata; "" when the model does not record it)."""

    def __repr__(self):
        module = f", module {self.module}" if self.module else ""
        return (f"LayerwiseEntry({self.tensor} (node {self.node}, {self.op}{module}): "
                f"{'passed' if self.passed else 'FAILED'})")


class LayerwiseResult:
    """runner0 and runner1, entries (LayerwiseEntry, in comparison order), only_in_runner0 and
    only_in_runner1 (tensors one run never produced), skipped (not comparable), spilled_bytes,
    results (the runners' graph outputs, RunResults), validation (with validate: per runner,
    {"runner", "tensors_checked", "passed", "nonfinite_tensors"}), and report (the JSON report
    `parity run --report` writes, as a dict); with attribute=True, attribution (the report's
    "attribution": top introducers, flips, every tensor) and, on each entry of the first iteration,
    local_error, inherited_error, amplification, flipped and not_attributed (attributed by PyTorch
    module when the runner under test is a PyTorch worker runner: attribution["by"] == "module").
    True when every tensor matched and no tensor held NaN or Inf."""

    @staticmethod
    def _from_native(verdict):
        (layerwise,) = verdict["layerwise"]
        result = LayerwiseResult()
        result.passed = bool(verdict["passed"])
        result.runner0, result.runner1 = layerwise["runner0"], layerwise["runner1"]
        result.entries = [LayerwiseEntry(fields) for fields in layerwise["entries"]]
        result.only_in_runner0 = list(layerwise["only_in_runner0"])
        result.only_in_runner1 = list(layerwise["only_in_runner1"])
        result.skipped = list(layerwise["skipped"])
        result.spilled_bytes = layerwise["spilled_bytes"]
        result.results = RunResults._from_native(verdict["results"])
        result.report = json.loads(verdict["report"])
        result.validation = result.report.get("streamed_validation", [])
        result.attribution = result.report.get("attribution")
        if result.attribution is not None:
            # By module, modules sharing a tensor (a Sequential and its last layer) come innermost
            # first: the entry takes the innermost's attribution.
            by_tensor = {}
            for attributed in result.attribution["tensors"]:
                by_tensor.setdefault(attributed["tensor"], attributed)
            for entry in result.entries:
                attributed = by_tensor.get(entry.tensor) if entry.iteration == 0 else None
                if attributed is None:
                    continue
                entry.local_error = attributed["local"]
                entry.inherited_error = attributed["inherited"]
                entry.amplification = attributed["amplification"]
                entry.flipped = attributed.get("flipped", 0)
                entry.not_attributed = attributed.get("not_run", "")
        return result

    def __bool__(self):
        return self.passed

    @property
    def first_divergence(self):
        """The failing entry with the smallest (iteration, order); None when everything matched."""
        failing = [entry for entry in self.entries if not entry.passed]
        return min(failing, key=lambda entry: (entry.iteration, entry.order)) if failing else None

    def worst(self, count=10):
        """The `count` entries with the largest error relative to their tolerance, worst first (the
        summary's table)."""
        names = [(row["iteration"], row["tensor"]) for row in self.report["layerwise"][0]["worst"]]
        by_name = {(entry.iteration, entry.tensor): entry for entry in self.entries}
        return [by_name[name] for name in names[:count] if name in by_name]

    def accuracy(self):
        """The comparison as Comparator.compare_accuracy's AccuracyResult (one pair)."""
        result = AccuracyResult()
        iterations = {}
        for entry in self.entries:
            iterations.setdefault(entry.iteration, {})[entry.tensor] = entry
        result[(self.runner0, self.runner1)] = [iterations[i] for i in sorted(iterations)]
        return result

    def __repr__(self):
        return (f"LayerwiseResult({self.runner0} vs {self.runner1}: {len(self.entries)} tensor(s), "
                f"{'passed' if self.passed else 'FAILED'})")
