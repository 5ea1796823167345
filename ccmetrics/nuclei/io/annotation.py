"""The one type every nuclei reader returns, ``NucleiAnnotation``: an instance map and a class per instance.

``(H, W)`` int32 instance map with ids ``1..N`` without gaps (0 background), the class of every id (0 unknown,
real classes ``>= 1``), where it was read from, an optional ignore mask (MoNuSAC ``Ambiguous`` regions) and the
format's class names.  Construction checks the map (2D, integer, ``>= 0``, within int32) and that the classes have
exactly the keys ``1..N``, in one pass over the map; :meth:`NucleiAnnotation.type_map` is one look-up per pixel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._common import _INT32_MAX

__all__ = ["NucleiAnnotation"]


@dataclass(frozen=True, eq=False)
class NucleiAnnotation:
    """A nuclei annotation: one instance map and the class of every instance.

    Attributes
    ----------
    instances : numpy.ndarray
        ``(H, W)`` int32 instance map: 0 is background, instances are ``1..N`` without gaps.
    classes : dict of int to int
        Class of every instance id ``1..N`` (exactly these keys).  ``0`` means unknown /
        unclassified; real classes are ``>= 1``.
    source : str
        Where it was read from: the file or folder (``path[i]`` for image ``i`` of a
        stacked ``.npy``).
    ignore : numpy.ndarray or None
        ``(H, W)`` bool mask of regions to leave out of an evaluation (MoNuSAC
        ``Ambiguous`` regions); ``None`` when the source has none.
    class_names : dict of str to int or None
        Class name -> class id, where the format names its classes (PanNuke, MoNuSAC,
        GeoJSON); ``None`` otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> ann = NucleiAnnotation(np.array([[0, 1], [2, 2]], np.int32), {1: 3, 2: 0}, "example")
    >>> ann.n_instances
    2
    >>> ann.type_map()
    array([[0, 3],
           [0, 0]], dtype=int32)
    """

    instances: np.ndarray
    classes: dict[int, int]
    source: str
    ignore: np.ndarray | None = None
    class_names: dict[str, int] | None = None

    def __post_init__(self):
        inst = np.asarray(self.instances)
        if inst.ndim != 2:
            raise ValueError(f"NucleiAnnotation.instances must be a 2D (H, W) map, got shape {inst.shape}")
        if not (inst.dtype == bool or np.issubdtype(inst.dtype, np.integer)):
            raise ValueError(f"NucleiAnnotation.instances must hold integer ids, got dtype {inst.dtype}")
        n = int(inst.max()) if inst.size else 0
        if inst.size and int(inst.min()) < 0:
            raise ValueError("NucleiAnnotation.instances has negative ids; 0 is background, ids are 1..N")
        if n > _INT32_MAX:
            raise ValueError(f"NucleiAnnotation.instances has id {n}, more than int32 holds")
        if inst.dtype != np.int32:
            inst = inst.astype(np.int32)
        object.__setattr__(self, "instances", inst)
        classes = {int(k): int(v) for k, v in dict(self.classes).items()}
        if set(classes) != set(range(1, n + 1)):
            missing = sorted(set(range(1, n + 1)) - set(classes))[:5]
            extra = sorted(set(classes) - set(range(1, n + 1)))[:5]
            raise ValueError(
                f"NucleiAnnotation.classes must have exactly the keys 1..{n} (one class per instance id);"
                f" missing {missing}, not in the map {extra}"
            )
        object.__setattr__(self, "classes", classes)
        if self.ignore is not None:
            ign = np.asarray(self.ignore)
            if ign.shape != inst.shape:
                raise ValueError(f"NucleiAnnotation.ignore has shape {ign.shape}, the instance map {inst.shape}")
            object.__setattr__(self, "ignore", ign.astype(bool, copy=False))
        if self.class_names is not None:
            object.__setattr__(self, "class_names", {str(k): int(v) for k, v in dict(self.class_names).items()})

    @property
    def n_instances(self) -> int:
        """Number of instances ``N``."""
        return len(self.classes)

    def type_map(self) -> np.ndarray:
        """``(H, W)`` int32 class of every pixel: 0 on background and on unknown-class instances."""
        lut = np.zeros(self.n_instances + 1, np.int32)
        for k, c in self.classes.items():
            lut[k] = c
        return lut[self.instances]

    def __repr__(self) -> str:
        extra = "" if self.ignore is None else f", ignore={int(self.ignore.sum())} px"
        return (
            f"NucleiAnnotation({self.instances.shape[0]}x{self.instances.shape[1]}, "
            f"{self.n_instances} instances, classes {sorted(set(self.classes.values()))}{extra}, "
            f"source={self.source!r})"
        )
