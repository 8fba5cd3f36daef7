"""Mnemosyne: durable, local-first memory for AI agents.

    from mnemosyne import Mnemosyne

    mem = Mnemosyne(session_id="website-redesign", db_path="/data/memories.db")
    mem.remember("Completed hero section design.", importance=0.7)
    for item in mem.recall("design progress", top_k=10):
        print(item)

``remember``, ``recall`` and ``get_stats`` are also available as module-level
functions that use one default instance (session ``"default"``, database at
:func:`mnemosyne.memory.default_db_path`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _fork
from .errors import (
    BackupError,
    CorruptDatabaseError,
    DatabaseBusyError,
    DiskFullError,
    EmbedderError,
    EmbedderInputError,
    EmbedderMismatchError,
    ImportInterrupted,
    InvalidInputError,
    LeaseHeldError,
    MemoryNotFoundError,
    MissingDependencyError,
    MnemosyneError,
    NotADatabaseError,
    ReadOnlyDatabaseError,
    SchemaVersionError,
    StorageError,
)
from .models import DoctorReport, Episode, Memory, SleepReport, Stats

if TYPE_CHECKING:
    from .memory import Mnemosyne

__version__ = "0.1.0"

__all__ = [
    "BackupError",
    "CorruptDatabaseError",
    "DatabaseBusyError",
    "DiskFullError",
    "DoctorReport",
    "EmbedderError",
    "EmbedderInputError",
    "EmbedderMismatchError",
    "Episode",
    "ImportInterrupted",
    "InvalidInputError",
    "LeaseHeldError",
    "Memory",
    "MemoryNotFoundError",
    "MissingDependencyError",
    "Mnemosyne",
    "MnemosyneError",
    "NotADatabaseError",
    "ReadOnlyDatabaseError",
    "SchemaVersionError",
    "SleepReport",
    "Stats",
    "StorageError",
    "__version__",
    "get_stats",
    "recall",
    "remember",
]

def __getattr__(name: str) -> Any:
    # Mnemosyne brings numpy and the storage engine: loaded on first use, so that
    # `mnemosyne --help` and the error classes cost nothing to import.
    if name == "Mnemosyne":
        from .memory import Mnemosyne

        return Mnemosyne
    raise AttributeError(f"module 'mnemosyne' has no attribute {name!r}")


_default: Mnemosyne | None = None
_default_lock = _fork.Lock()


def _default_instance() -> Mnemosyne:
    global _default
    with _default_lock:
        if _default is None:
            from .memory import Mnemosyne

            _default = Mnemosyne()
        return _default


def remember(content: str, **kwargs: Any) -> str:
    """:meth:`Mnemosyne.remember` on the default instance."""
    return _default_instance().remember(content, **kwargs)


def recall(query: str, top_k: int = 10, **kwargs: Any) -> list[Memory]:
    """:meth:`Mnemosyne.recall` on the default instance."""
    return _default_instance().recall(query, top_k, **kwargs)


def get_stats() -> Stats:
    """:meth:`Mnemosyne.get_stats` on the default instance."""
    return _default_instance().get_stats()
