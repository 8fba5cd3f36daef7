"""Keeping the write-ahead log (``<db>-wal``) small while reads never stop.

SQLite copies the log back into the database after commits (a passive checkpoint),
but starts the log over only at a moment when every page in it is copied and no
read transaction is using it. Under sustained writes with reads always in flight
(recalls on several threads or processes) that moment never comes: the log grew by
2.2 GB in 20 s, reads slowed from 1-4 ms to ~100 ms as it grew, and the file kept
its size until the database was closed.

So a commit that finds the log past :data:`RESTART_AT_BYTES` runs a RESTART
checkpoint: it holds other writers off, copies what is left, and waits for the reads
already in flight to end (new reads read the database file and do not make it
wait); the next write starts the log from the beginning, and, as every connection
sets ``journal_size_limit``, cuts the file back to :data:`KEPT_BYTES`. It waits for
reads at most :data:`READERS_WAIT_S`; a read held longer (an export) makes it give
up, and the next attempt comes later and later while that lasts, so writers are
held off only briefly. SQLite lets one checkpoint run at a time across processes;
within a process, one thread tries at a time and the others go on.

That wait is cut into short tries. A checkpoint waits for the lock of each read
mark it found behind the log's end, as it found it; reads that overlap one another
keep that lock taken without a break, even once one of them has moved the mark up
to date. One long wait then starved to its end (measured: 2 of 5 runs of the
bounded-log test gave up, and as many waiting 2 s), while a new try sees the marks
as they are now and goes through.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time

# Past this size a commit restarts the log. SQLite's own checkpoint starts at 1000
# pages (about 4 MB); four times that makes restarts (each holding writers off while
# in-flight reads end) four times rarer, and keeps reads through the log fast.
RESTART_AT_BYTES = 32 * 2**20
# The size the log file is cut back to when it starts over: it is reused from the
# beginning, so keeping this much saves growing the file again at once.
KEPT_BYTES = 4 * 2**20
# How long a restart waits for the reads in flight to end, holding writers off
# meanwhile. A recall's read lasts a few milliseconds, about 100 ms on a busy machine.
READERS_WAIT_S = 0.2
# The longest one try waits before the restart looks at the read marks again.
TRY_WAIT_S = 0.02
# After a restart that could not finish (a read held open longer), the next waits
# this long, doubling up to the cap while restarts keep failing.
RETRY_AFTER_S = 0.25
RETRY_CAP_S = 8.0


class WalKeeper:
    """Restarts one database's log when a commit finds it past :data:`RESTART_AT_BYTES`."""

    def __init__(self, database: os.PathLike[str] | str) -> None:
        self._wal = f"{os.fspath(database)}-wal"
        self._lock = threading.Lock()
        self._not_before = 0.0
        self._retry_after = RETRY_AFTER_S

    def after_commit(self, conn: sqlite3.Connection) -> bool:
        """Restart the log if it has grown too big; ``conn`` must be outside any
        transaction. Returns whether ``conn``'s busy timeout was changed (the caller
        sets its own again). Never raises a database error: the commit stands."""
        if time.monotonic() < self._not_before or _size(self._wal) <= RESTART_AT_BYTES:
            return False
        if not self._lock.acquire(blocking=False):  # another thread of this process is at it
            return False
        try:
            finished = _restart(conn)
            if finished:
                self._retry_after = RETRY_AFTER_S
            else:
                self._not_before = time.monotonic() + self._retry_after
                self._retry_after = min(self._retry_after * 2, RETRY_CAP_S)
            return True
        finally:
            self._lock.release()


def _restart(conn: sqlite3.Connection) -> bool:
    """Checkpoint the whole log so that the next write starts it over; whether it did.

    Busy (another process checkpointing, or a read that outlasted the wait) is a
    result, not an error; any other error leaves the log to the next attempt.
    """
    if conn.in_transaction:  # never inside a caller's transaction
        return False
    give_up = time.monotonic() + READERS_WAIT_S
    with contextlib.suppress(sqlite3.Error):
        # SQLite's busy handler does the waiting within a try: it holds the write
        # lock while waiting for reads, which a wait of ours between tries would not.
        conn.execute(f"PRAGMA busy_timeout = {int(TRY_WAIT_S * 1000)}")
        while True:
            busy, log_frames, _ = conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
            if not busy:
                return True
            # -1: another connection is checkpointing (its restart serves us too).
            if log_frames < 0 or time.monotonic() >= give_up:
                return False
    return False


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
