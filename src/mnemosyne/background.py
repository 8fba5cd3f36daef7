"""A small thread pool for work that overlaps the caller's own (recall's two searches).

Created on first use, and forgotten in a forked child: the child's copy would hold
threads that do not exist there, and work handed to it would never run.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def submit(fn: Callable[[], T]) -> Future[T]:
    """Run ``fn`` on a pool thread; the future holds its result or its exception."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mnemosyne")
        return _pool.submit(fn)


def _forget() -> None:
    global _lock, _pool
    _lock, _pool = threading.Lock(), None


os.register_at_fork(after_in_child=_forget)
