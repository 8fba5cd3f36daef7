"""Background work: a small thread pool for work that overlaps the caller's own
(recall's two searches), and daemon threads stopped when the interpreter exits.

The pool is created on first use, and forgotten in a forked child: the child's copy
would hold threads that do not exist there, and work handed to it would never run.
"""

from __future__ import annotations

import _signal
import atexit
import os
import signal
import threading
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Protocol, TypeVar

from . import _fork

T = TypeVar("T")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def submit(fn: Callable[[], T]) -> Future[T]:
    """Run ``fn`` on a pool thread; the future holds its result or its exception.

    Signals are held back while the pool takes the work: the pool starts a thread
    and only then records it for the interpreter's exit to stop, and a handler's
    exception (a SIGTERM handler's ``sys.exit()``) raised in between left a thread
    nothing stops, and the process hung at exit (``tests/test_background.py``; seen
    once in about 80 runs of a handler closing an instance every 1.3 ms). The
    threads it starts hold signals back for good: the main thread handles them."""
    global _pool
    with _signals_held(), _lock:
        if _pool is None:
            # Recall waits for its pool work from inside a read: the pool never waits for a fork.
            _pool = ThreadPoolExecutor(
                max_workers=4, thread_name_prefix="mnemosyne", initializer=_fork.never_wait_in_this_thread
            )
        return _pool.submit(fn)


def result_of(future: Future[T]) -> T:
    """``future``'s result (or exception), waited for on a lock of its own.

    ``Future.result`` waits in ``Condition.wait``, which a signal handler's exception
    raised as it lets go of the future's lock leaves without taking it back: the wait
    then ends in "RuntimeError: cannot release un-acquired lock" in place of the
    handler's exception (seen once in about 60 runs of a handler closing an instance
    every 1.3 ms). A plain lock's wait ends with the handler's exception and nothing
    changed, and the future's own lock is taken with signals held."""
    finished = threading.Lock()
    finished.acquire()
    with _signals_held():
        future.add_done_callback(lambda _: finished.release())
    finished.acquire()
    with _signals_held():
        return future.result()


# The mask as the C function sets and reads it, in signal numbers: ``signal``'s
# wrapper turns each signal of what it returns into an enum member, and so does
# ``valid_signals``, which made holding signals back cost 0.15 ms (three holds a
# recall: a tenth of one at 10k memories) against 4 us.
_sigmask = getattr(_signal, "pthread_sigmask", None)
_EVERY_SIGNAL = frozenset(_signal.valid_signals()) if _sigmask is not None else frozenset()


@contextmanager
def _signals_held() -> Iterator[None]:
    """Signals to this thread wait until the block ends (where the platform can).

    A signal that arrived just before is handled as the block begins, not inside it:
    its handler runs at the interpreter's next check, which may come well after the
    signal, inside the block (as the pool starts a thread: seen once in about 120
    runs of a handler closing an instance every 1.3 ms). The mask is read before it
    changes: a handler's exception anywhere leaves it as it was."""
    if _sigmask is None:
        yield
        return
    before = _sigmask(signal.SIG_BLOCK, ())
    try:
        _sigmask(signal.SIG_BLOCK, _EVERY_SIGNAL)
        _handle_pending_signals()
        yield
    finally:
        _sigmask(signal.SIG_SETMASK, before)


def _handle_pending_signals() -> None:
    """Nothing: entering a Python function is where the interpreter runs the handlers
    of signals that have arrived."""


def _forget() -> None:
    global _lock, _pool
    _lock, _pool = threading.Lock(), None


os.register_at_fork(after_in_child=_forget)


class Stoppable(Protocol):
    def halt(self) -> None:
        """Make the work finish at its next step (without waiting)."""

    def stop(self) -> None:
        """Halt, and wait for the thread."""


_workers: weakref.WeakSet[Stoppable] = weakref.WeakSet()


def stop_at_exit(worker: Stoppable) -> None:
    """Stop ``worker``'s daemon thread when the interpreter exits, if it is still alive.

    A script may end while a backfill or an auto-sleep is under way. A daemon thread
    still inside native code (the model, SQLite) when Python finalises aborts the
    whole process ("terminate called without an active exception"), after the
    script's own work went fine.
    """
    _workers.add(worker)


@atexit.register
def _stop_workers() -> None:
    workers = list(_workers)
    for worker in workers:  # all first: one may be waiting on another's work
        worker.halt()
    for worker in workers:
        worker.stop()
