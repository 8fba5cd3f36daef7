"""What a driver error means: every ``sqlite3`` (or OS) error a database call meets
becomes the matching :class:`StorageError`, with a message that names the fix."""

from __future__ import annotations

import errno
import os
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


def translate(exc: BaseException, path: Path, action: str, waited: float | None = None) -> StorageError:
    """Turn a driver (or OS) error into the matching Mnemosyne error (caller chains it).
    ``waited``: the busy timeout a busy database was waited on for."""
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
    if code == _FULL or "disk is full" in text or "database or disk is full" in text:
        return DiskFullError(
            f"cannot {action}: the disk holding {path} is full (or a size limit was reached); "
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
            "check the disk (full, removed or failing?) and retry; nothing was written",
            path,
        )
    return StorageError(f"cannot {action} on {path}: {exc}", path)


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
