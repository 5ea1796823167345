"""Test-only plugin (``ccmetrics evaluate --plugin``): slows a step of the final phase, so that a test can send a
real signal, or fill a real disk, while the step runs.

``CCM_SLOW_PLOTS`` (seconds): the plots wait that long before they are drawn (the tables are written by then,
``manifest.json`` says ``writing``); ``CCM_SLOW_WRITE`` (seconds): ``DatasetResult.write`` waits that long
before writing anything (the final write and the write of a stopped run's finished cases alike).
``CCM_FINAL_MARKER`` (a path): touched when the wait begins. ``CCM_WAIT_IN`` chooses where the plots' wait
happens: ``sleep`` (default), ``del`` (inside an object's ``__del__``, where Python swallows an exception: a
signal's exception raised there is lost, "Exception ignored in ...") or ``exec`` (inside code run by ``exec``,
after which CPython ends the process by SIGINT if an exact ``KeyboardInterrupt`` left it). Without these
variables nothing changes.
"""

import os
import time
from pathlib import Path

import ccmetrics.analysis.plots
import ccmetrics.campaign.dataset


class _SlowToDelete:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __del__(self) -> None:
        time.sleep(self.seconds)


def _wait(variable: str) -> None:
    marker = os.environ.get("CCM_FINAL_MARKER")
    if marker:
        Path(marker).touch()
    seconds = float(os.environ[variable])
    where = os.environ.get("CCM_WAIT_IN", "sleep")
    if where == "del":
        slow = _SlowToDelete(seconds)
        del slow  # the signal's exception, raised in __del__, is printed and dropped by Python
    elif where == "exec":
        exec(f"time.sleep({seconds})", {"time": time})
    else:
        time.sleep(seconds)


if os.environ.get("CCM_SLOW_PLOTS"):  # (the figures' helper process is warming up meanwhile)
    _write_result_plots = ccmetrics.analysis.plots.write_result_plots

    def slow_write_result_plots(*args, **kwargs):
        _wait("CCM_SLOW_PLOTS")
        return _write_result_plots(*args, **kwargs)

    ccmetrics.analysis.plots.write_result_plots = slow_write_result_plots

if os.environ.get("CCM_SLOW_WRITE"):
    _write = ccmetrics.campaign.dataset.DatasetResult.write

    def slow_write(self, *args, **kwargs):
        _wait("CCM_SLOW_WRITE")
        return _write(self, *args, **kwargs)

    ccmetrics.campaign.dataset.DatasetResult.write = slow_write  # type: ignore[method-assign]
