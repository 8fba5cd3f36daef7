"""A backup file and its manifest, written the same way by every part that makes one.

``create_backup`` and the safety copy a migration takes both call :func:`write_backup`,
so both produce ``<backup>`` plus ``<backup>.manifest.json`` and both restore with
``mnemosyne restore``. This lives in storage (not in ``dr``) because migrations, which
run inside the store, take safety copies too.

    conn = open_read_only(Path("memories.db"))
    write_backup(conn, Path("memories.db"), Path("memories.db.before-upgrade.bak"))
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from sqlite3 import Connection

from ... import __version__
from ...core.timeutil import from_timestamp
from ...errors import BackupError, InvalidInputError
from .connection import open_read_only
from .snapshot import (
    claim,
    fsync_dir,
    fsync_file,
    remove_abandoned_claims,
    remove_copies_of,
    temporary_copy,
    temporary_file,
)

MANIFEST_SUFFIX = ".manifest.json"
MANIFEST_FORMAT = 1


@dataclass(frozen=True)
class BackupManifest:
    """What a backup holds, written beside it and checked before every restore."""

    format: int
    sha256: str
    size_bytes: int
    schema_version: int
    memory_count: int
    counts_by_status: dict[str, int]
    created_at: str
    source_db: str
    mnemosyne_version: str


def manifest_path(backup_path: str | Path) -> Path:
    """Where the manifest of ``backup_path`` lives: ``<backup>.manifest.json``."""
    path = Path(backup_path)
    return path.with_name(path.name + MANIFEST_SUFFIX)


def write_backup(conn: Connection, source: Path, target: Path, *, checked: bool = False) -> BackupManifest:
    """Copy the database behind ``conn`` (the file ``source``) to a new ``target``.

    Writes the snapshot to a temporary file, then its manifest, then gives it its
    name, and returns the manifest. ``checked``:
    the snapshot must pass SQLite's integrity check first, or it is removed and
    :class:`BackupError` raised: a copy of a damaged page could never be restored,
    and its manifest would tell monitoring a backup was made. Never replaces
    anything: a ``target`` or manifest that exists, a ``target`` that is one of the
    database's own files, or a ``target`` that is itself a manifest name raises
    :class:`InvalidInputError` before anything is written. OS and SQLite errors
    propagate for the caller to translate.
    """
    check_backup_target(source, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    # The name is claimed first, so two backups racing for one path do not both
    # copy; the manifest is written before the copy takes the name, so a backup
    # that exists has its manifest.
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(claim(target))
        except FileExistsError as exc:
            raise InvalidInputError(_exists(target)) from exc
        copy = stack.enter_context(temporary_copy(conn, target))
        if checked:
            _check_copy(copy, source)
        manifest = _describe(copy, source)
        try:
            _write_manifest(target, manifest)
            os.replace(copy, target)
        except BaseException:
            manifest_path(target).unlink(missing_ok=True)
            raise
    fsync_dir(target.parent)
    return manifest


def remove_killed_backups(folder: Path, pattern: str) -> None:
    """Delete what backups matching ``pattern`` in ``folder`` that were killed left:
    the claim that held the name, and a manifest written for it."""
    remove_abandoned_claims(folder, pattern, MANIFEST_SUFFIX)


def remove_copies_of_backup(backup: Path, pattern: str) -> None:
    """Delete the backups matching ``pattern`` beside ``backup`` that hold the very
    bytes it holds, with their manifests: they keep nothing it does not. One a
    process holds locked stays, and so does one without a manifest (an older
    release's, which a user may know by name)."""
    remove_copies_of(backup, pattern, MANIFEST_SUFFIX)


def _check_copy(copy: Path, source: Path) -> None:
    conn = open_read_only(copy, backup=True)
    try:
        problems = [str(row[0]) for row in conn.execute("PRAGMA integrity_check(5)")]
    except sqlite3.DatabaseError as exc:  # too damaged to list what is wrong
        problems = [str(exc)]
    finally:
        conn.close()
    if problems != ["ok"]:
        raise BackupError(
            f"{source} fails SQLite's integrity check ({'; '.join(problems)}), so a copy of it could not be "
            "restored; no backup was made: run `mnemosyne doctor`, or restore an earlier backup", source
        )


def copy_size(conn: Connection) -> int:
    """The bytes a copy of the database behind ``conn`` takes (0 if it cannot tell): what
    a backup needs, to tell a disk too full for it from a failing one."""
    try:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        return int(pages) * int(conn.execute("PRAGMA page_size").fetchone()[0])
    except sqlite3.Error:
        return 0


def database_files(database: Path) -> set[Path]:
    """The database file and the files SQLite keeps beside it: beside the file a
    symlink leads to, where SQLite keeps them."""
    real = database.resolve()
    return {real.with_name(real.name + suffix) for suffix in ("", "-wal", "-shm", "-journal")}


def check_backup_target(source: Path, target: Path) -> None:
    """Raise :class:`InvalidInputError` unless a backup of ``source`` may be written at ``target``."""
    if not target.name or target.name == "..":  # ".", "/", "..": a folder, not a file name
        raise InvalidInputError(f"backup_path {str(target)!r} names a folder; give the backup file's path")
    if target.resolve() in database_files(source):
        raise InvalidInputError(
            f"backup_path {target} is the database {source} or one of its own files; "
            "choose a path outside them"
        )
    if target.name.endswith(MANIFEST_SUFFIX):
        raise InvalidInputError(
            f"backup_path {target} ends in {MANIFEST_SUFFIX!r}, the name of another backup's "
            "manifest; choose another name"
        )
    for path in (target, manifest_path(target)):
        if path.exists() or path.is_symlink():
            raise InvalidInputError(_exists(path))


def _exists(path: Path) -> str:
    return f"{path} already exists and a backup never replaces a file; choose another backup_path"


def _describe(backup: Path, source: Path) -> BackupManifest:
    digest, size = sha256_of(backup)
    conn = open_read_only(backup, backup=True)
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        counts = dict(conn.execute("SELECT status, count(*) FROM memories GROUP BY status").fetchall())
    finally:
        conn.close()
    return BackupManifest(
        format=MANIFEST_FORMAT,
        sha256=digest,
        size_bytes=size,
        schema_version=version,
        memory_count=sum(counts.values()),
        counts_by_status=counts,
        created_at=from_timestamp(time.time()).isoformat(),
        source_db=str(source.resolve()),
        mnemosyne_version=__version__,
    )


def _write_manifest(backup: Path, manifest: BackupManifest) -> None:
    path = manifest_path(backup)
    with temporary_file(path) as tmp:
        tmp.write_text(json.dumps(asdict(manifest), indent=2) + "\n", encoding="utf-8")
        fsync_file(tmp)
        os.replace(tmp, path)
    fsync_dir(path.parent)


def sha256_of(path: Path) -> tuple[str, int]:
    """The file's SHA-256 (hex) and size in bytes."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def timestamp_for_names() -> str:
    """UTC time to the microsecond, for files that must not overwrite each other."""
    now = time.time()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"
