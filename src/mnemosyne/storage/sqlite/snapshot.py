"""Consistent copies of a live database through SQLite's online backup API, and the
files that hold them while they are written.

A file being written is locked (``flock``) by the process writing it, from its
creation until it is complete or removed: so a file of this kind that no process
holds locked was left by a killed one, and may be removed (:func:`remove_abandoned`,
:func:`claim`).
"""

from __future__ import annotations

import contextlib
import fcntl
import filecmp
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

# Temporary files: hidden beside their destination and named so that only this
# module's files match.
_TEMPORARY = ".{name}.mnemosyne-{token}.tmp"
_TEMPORARY_GLOB = ".*.mnemosyne-*.tmp"
# What a claim holds: no file of a user's, not even an empty one, is taken for one.
CLAIM = b"mnemosyne: a backup is being written here\n"


@contextlib.contextmanager
def claim(dest: Path) -> Iterator[None]:
    """Hold the name ``dest`` for the block: a file holding only :data:`CLAIM`, created
    only if nothing is there (``FileExistsError``), locked while the block writes
    what will replace it.

    A claim a killed process left there (unlocked) is no obstacle: it is taken over.
    Any other file is, even an empty one. The block's ``os.replace`` onto ``dest``
    keeps the name; if the block fails, the claim is removed.
    """
    fd = _create_locked(dest, take_over_claim=True)
    try:
        yield
    finally:
        try:
            if _still_at(fd, dest):  # nothing took the name: give it back
                dest.unlink()
        finally:
            os.close(fd)


@contextlib.contextmanager
def temporary_copy(conn: sqlite3.Connection, dest: Path) -> Iterator[Path]:
    """A complete copy of the database behind ``conn``, in a temporary file beside
    ``dest``, for the block to check and then rename to ``dest``; removed when the
    block ends if it is still there.

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
def temporary_file(dest: Path, mode: int = 0o644) -> Iterator[Path]:
    """A new empty file beside ``dest`` (with permissions ``mode``), locked while the
    block writes it, removed when it ends with the ``-journal``/``-wal``/``-shm``
    files SQLite gives it (once renamed, it lives on under the new name). Temporary
    files that killed processes left there are removed first."""
    remove_abandoned(dest.parent)
    while True:
        tmp = dest.with_name(_TEMPORARY.format(name=dest.name, token=f"{os.getpid()}-{secrets.token_hex(4)}"))
        with contextlib.suppress(FileExistsError):
            fd = _create_locked(tmp, mode)
            break
    try:
        yield tmp
    finally:
        try:
            _remove(tmp)
        finally:  # even when Ctrl-C cuts the removal short: the next one removes it
            os.close(fd)


def remove_abandoned(folder: Path, pattern: str = _TEMPORARY_GLOB) -> None:
    """Delete the temporary files in ``folder`` that killed processes left: those no
    process holds locked. ``pattern`` names them (by default, this module's)."""
    for stale in folder.glob(pattern):
        _remove_if_unlocked(stale, lambda fd: True)


def remove_abandoned_claims(folder: Path, pattern: str, companion_suffix: str) -> None:
    """Delete the claims matching ``pattern`` in ``folder`` that killed processes left
    (no process holds them locked), each with its companion (the file named after
    it plus ``companion_suffix``, written for it)."""
    for stale in folder.glob(pattern):
        if _remove_if_unlocked(stale, _is_claim):
            stale.with_name(stale.name + companion_suffix).unlink(missing_ok=True)


def remove_copies_of(kept: Path, pattern: str, companion_suffix: str) -> None:
    """Delete the files matching ``pattern`` beside ``kept`` that hold exactly its
    bytes and that no process holds locked, each with its companion (the file named
    after it plus ``companion_suffix``); one without a companion stays."""
    for other in kept.parent.glob(pattern):
        companion = other.with_name(other.name + companion_suffix)
        if other == kept or not companion.exists():
            continue

        def same_bytes(fd: int, other: Path = other) -> bool:
            return filecmp.cmp(other, kept, shallow=False)

        if _remove_if_unlocked(other, same_bytes):
            companion.unlink(missing_ok=True)


@contextlib.contextmanager
def in_use(path: Path) -> Iterator[None]:
    """Hold ``path`` locked (shared) for the block, so no sweep of abandoned files
    removes it meanwhile."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def _create_locked(path: Path, mode: int = 0o644, take_over_claim: bool = False) -> int:
    """A new file at ``path`` (with permissions ``mode``), open and locked; with
    ``take_over_claim``, holding :data:`CLAIM`, and a claim there that nobody holds
    locked is taken over rather than refused."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        if not take_over_claim:
            raise
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FileExistsError(path) from None  # a claim being written
        if not _is_claim(fd) or not _still_at(fd, path):
            os.close(fd)
            raise FileExistsError(path) from None
        return fd
    fcntl.flock(fd, fcntl.LOCK_EX)
    if not _still_at(fd, path):  # removed as abandoned before it was locked: try again
        os.close(fd)
        raise FileExistsError(path)
    if take_over_claim:
        try:
            os.write(fd, CLAIM)
        except OSError:  # a full disk: the empty file made here would refuse every retry
            path.unlink()
            os.close(fd)
            raise
    return fd


def _is_claim(fd: int) -> bool:
    return os.fstat(fd).st_size == len(CLAIM) and os.pread(fd, len(CLAIM) + 1, 0) == CLAIM


def _still_at(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def _remove_if_unlocked(path: Path, abandoned: Callable[[int], bool]) -> bool:
    """Remove ``path`` if no process holds it locked and ``abandoned`` (given it
    open) agrees; return whether it was removed."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:  # gone already, or not ours to open
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if _still_at(fd, path) and abandoned(fd):
            _remove(path)
            return True
    except OSError:  # being written, or not ours to remove
        pass
    finally:
        os.close(fd)
    return False


def _remove(path: Path) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


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
