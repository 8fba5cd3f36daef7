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
- :func:`Lock` makes a lock that a forked child finds unlocked, whoever held it.

The record of what a thread is inside (:class:`Work`) must stay right when an
exception lands anywhere, in it or in the code that updates it: a Ctrl-C caught by a
notebook or a REPL, or a signal handler that raises. So it holds no counts, read and
written back in two steps, but one mark per piece of work: a weak reference to a
:class:`Token` that only the frame doing the work holds. A ``finally`` drops the mark
at once; should an exception land before it could, the mark drops itself as that
frame goes. The same record holds the thread's public calls (see
:mod:`mnemosyne._closing`), and the closes to finish once the thread is out of all of
it: a ``close()`` from inside the thread's own work (a signal handler) cannot wait
for that work, which is below it on the stack.

What the parent's connections leave in the child is dealt with beside them, in
``storage/sqlite/connection.py``.
"""

from __future__ import annotations

import _thread
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable

from .errors import MnemosyneError

log = logging.getLogger("mnemosyne.fork")

# As long as a write waits for another's lock by default (busy_timeout): a read left
# open for longer (an export another thread stopped iterating) is not worth more.
FORK_WAIT_S = 60.0
_FORK_POLL_S = 0.05

# _forking is read and changed under _lock; _state_changed (over the same lock) is
# waited on. Taking _lock itself costs less than the condition's methods.
_lock = threading.Lock()
_state_changed = threading.Condition(_lock)
_forking = False
_this_thread = threading.local()  # .work: this thread's Work


class Token:
    """One piece of work under way. The frame doing it holds the only strong
    reference: once that frame is gone, however it ended, its marks are gone too."""

    __slots__ = ("__weakref__",)


Mark = weakref.ref  # of a Token, in one set of marks


def mark(token: Token, marks: set[Mark[Token]]) -> Mark[Token]:
    """A mark of ``token`` for ``marks``, which removes itself when the token dies.
    Added by the caller, with one call: either it is in the set or it is not."""
    return weakref.ref(token, marks.discard)


class Work:
    """What one thread is inside: database work (``tokens``, which a fork waits for),
    public calls of an instance (``calls``), and the closes to run once it is out of
    both (``after``). Work begun in one thread may end in another (a dump generator
    read on, or closed, elsewhere): it ends in the thread it began in."""

    __slots__ = ("tokens", "calls", "after", "never_waits", "__weakref__")

    def __init__(self) -> None:
        self.tokens: set[Mark[Token]] = set()
        self.calls: set[Mark[Token]] = set()
        self.after: list[Callable[[], None]] = []
        self.never_waits = False

    @property
    def inside(self) -> bool:
        return bool(self.tokens or self.calls)


# Every thread's record, for a fork to see which are inside database work.
_works: weakref.WeakSet[Work] = weakref.WeakSet()


def here() -> Work:
    """This thread's record."""
    work: Work | None = getattr(_this_thread, "work", None)
    if work is None:
        work = Work()
        _works.add(work)
        _this_thread.work = work
    return work


def enter(work: Work, working: Mark[Token]) -> None:
    """Start database work in this thread's ``work`` (work nests); first wait for a
    fork under way. ``working`` is ``mark(token, work.tokens)``; call this inside a
    ``try`` whose ``finally`` calls :func:`leave`."""
    if work.tokens:  # nested: a fork already waits for this thread
        work.tokens.add(working)
        return
    with _lock:
        while _forking and not work.never_waits:
            _state_changed.wait()
        work.tokens.add(working)


def leave(work: Work, working: Mark[Token]) -> None:
    """End what :func:`enter` started (whether or not it got that far), in whichever
    thread; then run the closes left for when ``work`` is out of everything."""
    work.tokens.discard(working)
    if _forking and not work.tokens:  # read after the discard: a fork that began since sees it
        with _lock:
            _state_changed.notify_all()
    if work.after and not work.inside:
        run_after(work)


def run_after(work: Work) -> None:
    """Run the closes a thread asked for from inside its own work, now that it is out."""
    while work.after:
        try:
            action = work.after.pop(0)
        except IndexError:  # another thread ran the last
            return
        try:
            action()
        except MnemosyneError:  # the work that just ended must not fail for it
            log.exception("closing after the work under way ended failed")


def inside_here() -> bool:
    """Whether this thread is inside database work."""
    return bool(here().tokens)


def never_wait_in_this_thread() -> None:
    """For a thread doing work that others wait for from inside theirs (recall's
    pool): were it to wait for a fork, they would never leave, and the fork would
    wait for them."""
    here().never_waits = True


def _before_fork() -> None:
    global _forking
    mine = here()  # the forking thread's own work cannot end first
    # Held until the fork is made (released after it, in the parent): a thread that
    # never waits for a fork (recall's pool) still waits for this lock, so no work
    # begins between the wait below and the fork.
    _lock.acquire()
    while _forking:  # another thread's fork first
        _state_changed.wait()
    _forking = True
    if not _wait_for_others(mine):
        log.warning(
            "forking while %d other threads are still inside database work after %g s: the "
            "child cannot use the databases they have open", _others_inside(mine), FORK_WAIT_S,
        )


def _wait_for_others(mine: Work) -> bool:
    """Wait (with ``_lock`` held, released while waiting) until no other thread is
    inside database work; False after ``FORK_WAIT_S``. Woken when work ends, and
    every ``_FORK_POLL_S`` for the marks that dropped themselves, which wake no one."""
    end = time.monotonic() + FORK_WAIT_S
    while _others_inside(mine):
        left = end - time.monotonic()
        if left <= 0:
            return False
        _state_changed.wait(min(left, _FORK_POLL_S))
    return True


def _others_inside(mine: Work) -> int:
    return sum(1 for work in list(_works) if work.tokens and work is not mine)


def _after_fork_in_parent() -> None:
    global _forking
    _forking = False
    _state_changed.notify_all()
    _lock.release()


def _after_fork_in_child() -> None:
    global _lock, _state_changed, _forking
    # Only this thread exists here: the others' work is gone with them.
    _lock = threading.Lock()
    _state_changed = threading.Condition(_lock)
    mine = here()
    for work in list(_works):
        if work is not mine:
            work.tokens.clear()
            work.calls.clear()
            work.after.clear()
    _forking = False
    for lock in list(_locks):
        if lock.locked():  # by a thread that is not here
            lock.release()


LockType = _thread.LockType


def Lock() -> LockType:  # noqa: N802 - made and used as threading.Lock() is
    """A ``threading.Lock`` that a forked child finds unlocked.

    The thread holding it at the fork does not exist in the child, and would never
    release it there. What the lock guards must stay usable if a thread stops
    anywhere inside: short updates, or work that is redone when found unfinished.

    The lock itself, not a wrapper: ``with`` takes and releases it in C, so an
    exception from a signal handler cannot land between taking it and the block
    that releases it (a Python ``__enter__`` left it held for ever).
    """
    lock = threading.Lock()
    _locks.add(lock)
    return lock


_locks: weakref.WeakSet[LockType] = weakref.WeakSet()

os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)
