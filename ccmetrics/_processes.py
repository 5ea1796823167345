"""Child processes that end with their parent: shared by the campaign's workers and the figures' helper."""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["die_with_parent"]


def die_with_parent(parent: int) -> None:
    """Linux: ask the kernel to kill this process when its parent dies (``PR_SET_PDEATHSIG``), so that a parent
    killed by SIGKILL leaves no worker or figure helper computing (or hanging) on; elsewhere a child notices at its
    next send or receive. Best effort: nothing changes where ``prctl`` cannot be called."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request: nobody is waiting for this process
        os._exit(0)
