"""Consistent copies of a live database through SQLite's online backup API."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path


def snapshot(conn: sqlite3.Connection, dest: Path) -> None:
    """Copy the database behind ``conn`` to ``dest`` atomically.

    The copy is taken in one step, inside one read transaction: in WAL mode that is
    a consistent snapshot that never blocks writers. It is written to a temporary
    file, made self-contained (rollback journal, no ``-wal``), flushed to disk and
    only then renamed over ``dest``, so ``dest`` is always either absent, the old
    file, or a complete copy.
    """
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        target = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.backup(target, pages=-1)
            target.execute("PRAGMA journal_mode = DELETE")
        finally:
            target.close()
        fsync_file(tmp)
        os.replace(tmp, dest)
        fsync_dir(dest.parent)
    finally:
        tmp.unlink(missing_ok=True)


def fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def fsync_dir(path: Path) -> None:
    """Make a rename durable (directories can't be fsynced on every platform)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
