"""The embedded default backend: one SQLite file in WAL mode."""

from .store import SQLiteStore

__all__ = ["SQLiteStore"]
