"""SQLite connections that many threads and processes can share safely.

Each thread gets its own connection (sqlite3 connections must not be shared across
threads mid-transaction), closed by the next operation once its thread has ended.
Writes take the write lock up front (``BEGIN IMMEDIATE``) so two writers never
deadlock upgrading read locks; reads run in a short read transaction, so a
multi-query read sees one consistent snapshot. Contention on BEGIN, on the first
read and on COMMIT is retried with jittered backoff until the call's deadline
(``busy_timeout``); only then does it surface, as :class:`DatabaseBusyError`. No
``sqlite3`` exception ever reaches a caller: every driver error is translated into
the matching :class:`StorageError` with the original chained as ``__cause__``.

A process may fork while its threads use the database (see :mod:`mnemosyne._fork`):
every operation here is database work a fork waits for, and the child never uses
the parent's connections. It closes them, so that SQLite forgets what it recorded
of the parent's locks on each file and the child's own connections take real ones.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from ... import _fork
from ...errors import ReadOnlyDatabaseError, SchemaVersionError, StorageError
from .driver_errors import is_busy, translate
from .file_names import refuse_leftover_wal, refuse_other_names
from .migrations import LATEST_VERSION, refuse_foreign
from .wal_size import KEPT_BYTES, WalKeeper

T = TypeVar("T")


class InterruptedAfterCommit(KeyboardInterrupt):
    """A Ctrl-C that Python raised as a COMMIT returned, once the transaction was
    committed. The program stops as it would, but a caller that reports what it
    stored (an import) can tell that the write is kept."""


# How long one call may wait, in total, for other connections' locks.
DEFAULT_BUSY_TIMEOUT_S = 60.0
# SQLite's own busy handler sleeps in steps that grow to 100 ms, leaving the lock
# idle while every waiter sleeps; our loop retries sooner, with jitter so waiters
# do not retry in lock-step (measured: p95 remember latency under the 8-writer load
# 131 ms -> 94 ms). 0 means SQLite reports busy at once and the loop decides.
_SQLITE_WAIT_CAP_S = 0.0
_BACKOFF_START_S = 0.001
_BACKOFF_CAP_S = 0.02

class _ThreadMark:
    """Kept in one thread's local storage only: it is gone once that thread has ended."""


class Database:
    """Per-thread connections to one SQLite file, with safe read and write transactions.

    ``busy_timeout`` (seconds) bounds how long one call waits for other connections'
    locks before :class:`DatabaseBusyError`.
    """

    def __init__(self, path: Path, busy_timeout: float = DEFAULT_BUSY_TIMEOUT_S) -> None:
        self.path = path
        try:
            # The same file whatever the working directory later. Not abspath: "link/.."
            # is for the system to read, through the link.
            self._absolute = path if path.is_absolute() else Path.cwd() / path
        except OSError as exc:
            raise StorageError(f"cannot open {path}: the working directory it is relative to is gone", path) from exc
        self.busy_timeout = float(busy_timeout)
        self._local = threading.local()
        # Every open connection, with a weak reference to its thread's _ThreadMark.
        self._all: dict[sqlite3.Connection, weakref.ref[_ThreadMark]] = {}
        self._all_lock = threading.Lock()
        # Connections whose thread has ended, for the next operation to close: a
        # server runs calls on worker threads that come and go, and each would
        # otherwise leave a connection (two open files) behind until close().
        self._ended: deque[sqlite3.Connection] = deque()
        # The operations each connection is inside, one mark each (see _fork; a
        # connection with none, or an empty set, is idle): close() must not pull one
        # out from under a thread that is using it (that crashed the interpreter).
        # Marks, not a count, so that an exception landing anywhere, even in the
        # code that keeps them, cannot leave one counted for ever.
        self._in_use: dict[sqlite3.Connection, set[_fork.Mark[_fork.Token]]] = {}
        self._closed = False
        # The file the first connection opened (device, inode). Later connections
        # never create one, and a write checks it is still the file at the path: one
        # deleted or replaced under a running process would take writes into the void.
        self._file: tuple[int, int] | None = None
        self._wal = WalKeeper(self._absolute)
        _databases.add(self)

    def connect(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        if self._closed:
            raise StorageError(f"{self.path} is closed; open a new Mnemosyne instance", self.path)
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open()
            # The mark lives only in this thread's local storage, which dies with the
            # thread: its weak reference then hands the connection over to be closed.
            # Not closed right there: it must be closed inside database work (_using),
            # which a fork waits for. Listed before the thread holds it: interrupted in
            # between, the mark dies at once and the connection is closed as an ended
            # thread's.
            mark, ended = _ThreadMark(), self._ended
            with self._all_lock:
                self._all[conn] = weakref.ref(mark, lambda _: ended.append(conn))
            self._local.conn, self._local.mark, self._local.wait_ms = conn, mark, -1
        return conn

    def _open(self) -> sqlite3.Connection:
        if _files_forked_mid_transaction and file_identity(self._absolute) in _files_forked_mid_transaction:
            raise self._forked_mid_transaction()
        first = self._file is None
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves, so no
            # transaction is ever opened behind our back.
            conn = sqlite3.connect(
                self._absolute if first else f"{self._absolute.as_uri()}?mode=rw",
                uri=not first, timeout=min(self.busy_timeout, _SQLITE_WAIT_CAP_S),
                isolation_level=None, check_same_thread=False,
            )
        except sqlite3.Error as exc:
            if not first and file_identity(self._absolute) is None:
                raise self._gone() from exc
            raise translate(exc, self.path, "open the database", self.busy_timeout) from exc
        conn.row_factory = sqlite3.Row
        end = time.monotonic() + self.busy_timeout
        delay = _BACKOFF_START_S
        while True:
            try:
                # The first statement loads the schema, which needs a read lock:
                # busy here (another process holds an exclusive lock) is retried too.
                conn.execute("PRAGMA foreign_keys = ON")
                # NORMAL is crash-safe in WAL mode (a process crash loses nothing
                # committed); only a power cut can drop the last transactions.
                conn.execute("PRAGMA synchronous = NORMAL")
                # Freed space is overwritten with zeros, whatever this SQLite build's
                # default: a forgotten memory's text must not linger in free pages.
                conn.execute("PRAGMA secure_delete = ON")
                # A log that starts over is cut back to this size (see wal_size).
                conn.execute(f"PRAGMA journal_size_limit = {KEPT_BYTES}")
                if first:
                    self._file = file_identity(self._absolute)
                elif file_identity(self._absolute) != self._file:  # reads must not mix two files
                    conn.close()
                    raise self._gone()
                return conn
            except sqlite3.Error as exc:
                if not is_busy(exc) or time.monotonic() >= end:
                    conn.close()
                    raise translate(exc, self.path, "open the database", self.busy_timeout) from exc
            delay = _sleep(delay, end)

    def prepare(self) -> None:
        """Check the file is ours (or empty) and switch it to WAL mode (retried if busy).

        Another application's database raises :class:`NotADatabaseError`, and a newer
        release's :class:`SchemaVersionError`, before anything in it is changed.
        """

        def setup(conn: sqlite3.Connection) -> None:
            # The first real read tells a foreign or damaged file from a database.
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            # By its tables, before its user_version is trusted: another application's
            # may set one too, and would be switched to WAL mode as ours below.
            refuse_foreign(conn, self.path)
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > LATEST_VERSION:  # a newer release's file: not even its journal mode is changed
                raise SchemaVersionError(self.path, version, LATEST_VERSION)
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                # Needs a moment of exclusive access; busy is retried like any lock.
                conn.execute("PRAGMA journal_mode = WAL").fetchone()

        self.run("open the database", setup)

    @contextmanager
    def _using(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection, marked in use until the block ends; closed then if
        the database was closed meanwhile."""
        # This use is marked with one token (see _fork); the finally takes back the
        # marks made, and any it could not, an exception having landed first, go with
        # the token when this frame does.
        work, use = _fork.here(), _fork.Token()
        working, conn, held = _fork.mark(use, work.tokens), None, None
        try:
            _fork.enter(work, working)
            if self._ended:
                self._close_ended()
            conn = self.connect()
            with self._all_lock:
                if self._closed:
                    raise StorageError(f"{self.path} is closed; open a new Mnemosyne instance", self.path)
                users = self._in_use.setdefault(conn, set())
                held = _fork.mark(use, users)
                users.add(held)
            yield conn
        finally:
            try:
                if conn is not None and held is not None:
                    self._done_with(conn, held)
            finally:
                _fork.leave(work, working)

    def _done_with(self, conn: sqlite3.Connection, held: _fork.Mark[_fork.Token]) -> None:
        if conn in _left_by_parent:  # in a forked child, by the thread that forked
            return
        with self._all_lock:
            users = self._in_use.get(conn)
            if users is not None:
                users.discard(held)
                if not users:
                    del self._in_use[conn]
            idle = not users
            last_user = idle and self._closed and conn in self._all
            # A read its thread left open (a dump generator read on elsewhere) ends here.
            thread_ended = idle and conn in self._all and self._all[conn]() is None
            if last_user or thread_ended:
                del self._all[conn]
        if last_user:
            self._local.conn = None
        if last_user or thread_ended:
            conn.close()

    def _close_ended(self) -> None:
        """Close the connections of threads that have ended (one still in use is
        closed when that use ends)."""
        while True:
            try:
                conn = self._ended.popleft()
            except IndexError:  # none left (another thread may have taken the last)
                return
            with self._all_lock:
                if self._in_use.get(conn) or self._all.pop(conn, None) is None:  # in use, or closed meanwhile
                    continue
            try:
                conn.close()
            except sqlite3.Error:
                pass

    def run(self, action: str, fn: Callable[[sqlite3.Connection], T], deadline: float | None = None) -> T:
        """Call ``fn(conn)`` outside any transaction, retrying while the database is busy."""
        with self._using() as conn:
            end = time.monotonic() + (self.busy_timeout if deadline is None else deadline)
            delay = _BACKOFF_START_S
            while True:
                try:
                    self._set_wait(conn, end)
                    return fn(conn)
                except sqlite3.Error as exc:
                    self._rollback(conn)
                    if not is_busy(exc) or time.monotonic() >= end:
                        raise translate(exc, self.path, action, self.busy_timeout) from exc
                delay = _sleep(delay, end)

    @contextmanager
    def read(self, action: str = "read") -> Iterator[sqlite3.Connection]:
        """A read transaction: one consistent snapshot; in WAL mode it never blocks writers."""
        with self._using() as conn:
            if conn.in_transaction:  # nested in another read or write: share its snapshot
                try:
                    yield conn
                except sqlite3.Error as exc:
                    raise translate(exc, self.path, action, self.busy_timeout) from exc
                return

            def begin(c: sqlite3.Connection) -> None:
                c.execute("BEGIN")
                # Touching the schema takes the read lock (and the WAL snapshot) now,
                # inside the retry loop, rather than at the caller's first query.
                c.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()

            self.run(action, begin)
            with self._committed(conn, action):
                yield conn

    @contextmanager
    def write(self, action: str = "write", deadline: float | None = None) -> Iterator[sqlite3.Connection]:
        """One write transaction: everything inside commits together or not at all.

        ``deadline`` (seconds) overrides ``busy_timeout`` for this one transaction.
        """
        with self._using() as conn:
            end = time.monotonic() + (self.busy_timeout if deadline is None else deadline)
            self._begin(conn, action, end)
            with self._committed(conn, action, end):
                yield conn
            self._keep_wal_small(conn)

    @contextmanager
    def _committed(self, conn: sqlite3.Connection, action: str, end: float | None = None) -> Iterator[None]:
        """Commit the open transaction after the block (by ``end``, or within
        ``busy_timeout`` of the block's end); roll it back if the block raises."""
        try:
            yield
        except BaseException as exc:
            self._rollback(conn)
            if isinstance(exc, sqlite3.Error):
                raise self._failed(conn, exc, action) from exc
            raise
        else:
            self._finish(conn, action, time.monotonic() + self.busy_timeout if end is None else end)

    def _begin(self, conn: sqlite3.Connection, action: str, end: float) -> None:
        if conn.in_transaction:  # SQLite would refuse, and retrying would end the read
            raise StorageError(
                f"cannot {action} inside this thread's open read of {self.path} (an export or "
                "timeline still being iterated): write after it, or from another thread",
                self.path,
            )
        delay = _BACKOFF_START_S
        while True:
            try:
                self._set_wait(conn, end)
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                self._rollback(conn)
                if not is_busy(exc) or time.monotonic() >= end:
                    raise self._failed(conn, exc, action) from exc
                delay = _sleep(delay, end)
                continue
            if file_identity(self._absolute) != self._file:
                self._rollback(conn)
                raise self._gone()
            return

    def _finish(self, conn: sqlite3.Connection, action: str, end: float) -> None:
        """COMMIT, retrying if busy (possible outside WAL mode, e.g. on a network disk)."""
        if conn in _left_by_parent:  # the parent's transaction, which commits there
            raise self._forked_mid_transaction()
        delay = _BACKOFF_START_S
        while True:
            try:
                conn.execute("COMMIT")
                return
            except sqlite3.Error as exc:
                # A busy COMMIT leaves the transaction open and retryable; anything
                # else (disk full, I/O error) means it is lost: roll back, report.
                if not (is_busy(exc) and conn.in_transaction) or time.monotonic() >= end:
                    self._rollback(conn)
                    raise translate(exc, self.path, action, self.busy_timeout) from exc
            except KeyboardInterrupt as exc:
                # Python raises a Ctrl-C that came during the COMMIT as the call
                # returns, whether or not it committed: only the connection can tell.
                if conn.in_transaction:
                    self._rollback(conn)
                    raise
                raise InterruptedAfterCommit(f"interrupted as the {action} committed; it is kept") from exc
            delay = _sleep(delay, end)

    def _keep_wal_small(self, conn: sqlite3.Connection) -> None:
        """After a commit: restart the log if it has grown too big (see wal_size)."""
        try:
            waits_changed = self._wal.after_commit(conn)
        except KeyboardInterrupt as exc:
            self._local.wait_ms = -1
            raise InterruptedAfterCommit("interrupted after the write committed; it is kept") from exc
        if waits_changed:
            self._local.wait_ms = -1  # _set_wait sets it again

    def _failed(self, conn: sqlite3.Connection, exc: sqlite3.Error, action: str) -> StorageError:
        """The error to raise for ``exc``. A connection that met a read-only file is
        dropped: SQLite opened it read-only, and would stay so after the file is made
        writable again; the next call opens a fresh one."""
        error = translate(exc, self.path, action, self.busy_timeout)
        if isinstance(error, ReadOnlyDatabaseError):
            self._discard(conn)
        return error

    def _gone(self) -> StorageError:
        return StorageError(
            f"the database file {self.path} was deleted or replaced while this process had it open; "
            "open the database again (a new Mnemosyne instance)",
            self.path,
        )

    def _forked_mid_transaction(self) -> StorageError:
        return StorageError(
            f"this process was forked while its parent was inside a transaction on {self.path}, and "
            "cannot use that file: SQLite's record of the parent's locks on it came along and cannot "
            "be undone here. Fork outside database work (not inside an export or a snapshot, say), or "
            "start the process another way (multiprocessing's 'spawn' or 'forkserver')",
            self.path,
        )

    def _rollback(self, conn: sqlite3.Connection) -> None:
        try:
            # A transaction whose block an exception left suspended is rolled back
            # when it is collected, maybe after close() closed its connection.
            if not conn.in_transaction or conn in _left_by_parent:
                return
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            # The connection is in an unknown state: drop it; the next call on this
            # thread opens a fresh one. The original error is what gets reported.
            self._discard(conn)

    def _discard(self, conn: sqlite3.Connection) -> None:
        if conn in _left_by_parent:
            return
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        with self._all_lock:
            self._all.pop(conn, None)
        try:
            conn.close()
        except sqlite3.Error:
            pass

    def _set_wait(self, conn: sqlite3.Connection, end: float) -> None:
        """Let SQLite's busy handler wait at most the cap, and never past the deadline."""
        wait_ms = int(max(0.0, min(end - time.monotonic(), _SQLITE_WAIT_CAP_S)) * 1000)
        if getattr(self._local, "wait_ms", None) != wait_ms:
            conn.execute(f"PRAGMA busy_timeout = {wait_ms}")
            self._local.wait_ms = wait_ms

    @property
    def closed(self) -> bool:
        return self._closed

    def reading_here(self) -> bool:
        """Whether this thread is inside a transaction (a write cannot start here)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        return conn is not None and conn.in_transaction

    def close(self) -> None:
        """Close every thread's connection: idle ones now, one in use when its thread's
        operation ends (later operations raise :class:`StorageError`)."""
        work, token = _fork.here(), _fork.Token()
        working = _fork.mark(token, work.tokens)
        try:
            _fork.enter(work, working)
            with self._all_lock:
                self._closed = True
                idle = [conn for conn in self._all if not self._in_use.get(conn)]
                self._all = {conn: mark for conn, mark in self._all.items() if self._in_use.get(conn)}
                self._ended.clear()
            for conn in idle:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
        finally:
            _fork.leave(work, working)

    def _forget_parent(self, parent_inside_a_transaction: bool) -> None:
        """In a forked child: stop using the parent's connections.

        Idle ones are closed: SQLite then forgets the locks it recorded for them,
        which this process does not hold. Those of a file the parent was inside a
        transaction on are kept, never touched again: closing one would roll the
        parent's transaction back in memory the two processes share.
        """
        for conn in self._all:
            if parent_inside_a_transaction:
                _left_by_parent.add(conn)
            else:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
        self._all, self._in_use, self._ended = {}, {}, deque()
        self._local = threading.local()
        self._all_lock = threading.Lock()
        self._wal = WalKeeper(self._absolute)


# What a forked child needs (see _forget_parent_connections): every Database of the
# process, the files its parent was inside a transaction on, and the parent's
# connections to them, kept here so that they are never closed.
_databases: weakref.WeakSet[Database] = weakref.WeakSet()
_files_forked_mid_transaction: set[tuple[int, int]] = set()
_left_by_parent: set[sqlite3.Connection] = set()


def _forget_parent_connections() -> None:
    databases = list(_databases)
    busy = {db._file for db in databases if any(db._in_use.values()) and db._file is not None}
    _files_forked_mid_transaction.update(busy)
    for db in databases:
        db._forget_parent(parent_inside_a_transaction=db._file in busy)


os.register_at_fork(after_in_child=_forget_parent_connections)


def file_identity(path: Path) -> tuple[int, int] | None:
    """Which file is at ``path`` (device and inode), or None if none is."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def open_immutable(path: Path) -> sqlite3.Connection:
    """A connection that reads ``path`` as a file no one changes: no lock, no journal,
    nothing created beside it. For a look at a file that may not be ours, or not a
    database at all: SQLite reads it, since a plain ``open()`` and close would drop
    every lock this process holds on that file."""
    return sqlite3.connect(path.resolve().as_uri() + "?immutable=1", uri=True)


def open_read_only(
    path: Path, timeout: float = DEFAULT_BUSY_TIMEOUT_S, *, backup: bool = False
) -> sqlite3.Connection:
    """A plain connection that can never create or write ``path``.

    A ``file:`` URI, so that SQLite opens it read-only; quoted (``as_uri``), so that
    a ``?``, ``#`` or ``%`` in a folder or file name cannot point it at another file.

    Reading a WAL database needs its ``-shm`` file, which SQLite creates beside it.
    Where it cannot (a folder this process may not write), the read is refused with
    :class:`ReadOnlyDatabaseError` saying so, rather than reading the file as if no
    one could be writing it: someone else may be, and the read would be stale.

    A database file with other names (hard links), and a ``-wal`` left over where the
    file is missing or empty (which even a read-only open deletes), are refused with
    :class:`StorageError` before anything is opened (see :mod:`.file_names`). A
    ``backup`` may have other names: nothing writes it and it keeps no log, so
    backups rotated as hard links (as rsnapshot does) are read as they are.
    """
    if not backup:
        refuse_other_names(path)
        refuse_leftover_wal(path)
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=timeout)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        if not os.access(path.resolve().parent, os.W_OK):
            conn.close()
            raise ReadOnlyDatabaseError(
                f"cannot read {path}: SQLite must create {path.name}-shm beside it to read a "
                f"database in WAL mode, and {path.resolve().parent} is not writable here; run as "
                "a user who may write that folder, or copy the database files elsewhere "
                "(nothing was read or changed)",
                path,
            ) from exc
    except sqlite3.DatabaseError:
        pass  # not a database, or damaged: the reader reports it
    return conn


def _sleep(delay: float, end: float) -> float:
    """Sleep a jittered ``delay`` (never past ``end``); return the next, doubled delay."""
    remaining = end - time.monotonic()
    if remaining > 0:
        time.sleep(min(remaining, delay * (0.5 + random.random())))
    return min(delay * 2, _BACKOFF_CAP_S)
