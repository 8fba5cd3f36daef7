"""Access statistics for recall hits, written in small batches off the read path.

Hits are counted in memory and flushed, at most every ``interval`` seconds or
``batch`` distinct memories, in one short transaction that waits at most
``lock_wait`` seconds for the write lock. If the lock is busy the counts stay
pending for the next flush; they are statistics, so a failure to record them is
logged and never fails a recall. Pending counts are bounded (``max_pending``
distinct memories) so a database that stays locked cannot grow memory without end.
What is still pending when a recorder is dropped or the process exits is flushed
then: scripts and CLI commands often end without ``close()``.
"""

from __future__ import annotations

import logging
import os
import time
import weakref
from collections.abc import Iterable

from ... import _fork
from ...errors import MnemosyneError
from .connection import Database

log = logging.getLogger("mnemosyne.access")


class AccessRecorder:
    """Counts recall hits per memory and flushes them in batches."""

    def __init__(
        self, db: Database, batch: int = 256, interval: float = 2.0,
        lock_wait: float = 0.05, max_pending: int = 50_000,
    ) -> None:
        self._db = db
        self.batch, self.interval, self.lock_wait, self.max_pending = batch, interval, lock_wait, max_pending
        self._pending: dict[str, list[float]] = {}  # id -> [hits, last access time]
        self._lock = _fork.Lock()
        self._last_flush = time.monotonic()
        # Holds what a flush needs but not the recorder, so the recorder can still be
        # collected; runs when it is, or at exit, whichever comes first.
        weakref.finalize(self, _flush_left_over, db, self._pending, self._lock)
        _recorders.add(self)

    def record(self, memory_ids: Iterable[str]) -> None:
        """Count one access of each id; flush if a batch is due."""
        at = time.time()
        with self._lock:
            for memory_id in memory_ids:
                entry = self._pending.get(memory_id)
                if entry is None:
                    if len(self._pending) >= self.max_pending:
                        continue  # bounded: statistics, not memories
                    self._pending[memory_id] = [1, at]
                else:
                    entry[0] += 1
                    entry[1] = at
            due = len(self._pending) >= self.batch or time.monotonic() - self._last_flush >= self.interval
        if due:
            self.flush()

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self, lock_wait: float | None = None) -> bool:
        """Write pending counts in one short transaction; False if they stay pending."""
        with self._lock:
            self._last_flush = time.monotonic()
        wait = self.lock_wait if lock_wait is None else lock_wait
        return _flush(self._db, self._pending, self._lock, wait, self.max_pending)


def _flush(
    db: Database, pending: dict[str, list[float]], lock: _fork.LockType, lock_wait: float, max_pending: int
) -> bool:
    with lock:
        batch = dict(pending)
        pending.clear()  # the same dict, never a new one: the finalizer holds it
    if not batch:
        return True
    rows = [(int(hits), at, memory_id) for memory_id, (hits, at) in batch.items()]
    try:
        with db.write("record access statistics", deadline=lock_wait) as conn:
            # Forgotten memories simply match no row. Only these two columns
            # change, so no index trigger fires.
            conn.executemany(
                "UPDATE memories SET access_count = access_count + ?, "
                "last_accessed_at = max(coalesce(last_accessed_at, 0), ?) "
                "WHERE id = ?",
                rows,
            )
        return True
    except MnemosyneError as exc:
        log.debug("access statistics kept for later: %s", exc)
        with lock:
            for memory_id, (hits, at) in batch.items():
                entry = pending.get(memory_id)
                if entry is None:
                    if len(pending) < max_pending:
                        pending[memory_id] = [hits, at]
                else:
                    entry[0] += hits
                    entry[1] = max(entry[1], at)
        return False


# Every live recorder, for a forked child to drop the hits it copied: they are the
# parent's to write, and each worker that ended normally wrote them again.
_recorders: weakref.WeakSet[AccessRecorder] = weakref.WeakSet()


def _forget_the_parents_hits() -> None:
    for recorder in list(_recorders):
        recorder._pending.clear()  # the same dict, never a new one: the finalizer holds it


os.register_at_fork(after_in_child=_forget_the_parents_hits)


def _flush_left_over(db: Database, pending: dict[str, list[float]], lock: _fork.LockType) -> None:
    """The last flush of a recorder dropped without close(), or still open at exit."""
    if pending and not db.closed:
        _flush(db, pending, lock, lock_wait=1.0, max_pending=len(pending))
