"""Consistent copies of a live database through SQLite's online backup API."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

# A copy being written: hidden beside its destination, named so that only this
# module's files match, and locked (flock) by the process writing it.
_TEMPORARY = ".{name}.mnemosyne-{pid}.tmp"
_TEMPORARY_GLOB = ".*.mnemosyne-*.tmp"


@contextlib.contextmanager
def temporary_copy(conn: sqlite3.Connection, dest: Path) -> Iterator[Path]:
    """A complete copy of the database behind ``conn``, in a temporary file beside
    ``dest``, for the block to check and then :func:`publish` as ``dest``; removed
    when the block ends.

    The copy is taken in one step, inside one read transaction: in WAL mode that is
    a consistent snapshot that never blocks writers. It is made self-contained
    (rollback journal, no ``-wal``) and flushed to disk.
    """
    with temporary_file(dest) as tmp:
        target = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.backup(target, pages=-1)
            target.execute("PRAGMA journal_mode = DELETE")
        finally:
            target.close()
        fsync_file(tmp)
        yield tmp


@contextlib.contextmanager
def temporary_file(dest: Path) -> Iterator[Path]:
    """An empty file beside ``dest``, locked while the block writes it, removed when
    it ends (renamed or linked, it lives on under the new name). Temporary files
    that killed processes left are removed first (see :func:`remove_abandoned`)."""
    remove_abandoned(dest.parent)
    tmp = dest.with_name(_TEMPORARY.format(name=dest.name, pid=os.getpid()))
    _remove(tmp)
    lock = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield tmp
    finally:
        try:
            _remove(tmp)
        finally:  # even when Ctrl-C cuts the removal short: the next one removes it
            os.close(lock)


def publish(copy: Path, dest: Path) -> None:
    """Give ``copy`` the name ``dest`` too, atomically; ``dest`` must not exist
    (``FileExistsError``): a backup racing another for one path fails rather than
    replacing it, and a killed one leaves no file at ``dest``."""
    os.link(copy, dest)
    fsync_dir(dest.parent)


def remove_abandoned(folder: Path) -> None:
    """Delete the temporary copies in ``folder`` that killed processes left: those
    no process holds locked."""
    for stale in folder.glob(_TEMPORARY_GLOB):
        try:
            lock = os.open(stale, os.O_RDWR)
        except OSError:  # gone already, or not ours to open
            continue
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _remove(stale)
        except OSError:  # a copy being written
            pass
        finally:
            os.close(lock)


def _remove(copy: Path) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        copy.with_name(copy.name + suffix).unlink(missing_ok=True)


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
