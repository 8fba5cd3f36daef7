"""Bring a database to the latest schema, safely."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from ...errors import SchemaVersionError, StorageError
from .backup_file import timestamp_for_names, write_backup
from .connection import Database, translate
from .migrations import BOOKKEEPING, LATEST_VERSION, MIGRATIONS, Migration


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(db: Database) -> Path | None:
    """Apply every pending migration; return the safety backup's path if one was made.

    A database that already holds data is copied aside before the first change
    (``<name>.pre-v<N>-<time>.bak``, with its manifest), so a failed upgrade can
    always be undone with ``mnemosyne restore``.
    """
    with db.read() as conn:
        current = schema_version(conn)
    if current > LATEST_VERSION:
        raise SchemaVersionError(db.path, current, LATEST_VERSION)
    if current == LATEST_VERSION:
        _verify_checksums(db)
        return None

    safety_copy = None
    if current > 0:
        name = f"{db.path.name}.pre-v{LATEST_VERSION}-{timestamp_for_names()}-{os.getpid()}.bak"
        safety_copy = db.path.with_name(name)
        with db.read("copy the database aside before upgrading it") as conn:
            try:
                write_backup(conn, db.path, safety_copy)
            except OSError as exc:
                raise translate(exc, safety_copy, "copy the database aside before upgrading it") from exc

    for migration in MIGRATIONS:
        if migration.version > current:
            _apply(db, migration)
    return safety_copy


def _apply(db: Database, migration: Migration) -> None:
    with db.write(f"migrate to schema version {migration.version}") as conn:
        # Another process may have migrated while we waited for the write lock.
        if schema_version(conn) >= migration.version:
            return
        conn.execute(BOOKKEEPING)
        for statement in split_statements(migration.sql):
            conn.execute(statement)
        if migration.after is not None:
            migration.after(conn)
        conn.execute(
            "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
            (migration.version, migration.name, migration.checksum, time.time()),
        )
        # PRAGMA user_version is part of the transaction: it commits with the schema.
        conn.execute(f"PRAGMA user_version = {migration.version}")


def _verify_checksums(db: Database) -> None:
    with db.read() as conn:
        applied = dict(conn.execute("SELECT version, checksum FROM schema_migrations").fetchall())
    for migration in MIGRATIONS:
        recorded = applied.get(migration.version)
        if recorded is not None and not migration.applied_as(recorded):
            raise StorageError(
                f"{db.path}: schema migration {migration.version} ({migration.name}) differs "
                "from the one that built this database; this Mnemosyne build is inconsistent",
                db.path,
            )


def split_statements(sql: str) -> list[str]:
    """Split a script into statements (``executescript`` would commit mid-migration)."""
    statements, buffer = [], ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip().strip(";").strip():
        statements.append(buffer.strip())
    return statements
