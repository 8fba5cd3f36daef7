"""Every error Mnemosyne raises, in one tree.

    MnemosyneError
    ├── InvalidInputError (also ValueError)      bad arguments; nothing was written
    ├── MemoryNotFoundError (also LookupError)   no such memory visible from this session
    ├── StorageError                             the database could not do what was asked
    │   ├── DatabaseBusyError                    contention outlasted every retry
    │   ├── NotADatabaseError                    the file is not a (healthy) Mnemosyne database
    │   │   └── CorruptDatabaseError             a SQLite file that is damaged or truncated
    │   ├── ReadOnlyDatabaseError                the file or its folder cannot be written
    │   ├── DiskFullError                        the disk (or a size limit) is full, for a write or a backup
    │   └── SchemaVersionError                   the database is newer than this code
    ├── BackupError                              a backup could not be made, verified or restored
    ├── EmbedderError                            the embedding model failed or does not match
    │   └── EmbedderMismatchError                the database was built with another embedder
    ├── MissingDependencyError (also ImportError) an optional extra or package is not installed
    └── LeaseHeldError                           another process holds the sleep lease

A backup, restore or upgrade that runs out of room raises ``DiskFullError``, not
``BackupError``: nothing is wrong with the database or the backup, and freeing
space is the fix.

Not an error, and so outside the tree: ``ImportInterrupted``, the
``KeyboardInterrupt`` of an import stopped once its memories were committed.

Each class has a stable ``code`` so the CLI and the MCP server can report errors
without leaking stack traces. Driver errors are translated at the storage boundary
with ``raise ... from exc`` so the original cause stays attached.
"""

from __future__ import annotations

from pathlib import Path


class MnemosyneError(Exception):
    """Root of every error raised by Mnemosyne."""

    code = "mnemosyne_error"


class InvalidInputError(MnemosyneError, ValueError):
    """An argument was rejected before anything was written."""

    code = "invalid_input"


class MemoryNotFoundError(MnemosyneError, LookupError):
    """No memory with this id is visible from the calling session."""

    code = "not_found"

    def __init__(self, memory_id: str, session_id: str | None = None) -> None:
        self.memory_id = memory_id
        self.session_id = session_id
        where = f" from session {brief(session_id)}" if session_id is not None else ""
        super().__init__(
            f"no memory {brief(memory_id)} is visible{where}; session-scoped memories are "
            "only visible from the session that stored them"
        )


def brief(value: object, most: int = 80) -> str:
    """``repr(value)``, cut short: an error message must not echo a megabyte of input."""
    shown = repr(value)
    return shown if len(shown) <= most else f"{shown[:most]}... ({len(str(value))} characters)"


class StorageError(MnemosyneError):
    """The database failed; the cause is attached as ``__cause__``."""

    code = "storage_error"

    def __init__(self, message: str, path: str | Path | None = None) -> None:
        self.path = None if path is None else str(path)
        super().__init__(message)


class DatabaseBusyError(StorageError):
    """Another writer held the database for longer than every retry allowed."""

    code = "database_busy"


class NotADatabaseError(StorageError):
    """The path holds something that is not a healthy Mnemosyne database."""

    code = "not_a_database"


class CorruptDatabaseError(NotADatabaseError):
    """The file is SQLite, but damaged or truncated; restore it from a backup."""

    code = "corrupt_database"


class ReadOnlyDatabaseError(StorageError):
    """The database file, or the folder it lives in, cannot be written."""

    code = "read_only"


class DiskFullError(StorageError):
    """The disk (or a file-size limit) is full; the write (or the backup, restore or
    upgrade) was rolled back, and nothing was written."""

    code = "disk_full"


class SchemaVersionError(StorageError):
    """The database was written by a newer Mnemosyne than this one."""

    code = "schema_version"

    def __init__(self, path: str | Path, schema_version: int, supported: int) -> None:
        self.schema_version = schema_version
        self.supported = supported
        super().__init__(
            f"{path} has schema version {schema_version}, but this Mnemosyne only "
            f"understands up to {supported}; upgrade Mnemosyne "
            "(pip install -U mnemosyne-agent-memory) to open it",
            path,
        )


class BackupError(MnemosyneError):
    """A backup could not be created, verified or restored; nothing was replaced."""

    code = "backup_error"

    def __init__(self, message: str, path: str | Path | None = None) -> None:
        self.path = None if path is None else str(path)
        super().__init__(message)


class EmbedderError(MnemosyneError):
    """The embedding model could not produce vectors."""

    code = "embedder_error"


class EmbedderInputError(EmbedderError):
    """The model refused these texts (too long for it, say), not every text: the others
    still get vectors. Raise it from a custom embedder for input it cannot take.

    ``lasting=False`` says the refusal may pass (a server error that a text too long
    for the model also gets): the text is asked for again after a cool-down, not
    written off for the process's life."""

    code = "embedder_input"

    def __init__(self, message: str, *, lasting: bool = True) -> None:
        super().__init__(message)
        self.lasting = lasting


class EmbedderMismatchError(EmbedderError):
    """The database's vectors were made by a different embedder than the one given."""

    code = "embedder_mismatch"


class MissingDependencyError(MnemosyneError, ImportError):
    """An optional feature needs an extra (or, outside every extra, a package) that is
    not installed. ``extra`` is None when the fix is a package of its own."""

    code = "missing_dependency"

    def __init__(self, feature: str, extra: str | None = None, *, package: str | None = None) -> None:
        self.extra = extra
        self.package = package
        if extra is not None:
            needed = f"the '{extra}' extra: pip install 'mnemosyne-agent-memory[{extra}]'"
        else:
            needed = f"the '{package}' package: pip install {package}"
        super().__init__(f"{feature} needs {needed}")


class LeaseHeldError(MnemosyneError):
    """Another process is already consolidating this database."""

    code = "lease_held"


class ImportInterrupted(KeyboardInterrupt):
    """Ctrl-C once an import had committed its memories: as the commit returned, or
    while the import embedded them.

    Still a ``KeyboardInterrupt`` (the program stops as it would), but it tells the
    truth about the database: ``imported`` new memories are stored, and ``waiting``
    memories have no vector yet. Those are found by their words until the backfill
    gives them one.
    """

    code = "interrupted"

    def __init__(self, imported: int, waiting: int) -> None:
        self.imported = imported
        self.waiting = waiting
        super().__init__(
            f"interrupted after its commit: the import is committed ({imported} new memories); "
            f"{waiting} memories have no vector yet and are found by their words until "
            "`mnemosyne reembed --missing` (backfill_vectors() in Python) or sleep gives them one"
        )
