"""Bring a database to the latest schema, safely."""

from __future__ import annotations

import contextlib
import glob
import os
import sqlite3
import time
from pathlib import Path

from ...errors import SchemaVersionError, StorageError
from .backup_file import (
    copy_size,
    manifest_path,
    remove_copies_of_backup,
    remove_killed_backups,
    timestamp_for_names,
    write_backup,
)
from .connection import Database, open_read_only
from .driver_errors import translate
from .migrations import BOOKKEEPING, LATEST_VERSION, MIGRATIONS, Migration
from .snapshot import in_use


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
    safety_copy = None
    if current < LATEST_VERSION:
        # One write transaction for the copy and every step: processes opening an old
        # database together queue here, and only the first finds work left to do, so
        # it alone copies the database aside. A crash mid-upgrade rolls back whole.
        copies: list[Path] = []
        try:
            # The copy stays locked until the upgrade ends: no sweep takes it meanwhile.
            with contextlib.ExitStack() as held, db.write(f"upgrade the schema to version {LATEST_VERSION}") as conn:
                current = schema_version(conn)
                if current > LATEST_VERSION:  # a newer build upgraded it while we waited
                    raise SchemaVersionError(db.path, current, LATEST_VERSION)
                if current < LATEST_VERSION:
                    safety_copy = _upgrade(db, conn, current, copies, held)
        except BaseException:
            # Rolled back whole, the database is as it was and the copy of it is
            # redundant: kept, a read-only database would leave one per attempt. It
            # stays if the upgrade may have committed after all (or nothing can tell).
            if copies and _still_at(db, current):
                for copy in copies:
                    for path in (copy, manifest_path(copy)):
                        path.unlink(missing_ok=True)
            raise
    _verify_checksums(db)
    return safety_copy


def _still_at(db: Database, version: int) -> bool:
    """Whether the database is known to be still at schema ``version``."""
    try:
        with db.read() as conn:
            return schema_version(conn) == version
    except Exception:  # any failure means "cannot tell"
        return False


def _upgrade(
    db: Database, conn: sqlite3.Connection, current: int, copies: list[Path], held: contextlib.ExitStack
) -> Path | None:
    """Copy the database aside if it holds a schema (adding the copy to ``copies`` as
    soon as it is begun, and holding it locked in ``held`` once made), then apply
    every later migration."""
    safety_copy = None
    if current > 0:
        # What upgrades killed while copying left; never a copy an upgrade finished
        # (older releases wrote theirs without a manifest).
        remove_killed_backups(db.path.parent, f"{glob.escape(db.path.name)}.pre-v*.bak")
        name = f"{db.path.name}.pre-v{LATEST_VERSION}-{timestamp_for_names()}-{os.getpid()}.bak"
        safety_copy = db.path.with_name(name)
        copies.append(safety_copy)
        _copy_aside(db.path, safety_copy)
        held.enter_context(in_use(safety_copy))
        # An upgrade killed after its copy was made left that copy behind, and the
        # database as it was, so the same bytes as this one: each attempt would add
        # one more. A copy that differs (the database changed since) is kept.
        remove_copies_of_backup(safety_copy, f"{glob.escape(db.path.name)}.pre-v{LATEST_VERSION}-*.bak")
    for migration in MIGRATIONS:
        if migration.version > current:
            _apply(conn, migration)
    return safety_copy


def _copy_aside(path: Path, safety_copy: Path) -> None:
    """Copy the database as committed, while the caller holds the write lock unused.

    Through a second connection: SQLite's backup cannot read from a connection that
    has begun writing, and nothing can change under this one while the lock is held.
    """
    action = "copy the database aside before upgrading it"
    try:
        reader = open_read_only(path)
    except sqlite3.Error as exc:
        raise translate(exc, path, action) from exc
    try:
        write_backup(reader, path, safety_copy)
    except sqlite3.Error as exc:
        # The copy's size tells a disk (or file-size limit) too small for it from a failing one.
        raise translate(exc, path, action, needed=copy_size(reader)) from exc
    except OSError as exc:
        raise translate(exc, safety_copy, action, needed=copy_size(reader)) from exc
    finally:
        reader.close()


def _apply(conn: sqlite3.Connection, migration: Migration) -> None:
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
