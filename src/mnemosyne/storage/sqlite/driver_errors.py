"""What a driver error means: every ``sqlite3`` (or OS) error a database call meets
becomes the matching :class:`StorageError`, with a message that names the fix."""

from __future__ import annotations

import errno
import os
import resource
import sqlite3
from pathlib import Path

from ...errors import (
    CorruptDatabaseError,
    DatabaseBusyError,
    DiskFullError,
    NotADatabaseError,
    ReadOnlyDatabaseError,
    StorageError,
)

# sqlite3 primary result codes (exc.sqlite_errorcode & 0xff, Python >= 3.11).
_BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 5, 6, 8, 10, 11, 13, 14, 26
# The I/O errors a write meets (writing, flushing or growing a file or its -shm),
# by their extended names; a read's (SQLITE_IOERR_READ, ...) is never a full disk.
_WRITE_IOERRS = frozenset({
    "SQLITE_IOERR", "SQLITE_IOERR_WRITE", "SQLITE_IOERR_FSYNC", "SQLITE_IOERR_DIR_FSYNC",
    "SQLITE_IOERR_TRUNCATE", "SQLITE_IOERR_SHMOPEN", "SQLITE_IOERR_SHMSIZE", "SQLITE_IOERR_SHMMAP",
    "SQLITE_IOERR_MMAP",
})
# Free space under which a disk counts as full: SQLite writes a page, or a 32 KiB
# block of its -shm, at a time, so a write refused for want of room leaves less.
_NEARLY_FULL = 1 << 20
# How close to a file-size limit a file has reached it: the largest write SQLite
# makes (a 64 KiB page with its WAL frame header) would cross it.
_LARGEST_WRITE = 65536 + 24


def _code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def is_busy(exc: sqlite3.Error) -> bool:
    """True when the error means "another connection holds a lock; try again"."""
    code = _code(exc)
    if code is not None:
        return code in (_BUSY, _LOCKED)
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def translate(
    exc: BaseException, path: Path, action: str, waited: float | None = None, *, needed: int = 0
) -> StorageError:
    """Turn a driver (or OS) error into the matching Mnemosyne error (caller chains it).
    ``waited``: the busy timeout a busy database was waited on for. ``needed``: the
    bytes the failed write needed in all, where known (a copy of the database), to
    tell a disk too full for it from a failing one (see :func:`_out_of_room`)."""
    text = str(exc).lower()
    code = _code(exc) if isinstance(exc, sqlite3.Error) else None
    if isinstance(exc, OSError):
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            code = _FULL
        elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            code = _READONLY
    if code == _NOTADB or "file is not a database" in text:
        return NotADatabaseError(
            f"{path} is not a SQLite database ({exc}); point db_path at a new file or at a "
            "Mnemosyne database, or restore it from a backup with `mnemosyne restore`",
            path,
        )
    if code == _CORRUPT or "malformed" in text or "corrupt" in text:
        return CorruptDatabaseError(
            f"{path} is damaged or truncated ({exc}); run `mnemosyne doctor` to see what is "
            "wrong, then restore it from a backup with `mnemosyne restore`",
            path,
        )
    if (isinstance(exc, sqlite3.Error) and is_busy(exc)) or code in (_BUSY, _LOCKED):
        how_long = "" if waited is None else f" for {waited:g} s (busy_timeout)"
        return DatabaseBusyError(
            f"{path} stayed locked by another connection{how_long} while trying to {action}; many "
            "writers at once may need a longer busy_timeout, or another process may be holding a "
            "long or exclusive lock on it (e.g. a `BEGIN EXCLUSIVE` or `PRAGMA locking_mode=EXCLUSIVE` "
            "session): close it, or retry later",
            path,
        )
    if code == _READONLY or "readonly" in text or "read-only" in text:
        # Name what is read-only: a read of a read-only file leaves read-only -wal and
        # -shm files behind, and once the file is writable again they still refuse.
        parts = _read_only_parts(path) or [path]
        named = f"{' and '.join(str(part) for part in parts)} {'is' if len(parts) == 1 else 'are'}"
        return ReadOnlyDatabaseError(
            f"cannot {action}: {named} read-only ({exc}); Mnemosyne needs write access to "
            f"the file, its folder, and {path.name}-wal and {path.name}-shm beside it",
            path,
        )
    if (
        code == _FULL or "disk is full" in text or "database or disk is full" in text
        or (_is_write_ioerr(exc, code, text) and _out_of_room(path, needed))
    ):
        wanted = f" for the {needed:,} bytes it needs" if needed else ""
        return DiskFullError(
            f"cannot {action}: the disk holding {path} is full (or a size limit was reached){wanted}; "
            "nothing was written: free some space and retry",
            path,
        )
    if (code == _CANTOPEN or "unable to open" in text) and path.parent.is_dir() and (
        not path.exists() or not path.with_name(path.name + "-shm").exists()
    ):
        # The folder exists but SQLite could not create the file or its -wal/-shm.
        return ReadOnlyDatabaseError(
            f"cannot {action}: SQLite could not create {path.name} or its {path.name}-wal and "
            f"{path.name}-shm files in {path.parent} ({exc}); make the folder writable or "
            "choose another db_path",
            path,
        )
    if code == _CANTOPEN or "unable to open" in text:
        return StorageError(
            f"cannot open {path} ({exc}); check that its folder exists and that the file and "
            f"folder are writable (SQLite creates {path.name}-wal and {path.name}-shm beside it)",
            path,
        )
    if code == _IOERR or "disk i/o error" in text:
        return StorageError(
            f"cannot {action}: the operating system reported an I/O error on {path} ({exc}); "
            "check the disk (removed, failing, over a quota?) and retry; nothing was written",
            path,
        )
    return StorageError(f"cannot {action} on {path}: {exc}", path)


def _out_of_room(path: Path, needed: int = 0) -> bool:
    """Whether a write to ``path`` (a database, with its -wal, -shm and -journal, or a
    file being written beside it) that failed with an I/O error ran out of room.

    SQLite reports a file-size limit (``ulimit -f``: the system's EFBIG) and a -shm
    that a full disk cannot grow as a plain I/O error, as it does a failing disk. So
    the machine is asked: is a file-size limit set that one of those files has
    reached, or that ``needed`` bytes would cross? Has the disk less than ``needed``
    bytes free, or next to nothing?
    """
    try:
        real = path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop, before Python 3.13
        real = path
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY:
        if needed >= limit:
            return True
        for part in (real.with_name(real.name + suffix) for suffix in ("", "-wal", "-shm", "-journal")):
            try:
                if part.stat().st_size + _LARGEST_WRITE > limit:
                    return True
            except OSError:
                continue
    try:
        disk = os.statvfs(real.parent)
    except OSError:
        return False
    # Root may write into the blocks a filesystem keeps in reserve; others may not.
    free = (disk.f_bfree if os.geteuid() == 0 else disk.f_bavail) * disk.f_frsize
    return free < max(needed, _NEARLY_FULL)


def _is_write_ioerr(exc: BaseException, code: int | None, text: str) -> bool:
    """Whether ``exc`` is an I/O error SQLite met writing (any, if it does not say)."""
    if code != _IOERR and "disk i/o error" not in text:
        return False
    name = getattr(exc, "sqlite_errorname", None)
    return name is None or name in _WRITE_IOERRS


def _read_only_parts(path: Path) -> list[Path]:
    """Which of the database file, its -wal and -shm files and its folder exist and
    may not be written (by their permission bits, which bind even root's SQLite once
    it runs without the privilege to override them)."""
    parts = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"), path.parent]
    found = []
    for part in parts:
        try:
            mode = part.stat().st_mode
        except OSError:
            continue
        if not mode & 0o222 or not os.access(part, os.W_OK):
            found.append(part)
    return found
