"""A database file must be opened by the one name its write-ahead log is kept under.

SQLite keeps a database's log and the index of it in ``<name>-wal`` and
``<name>-shm``, beside the name the file was opened by (a symbolic link is followed
to the file first). One file under two names (hard links) breaks that: processes
opening it by each name keep a log of their own, their checkpoints overwrite each
other's pages, and writes that every call reported committed are lost. Such a file
is refused before SQLite opens anything, so nothing is created or changed.

    refuse_other_names(Path("memories.db"))
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
