"""What a run did (:class:`~ccmetrics.results.run.RunInfo`): kept with its result and in ``summary.json``.

>>> info = RunInfo(reused=2, evaluated=1, reasons={"case_3": "new"})
>>> info.complete, info.to_dict()["reused"]
(True, 2)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["RunInfo"]


@dataclass
class RunInfo:
    """What a run did: cases taken from records, evaluated and why, failed by a crash, and not reached."""

    reused: int = 0
    evaluated: int = 0
    reasons: dict[str, str] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)
    dropped_records: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.pending

    def to_dict(self) -> dict[str, Any]:
        return {"complete": self.complete, **asdict(self)}
