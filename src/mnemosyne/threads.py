"""How many threads Mnemosyne's numeric work may use: ``MNEMOSYNE_THREADS``, default 1.

On shared machines with few cores, thread pools collapse: measured on 2 cores under
load, OpenBLAS's default pool took 8 ms for a 2,000 x 384 matrix-vector product that
one thread does in 0.5 ms, and ONNX Runtime behaved alike. So the bundled model and
every matrix product Mnemosyne runs use one thread unless told otherwise.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

from .errors import InvalidInputError

THREADS_ENV_VAR = "MNEMOSYNE_THREADS"
T = TypeVar("T")


def thread_count(threads: int | None = None) -> int:
    """The argument, else ``MNEMOSYNE_THREADS``, else 1."""
    if threads is not None:
        if threads < 1:
            raise InvalidInputError(f"threads must be at least 1, got {threads}")
        return threads
    raw = os.environ.get(THREADS_ENV_VAR, "").strip()
    if not raw:
        return 1
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise InvalidInputError(f"{THREADS_ENV_VAR} must be a positive whole number, got {raw!r}")
    return int(raw)


_lock = threading.Lock()
_inside = 0  # threads currently inside ``limited_blas``
_limiter: Any = None  # restores the application's own BLAS setting when the last one leaves


@contextmanager
def limited_blas() -> Iterator[None]:
    """Run the block with numpy's BLAS limited to ``thread_count()`` threads.

    The BLAS thread setting is process-wide, so overlapping blocks (from several
    threads) share one limit: the first to enter sets it, the last to leave restores
    what the application had.
    """
    global _inside, _limiter
    with _lock:
        if _inside == 0:
            _limiter = _controller().limit(limits=thread_count(), user_api="blas")
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                _limiter.restore_original_limits()
                _limiter = None


@functools.cache
def _controller() -> Any:
    """Finding the loaded BLAS libraries takes milliseconds: done once."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


class _Background:
    """A small thread pool for work that overlaps a caller's own (recall's two searches).

    Created on first use, and forgotten in a forked child, whose copy would hold
    threads that do not exist there.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        os.register_at_fork(after_in_child=self._forget)

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mnemosyne")
            return self._pool.submit(fn)

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._pool = None


background = _Background()
