"""Polygraphy's polygraphy.comparator over Parity's C++ Comparator."""
from parity.comparator.comparator import Comparator  # noqa: F401
from parity.comparator.compare import CompareFunc, OutputCompareResult  # noqa: F401
from parity.comparator.data_loader import DataLoader  # noqa: F401
from parity.comparator.layerwise import LayerwiseEntry, LayerwiseResult  # noqa: F401
from parity.comparator.perf import LayerTime, PerfConfig, PerfResult  # noqa: F401
from parity.comparator.postprocess import PostprocessFunc  # noqa: F401
from parity.comparator.struct import AccuracyResult, IterationResult, RunResults  # noqa: F401
from parity.comparator.dataset import DatasetReport, validate_dataset  # noqa: F401
