"""Forking a process whose threads use Mnemosyne.

``fork()`` (multiprocessing's default start method on Linux before Python 3.14)
copies the whole memory of a process but only the thread that called it. What
another thread was doing at that moment is frozen in the child, half done: a lock it
held stays held there for ever. SQLite is the worst case: it keeps, per process, the
locks this process holds on each file and mutexes taken inside each call. A child
forked while another thread was inside a write finds the file locked for ever, from
connections of its own too, or waits on a mutex no thread will release.

So:

- :func:`enter` and :func:`leave` bracket database work. A fork waits until no other
  thread is inside such work (for at most ``FORK_WAIT_S``), and threads about to
  start some wait until the fork is made.
- :class:`Lock` is a lock that a forked child finds unlocked, whoever held it.

What the parent's connections leave in the child is dealt with beside them, in
``storage/sqlite/connection.py``.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from types import TracebackType

log = logging.getLogger("mnemosyne.fork")

# As long as a write waits for another's lock by default (busy_timeout): a read left
# open for longer (an export another thread stopped iterating) is not worth more.
FORK_WAIT_S = 60.0

# The state below is read and changed under _lock; _state_changed (over the same
# lock) is waited on. Taking _lock itself costs less than the condition's methods.
_lock = threading.Lock()
_state_changed = threading.Condition(_lock)
_threads_inside = 0
_forking = False
_this_thread = threading.local()  # .work: this thread's Work


class Work:
    """One thread's database work: how deep it is nested, and whether the thread may
    wait for a fork. Work begun in one thread may end in another (a dump generator
    read on, or closed, elsewhere): it ends in the thread it began in."""

    __slots__ = ("depth", "never_waits")

    def __init__(self) -> None:
        self.depth = 0
        self.never_waits = False


def _work_here() -> Work:
    work: Work | None = getattr(_this_thread, "work", None)
    if work is None:
        work = _this_thread.work = Work()
    return work


def enter() -> Work:
    """Start database work in this thread (work nests); first wait for a fork under
    way. Hand what it returns to :func:`leave`."""
    global _threads_inside
    work = _work_here()
    if work.depth == 0:
        with _lock:
            while _forking and not work.never_waits:
                _state_changed.wait()
            _threads_inside += 1
    work.depth += 1
    return work


def leave(work: Work) -> None:
    """End what :func:`enter` started, in whichever thread."""
    global _threads_inside
    with _lock:
        work.depth -= 1
        if work.depth == 0:
            _threads_inside -= 1
            if _forking:
                _state_changed.notify_all()


def inside_here() -> bool:
    """Whether this thread is inside database work."""
    return _work_here().depth > 0


def never_wait_in_this_thread() -> None:
    """For a thread doing work that others wait for from inside theirs (recall's
    pool): were it to wait for a fork, they would never leave, and the fork would
    wait for them."""
    _work_here().never_waits = True


def _before_fork() -> None:
    global _forking
    mine = 1 if inside_here() else 0  # the forking thread's own work cannot end first
    # Held until the fork is made (released after it, in the parent): a thread that
    # never waits for a fork (recall's pool) still waits for this lock, so no work
    # begins between the wait below and the fork.
    _lock.acquire()
    while _forking:  # another thread's fork first
        _state_changed.wait()
    _forking = True
    if not _state_changed.wait_for(lambda: _threads_inside == mine, FORK_WAIT_S):
        log.warning(
            "forking while %d other threads are still inside database work after %g s: the "
            "child cannot use the databases they have open", _threads_inside - mine, FORK_WAIT_S,
        )


def _after_fork_in_parent() -> None:
    global _forking
    _forking = False
    _state_changed.notify_all()
    _lock.release()


def _after_fork_in_child() -> None:
    global _lock, _state_changed, _threads_inside, _forking
    # Only this thread exists here: the others' work is gone with them.
    _lock = threading.Lock()
    _state_changed = threading.Condition(_lock)
    _threads_inside = 1 if inside_here() else 0
    _forking = False
    for lock in list(_locks):
        lock._lock = threading.Lock()


class Lock:
    """A ``threading.Lock`` that a forked child finds unlocked.

    The thread holding it at the fork does not exist in the child, and would never
    release it there. What the lock guards must stay usable if a thread stops
    anywhere inside: short updates, or work that is redone when found unfinished.
    """

    __slots__ = ("_lock", "__weakref__")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        _locks.add(self)

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._lock.release()


_locks: weakref.WeakSet[Lock] = weakref.WeakSet()

os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)
