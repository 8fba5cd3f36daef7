"""Closing an instance while it is in use, from any thread or from a signal handler.

Every public call of an instance passes its :class:`Gate`. ``close()`` then:

- refuses new calls (:class:`StorageError`) at once;
- from a thread that is itself inside a call or database work (a signal handler that
  interrupted the main thread, a callback), finishes only once that thread is out of
  it: the work under way is below ``close()`` on the stack, may hold the locks
  closing takes, and cannot be waited for. It goes on, and commits or rolls back as
  it would; the ``SystemExit`` of a handler's ``sys.exit()`` unwinds through it, and
  the close is finished there;
- from any other thread, waits for the calls under way in other threads to finish
  (at most ``CLOSE_WAIT_S``, logged), then closes. A sleep still under way after
  ``SLEEP_GRACE_S`` is asked to end at its next step (see :class:`Stopping`).

The gate marks each call under way as :mod:`mnemosyne._fork` marks database work: an
exception landing anywhere cannot leave a call counted for ever.
"""

from __future__ import annotations

import atexit
import functools
import logging
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from . import _fork
from .errors import StorageError

log = logging.getLogger("mnemosyne")

# How long close() waits for calls under way in other threads. Calls take
# milliseconds; an embedding of a large batch with the local model, seconds. Past
# this (an import or a re-embedding of a large database), the call is left to fail
# with StorageError, as it did before close() waited, and the wait is logged.
CLOSE_WAIT_S = 30.0
# A wait this long is logged as it happens: the service looks stuck otherwise.
_LOG_WAIT_AFTER_S = 5.0
# How long close() lets a sleep under way in another thread run before asking it to
# end at its next step (between two summaries, within 0.1 s while it waits for one,
# or between two parts of its apply: what it applied stands, and the next sleep does
# the rest). A short sleep finishes; a long one ends well within CLOSE_WAIT_S and
# releases its lease. Left to fail on the closed database, it held the lease until
# it expired, and every process's sleep was refused till then.
SLEEP_GRACE_S = 5.0
# close() polls rather than waiting on a condition: a condition's lock is one more
# lock a signal handler could find held by the thread it interrupted.
_POLL_S = 0.005

F = TypeVar("F", bound=Callable[..., Any])


class Gate:
    """The calls under way on one open database (an instance and its sibling
    sessions), and whether it is closing."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.closing = False
        self.stopping = False  # close() has waited SLEEP_GRACE_S: sleeps under way end early
        self._calls: set[_fork.Mark[_fork.Token]] = set()  # one mark per call under way, any thread

    def enter(self, work: _fork.Work, token: _fork.Token) -> None:
        """Let a call in; call :meth:`leave` in a ``finally`` whatever happens.

        The thread's mark is made before the gate's and dropped after it: a close()
        from this thread (a signal handler) that finds the call in the gate finds it in
        the thread too, and is put off rather than wait for it."""
        if work.after and not work.inside:  # put off by a call whose end an exception cut short
            _fork.run_after(work)
        nested = bool(work.calls)  # a call made by a call under way: it must be able to finish
        work.calls.add(_fork.mark(token, work.calls))
        self._calls.add(_fork.mark(token, self._calls))  # then closing: close() sees the call, or it closing
        if self.closing and not nested:
            raise StorageError(f"{self.path} is closed; open a new Mnemosyne instance", self.path)

    def leave(self, work: _fork.Work, token: _fork.Token) -> None:
        mark = weakref.ref(token)  # equal to the marks of the live token
        self._calls.discard(mark)
        work.calls.discard(mark)
        if work.after and not work.inside:
            _fork.run_after(work)

    def close(self, finish: Callable[[], None], halt: Callable[[], None]) -> None:
        """Refuse new calls, ``halt`` background work (without waiting for it), and
        run ``finish`` once no call is under way: now, after waiting for other
        threads' calls, or, from inside this thread's own work, when it ends."""
        self.closing = True
        halt()
        work = _fork.here()
        if work.inside:
            if finish not in work.after:
                work.after.append(finish)
            return
        self._wait_for_calls()
        finish()

    def _wait_for_calls(self) -> None:
        """Wait for the calls under way (all in other threads: this one is in none)."""
        started = time.monotonic()
        logged = False
        while self._calls:
            waited = time.monotonic() - started
            if waited >= CLOSE_WAIT_S:
                log.warning("closing %s while %d calls are still under way after %g s: they fail "
                            "with StorageError", self.path, len(self._calls), CLOSE_WAIT_S)
                return
            if waited >= SLEEP_GRACE_S:
                self.stopping = True
            if waited >= _LOG_WAIT_AFTER_S and not logged:
                log.warning("closing %s waits for %d calls under way in other threads (at most %g s)",
                            self.path, len(self._calls), CLOSE_WAIT_S)
                logged = True
            time.sleep(_POLL_S)


class Stopping:
    """The stop signal of a sleep that a gate's close() may end early: it reads as set
    once close() has waited ``SLEEP_GRACE_S`` for calls under way. A flag, not a
    ``threading.Event``: setting an event takes a lock, and close() may run in a
    signal handler that interrupted a thread holding it."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate

    def is_set(self) -> bool:
        return self._gate.stopping


@atexit.register
def _finish_closes_put_off() -> None:
    """Finish the closes this thread put off that no later call came to finish: the
    ``SystemExit`` of a signal handler that landed in the very end of a call cuts
    short the code that would have (the process is out of every call by now)."""
    _fork.run_after(_fork.here())


def call(method: F) -> F:
    """A public method of the instance, passing its gate."""

    @functools.wraps(method)
    def gated(self: Any, *args: Any, **kwargs: Any) -> Any:
        gate, work, token = self._gate, _fork.here(), _fork.Token()
        try:
            gate.enter(work, token)
            return method(self, *args, **kwargs)
        finally:
            gate.leave(work, token)

    return gated  # type: ignore[return-value]
