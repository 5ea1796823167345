"""Metrics from outside ccmetrics: plugin modules, and objects given as metrics (the MONAI adapter).

:func:`load_plugin` imports a module that registers metrics (``ccmetrics evaluate --plugin``).
:class:`MonaiRegionMetric` runs a MONAI metric object as a ``region`` engine function (on the two-channel
one-hot crops of each Voronoi region, one call per region, its buffer reset after each), and
:func:`metric_for_object` gives such an object its (not registered) record. :func:`resolve` turns a
``metrics`` argument (names, :class:`~ccmetrics.metrics.registry.Metric` records and MONAI objects) into
records. The facts of the records (which metrics are distances, their worst values) stay in
:mod:`ccmetrics.metrics.registry`, which re-exports every name here: this module reads the registry at call
time only, so that the registry can import it (it wraps MONAI objects given to ``register_metric``).
"""

from __future__ import annotations

import importlib
import inspect
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .registry import Metric

__all__ = ["MonaiRegionMetric", "load_plugin", "metric_for_object", "resolve"]


def load_plugin(spec: str) -> ModuleType:
    """Import a module that registers metrics (``ccmetrics evaluate --plugin``): a module name or a ``.py`` file.

    A file is imported by its name from its folder, which is added at the end of ``sys.path`` (so that
    it shadows no installed module; worker processes started by ``evaluate_dataset(workers=...)``
    inherit it and import the functions of its metrics too; Dask workers need the module on their own
    path).

    Raises
    ------
    FileNotFoundError
        A ``.py`` file that does not exist.
    ImportError
        The module cannot be imported, or a file's name is taken by another module.
    """
    path = Path(spec)
    if spec.endswith(".py") or path.is_file():
        if not path.is_file():
            raise FileNotFoundError(f"plugin file {spec} does not exist")
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.append(folder)
        module = importlib.import_module(path.stem)
        if Path(getattr(module, "__file__", "") or "").resolve() != path.resolve():
            raise ImportError(
                f"plugin {spec}: the module name {path.stem!r} is taken by {module.__file__}; rename the file"
            )
        return module
    return importlib.import_module(spec)


# ---------------------------------------------------------------- metrics given as arguments


def _is_monai_metric(obj: Any) -> bool:
    return callable(obj) and hasattr(obj, "_compute_tensor") and not isinstance(obj, type)


class MonaiRegionMetric:
    """A MONAI metric object as a ``region`` engine function: ``(pred, gt, spacing) -> float`` on two-channel crops.

    The object is copied (the caller's is never touched) and its buffer is reset after every call, under
    a lock (calls from several threads take turns); the foreground channel's value is kept. torch is
    imported on the first call.
    """

    def __init__(self, metric: Any):
        import copy

        self.metric = copy.deepcopy(metric)
        self._spacing: bool | None = None
        self._lock = threading.Lock()

    def settings(self) -> dict[str, Any]:
        """The object's plain settings (numbers, strings, flags, and tuples or lists of them)."""
        plain = (bool, int, float, str, type(None))
        return {
            k: v
            for k, v in vars(self.metric).items()
            if isinstance(v, plain) or (isinstance(v, (tuple, list)) and all(isinstance(x, plain) for x in v))
        }

    def __call__(self, pred: Any, gt: Any, spacing: Sequence[float] | None = None) -> float:
        import torch

        def one_hot(mask):
            fg = torch.from_numpy(mask)
            return torch.stack([~fg, fg]).unsqueeze(0).float()

        with self._lock:
            if self._spacing is None:
                params = inspect.signature(self.metric._compute_tensor).parameters.values()
                self._spacing = any(p.kind is p.VAR_KEYWORD or p.name == "spacing" for p in params)
            kwargs = {"spacing": spacing} if self._spacing and spacing is not None else {}
            try:
                value = self.metric(y_pred=one_hot(pred), y=one_hot(gt), **kwargs)
            finally:
                if hasattr(self.metric, "reset"):
                    self.metric.reset()
        if isinstance(value, (tuple, list)):
            value = value[0]
        return float(value.reshape(value.shape[0], -1)[0, -1])

    def __getstate__(self) -> dict[str, Any]:
        return {"metric": self.metric, "_spacing": self._spacing}  # the lock stays behind

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MonaiRegionMetric({type(self.metric).__name__})"


def metric_for_object(obj: Any, name: str | None = None) -> Metric:
    """A (not registered) record for a MONAI metric object: engine ``region``, named after its class.

    Hausdorff and surface distance objects are distances (their NaN or inf counts as the worst
    distance); any other is an overlap score, whose empty-GT value is NaN (its best and worst values
    are unknown).
    """
    from .registry import WORST_DISTANCE, Metric, is_distance  # at call time: the registry imports this module

    if isinstance(obj, type):
        raise TypeError(
            f"metrics takes MONAI metric objects, got the class {obj.__name__}: pass an instance "
            f"such as {obj.__name__}() with its options"
        )
    if not _is_monai_metric(obj):
        raise ValueError(f"metrics must be names or MONAI metric objects, got {type(obj).__name__}")
    column_name = name or type(obj).__name__
    distance = is_distance(obj)
    return Metric(
        column_name,
        column_name,
        "distance" if distance else "overlap",
        "region",
        MonaiRegionMetric(obj),
        higher_is_better=not distance,
        best=None,
        worst=WORST_DISTANCE if distance else None,
        unit="length" if distance else "",
    )


def resolve(metrics_arg: str | Metric | Sequence[Any]) -> list[Metric]:
    """The records of a ``metrics`` argument: names (case-insensitive), records, MONAI objects.

    Records are :class:`~ccmetrics.metrics.registry.Metric` objects, used as they are (registered or not).

    Repeated names count once; MONAI objects get their class name as column name (``_2``, ``_3``
    for repeats). An empty list, an unknown name or another object is an error that says the fix.

    >>> [m.name for m in resolve(["Dice", "pq", "dice"])]
    ['dice', 'pq']
    """
    from .registry import Metric, get  # at call time: the registry imports this module

    if isinstance(metrics_arg, (str, Metric)) or not isinstance(metrics_arg, (Sequence, Mapping)):
        metrics_arg = [metrics_arg]
    out: list[Metric] = []
    for m in metrics_arg:
        if isinstance(m, Metric):
            record = m
        elif isinstance(m, str):
            record = get(m)
        else:
            taken = {r.name for r in out}
            base = type(m).__name__
            column_name, k = base, 2
            while column_name in taken:
                column_name, k = f"{base}_{k}", k + 1
            record = metric_for_object(m, column_name)
        if record.name not in {r.name for r in out}:
            out.append(record)
    if not out:
        raise ValueError("metrics is empty")
    return out
