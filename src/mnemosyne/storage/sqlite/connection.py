"""SQLite connections that many threads and processes can share safely.

Each thread gets its own connection (sqlite3 connections must not be shared across
threads mid-transaction). Writes take the write lock up front (``BEGIN IMMEDIATE``)
so two writers never deadlock upgrading read locks, and a busy database is retried
with jittered backoff until a deadline instead of surfacing "database is locked".
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ...errors import DatabaseBusyError, NotADatabaseError, StorageError

BUSY_TIMEOUT_MS = 5_000
# The deadline for one write to get the lock, on top of SQLite's own busy wait.
WRITE_DEADLINE_S = 60.0


def is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def translate(exc: sqlite3.Error, path: Path, action: str) -> StorageError:
    """Turn a driver error into the matching Mnemosyne error (caller chains it)."""
    text = str(exc).lower()
    if "file is not a database" in text or "malformed" in text:
        return NotADatabaseError(
            f"{path} is not a healthy SQLite database ({exc}); restore it from a backup "
            "with `mnemosyne restore` or move it aside",
            path,
        )
    if is_busy(exc):
        return DatabaseBusyError(
            f"{path} stayed locked by another writer while trying to {action}; retry later",
            path,
        )
    if "readonly" in text or "read-only" in text:
        return StorageError(f"cannot {action}: {path} is read-only ({exc})", path)
    if "disk is full" in text or "database or disk is full" in text:
        return StorageError(f"cannot {action}: the disk holding {path} is full", path)
    if "unable to open" in text:
        return StorageError(f"cannot open {path} ({exc}); check the path and its permissions", path)
    return StorageError(f"cannot {action} on {path}: {exc}", path)


class Database:
    """Per-thread connections to one SQLite file, with safe write transactions."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._closed = False

    def connect(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        if self._closed:
            raise StorageError(f"{self.path} is closed; open a new Mnemosyne instance", self.path)
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open()
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves, so no
            # transaction is ever opened behind our back.
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                check_same_thread=False,
            )
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA foreign_keys = ON")
            # NORMAL is crash-safe in WAL mode (a process crash loses nothing
            # committed); only a power cut can drop the last transactions.
            conn.execute("PRAGMA synchronous = NORMAL")
            return conn
        except sqlite3.Error as exc:
            raise translate(exc, self.path, "open the database") from exc

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A connection for reads (in WAL mode readers never wait for writers)."""
        conn = self.connect()
        try:
            yield conn
        except sqlite3.Error as exc:
            raise translate(exc, self.path, "read") from exc

    @contextmanager
    def write(self, action: str = "write") -> Iterator[sqlite3.Connection]:
        """One write transaction: everything inside commits together or not at all."""
        conn = self.connect()
        self._begin(conn, action)
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise translate(exc, self.path, action) from exc
            raise

    def _begin(self, conn: sqlite3.Connection, action: str) -> None:
        deadline = time.monotonic() + WRITE_DEADLINE_S
        delay = 0.005
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or time.monotonic() >= deadline:
                    raise translate(exc, self.path, action) from exc
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.25)

    def close(self) -> None:
        """Close every thread's connection."""
        self._closed = True
        with self._all_lock:
            conns, self._all = self._all, []
        for conn in conns:
            try:
                conn.close()
            except sqlite3.Error:
                pass
