"""A database file must be opened by the one name its write-ahead log is kept under.

SQLite keeps a database's log and the index of it in ``<name>-wal`` and
``<name>-shm``, beside the name the file was opened by (a symbolic link is followed
to the file first). Two states of the disk break that, and lose writes that every
call reported committed; both are refused before SQLite opens anything, so nothing
is created or changed:

- one file under two names (hard links): processes opening it by each name keep a
  log of their own, and their checkpoints overwrite each other's pages;
- a ``-wal`` left over where the database file is missing or empty (moved or
  deleted without it): SQLite would start a new database there and delete that log,
  with the last writes it holds.

    refuse_other_names(Path("memories.db"))
    refuse_leftover_wal(Path("memories.db"))
"""

from __future__ import annotations

import os
from pathlib import Path

from ...errors import StorageError


def refuse_other_names(path: Path) -> None:
    """Raise :class:`StorageError` if the file at ``path`` has other names (hard links)."""
    try:
        names = os.stat(path).st_nlink
    except OSError:
        return  # no file there yet (or none this process may see): SQLite reports what it finds
    if names > 1:
        raise StorageError(
            f"{path} is one file with {names} names (hard links); SQLite keeps a database's log "
            f"beside the name it is opened by ({path.name}-wal), so processes using different "
            "names would each keep their own, lose each other's writes and damage the file. Use "
            f"one name for it: remove the others (`find / -samefile {path}` lists them) or open "
            "a copy; a symbolic link is fine, as SQLite follows it to the file (nothing was "
            "opened or changed)",
            path,
        )


def refuse_leftover_wal(path: Path) -> None:
    """Raise :class:`StorageError` if a ``-wal`` holding writes is left over where the
    database file at ``path`` is missing or empty."""
    try:
        real = path.resolve()  # SQLite keeps the -wal beside the file a symbolic link leads to
        wal = real.with_name(real.name + "-wal")
        if wal.stat().st_size == 0:
            return  # a log that holds nothing loses nothing
    except OSError:
        return  # no -wal (or a working directory that is gone): nothing to lose here
    try:
        if real.stat().st_size > 0:
            return
        state = "empty"
    except FileNotFoundError:
        state = "missing"
    except OSError:
        return  # a file this process cannot see: SQLite reports it
    shm = real.with_name(real.name + "-shm")
    raise StorageError(
        f"{real} is {state}, but {wal} is left over beside it, holding the last writes of a "
        "database file that was moved, deleted or emptied without it: opening the database "
        "would start a new one there, and SQLite would delete that -wal with what it holds. Put "
        f"the database file back at {real}, beside its -wal; or, if those writes are not wanted, "
        f"move {wal.name} (and {shm.name}) aside (nothing was created or changed)",
        path,
    )
