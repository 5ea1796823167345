"""One lock around every launch of a parallel numba kernel.

numba's fallback threading layer (``workqueue``, used where neither OpenMP nor TBB is available) aborts
the whole process when two Python threads launch parallel kernels at the same time. Each kernel already
keeps every core busy, so launches from several threads (``evaluate`` called from a user's thread pool,
or its own worker threads) take turns instead; a kernel never calls back into Python, so the lock
cannot deadlock.
"""

import threading

PARALLEL = threading.Lock()
