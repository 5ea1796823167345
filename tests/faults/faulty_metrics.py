"""Test-only metrics that fail for real on chosen cases: SIGKILL, a segfault, a hang, a kill on the first try.

A case is chosen by the voxel count of one GT lesion (the region masks a region metric receives):
pick lesion sizes no other lesion of the test data has. ``CCM_FAULT_DIR`` names a folder for the
"first try only" marker; ``CCM_FAULT_SLEEP`` (seconds) slows every region call, so that a test can
interrupt a run half-way.
"""

import os
import signal
import time
from pathlib import Path

import numpy as np

import ccmetrics

#: lesion sizes (voxels) that trigger each fault
KILL, SEGV, HANG, ONCE = 13, 11, 17, 19


def faulty(pred, gt, spacing):
    """Dice on the region, after the fault that the region's lesion size asks for."""
    n = int(np.count_nonzero(gt))
    if n == KILL:
        os.kill(os.getpid(), signal.SIGKILL)
    if n == SEGV:
        os.kill(os.getpid(), signal.SIGSEGV)
    if n == HANG:
        time.sleep(3600)
    if n == ONCE:
        marker = Path(os.environ["CCM_FAULT_DIR"]) / f"once-{n}"
        if not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(float(os.environ.get("CCM_FAULT_SLEEP", "0")))
    both = int(np.count_nonzero(pred & gt))
    total = int(np.count_nonzero(pred)) + n
    return 2.0 * both / total if total else 1.0


ccmetrics.register_metric("faulty", faulty, kind="overlap", replace=True)


def timed_sleep(payload, shared):
    """A job for ``ccmetrics.campaign._workers.run_jobs``: sleep ``shared`` seconds (or, for a payload
    ``(name, seconds)``, that job's own seconds), return (name, start, end)."""
    name, seconds = payload if isinstance(payload, tuple) else (payload, shared)
    start = time.monotonic()
    time.sleep(seconds)
    return name, start, time.monotonic()


def touch(payload, shared):
    """A job for ``ccmetrics.campaign._workers.run_jobs``: create the file ``payload`` in the folder ``shared`` (the
    moment the job started, seen from another process), return its name."""
    Path(shared, payload).touch()
    return payload
