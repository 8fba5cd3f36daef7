"""Backups that restore.

``create_backup`` copies a live database (consistent while other processes write)
to a single file plus a ``<backup>.manifest.json`` beside it recording the file's
SHA-256, schema version, memory counts and time. ``restore_backup`` refuses any
backup that fails its checksum or SQLite's integrity check before it touches the
target, keeps the replaced database as a safety copy, and swaps atomically.

    from mnemosyne.dr.recovery import create_backup, restore_backup

    create_backup(db_path="/data/memories.db", backup_path="/backups/pre-deploy.bak")
    restore_backup(backup_path="/backups/pre-deploy.bak", db_path="/data/memories.db")
"""

from __future__ import annotations

import glob
import json
import logging
import os
import secrets
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from datetime import datetime
from pathlib import Path

from ..core.validation import check_seconds, expand_user
from ..errors import (
    BackupError,
    DatabaseBusyError,
    DiskFullError,
    InvalidInputError,
    MnemosyneError,
    NotADatabaseError,
    ReadOnlyDatabaseError,
    SchemaVersionError,
)
from ..storage.sqlite import SQLiteStore
from ..storage.sqlite.backup_file import (
    MANIFEST_FORMAT,
    MANIFEST_SUFFIX,
    BackupManifest,
    check_backup_target,
    copy_size,
    manifest_path,
    remove_killed_backups,
    sha256_of,
    timestamp_for_names,
    write_backup,
)
from ..storage.sqlite.connection import DEFAULT_BUSY_TIMEOUT_S, open_immutable, open_read_only
from ..storage.sqlite.driver_errors import translate
from ..storage.sqlite.file_names import refuse_other_names
from ..storage.sqlite.migrations import LATEST_VERSION, foreign_reason, refuse_foreign
from ..storage.sqlite.snapshot import fsync_dir, fsync_file, remove_abandoned, temporary_file

log = logging.getLogger("mnemosyne.dr")

__all__ = [
    "MANIFEST_SUFFIX",
    "BackupManifest",
    "create_backup",
    "manifest_path",
    "restore_backup",
    "verify_backup",
]


def create_backup(db_path: str | Path, backup_path: str | Path) -> BackupManifest:
    """Back up ``db_path`` to ``backup_path`` (folders created) and return the manifest.

    Safe while other threads and processes write: the copy is one consistent
    snapshot. The database is only read, never upgraded (a backup of an older schema
    is upgraded when it is restored), apart from noting the backup's time in it. A
    backup never replaces anything: an existing ``backup_path`` (or its manifest)
    raises :class:`InvalidInputError`. A disk (or a file-size limit) without room for
    the copy raises :class:`DiskFullError` and leaves no backup.
    """
    source, target = _as_path(db_path, "db_path"), _as_path(backup_path, "backup_path")
    if not source.is_file():
        raise BackupError(f"there is no database at {source} to back up", source)
    manifest = _snapshot(source, target, checked=True)
    if manifest.schema_version == LATEST_VERSION:
        _record_backup_time(source)
    return manifest


def _snapshot(source: Path, target: Path, checked: bool = False) -> BackupManifest:
    """Copy the database at ``source``, as committed, to a new backup at ``target``
    (that passes SQLite's integrity check, if ``checked``)."""
    remove_killed_backups(target.parent, glob.escape(target.name))  # a killed backup's, to this path
    check_backup_target(source, target)  # before the source is even opened
    try:
        conn = open_read_only(source, backup=manifest_path(source).exists())  # a backup copied off site
    except sqlite3.Error as exc:
        raise translate(exc, source, "open the database to back up") from exc
    with closing(conn):
        try:
            _backup_source_version(conn, source)
        except sqlite3.Error as exc:
            raise translate(exc, source, "read the database to back up") from exc
        try:
            return write_backup(conn, source, target, checked=checked)
        except (OSError, sqlite3.Error) as exc:
            _raise_if_full(exc, target, "write the backup", copy_size(conn))
            raise BackupError(f"cannot write the backup {target}: {exc}; nothing was written", target) from exc


def _raise_if_full(exc: OSError | sqlite3.Error, path: Path, action: str, needed: int) -> None:
    """Raise :class:`DiskFullError` if ``exc`` means the disk holding ``path`` (or a
    file-size limit) has no room for the ``needed`` bytes: that is no fault of the
    database or the backup, and freeing space is its fix."""
    error = translate(exc, path, action, needed=needed)
    if isinstance(error, DiskFullError):
        raise error from exc


def _backup_source_version(conn: sqlite3.Connection, source: Path) -> int:
    """The schema version of the database to back up; raise if it is not one of ours."""
    refuse_foreign(conn, source)
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version == 0:
        raise NotADatabaseError(
            f"{source} is an empty SQLite file, not a Mnemosyne database yet; there is "
            "nothing to back up: check the path",
            source,
        )
    if version > LATEST_VERSION:
        raise SchemaVersionError(source, version, LATEST_VERSION)
    return version


def _record_backup_time(source: Path) -> None:
    """Note the backup for ``get_stats().last_backup_at`` (through the store: no raw writes).
    A backup copied again (off site, say) records nothing: it must stay as it was made."""
    if manifest_path(source).exists():
        return
    try:
        store = SQLiteStore(source)
        try:
            store.set_meta("last_backup_at", repr(time.time()))
        finally:
            store.close()
    except (ReadOnlyDatabaseError, DatabaseBusyError, DiskFullError) as exc:
        # A database on a read-only disk, held by a long write, or on a disk the
        # backup just filled can still be backed up; the backup just made is
        # complete and verified, only its time goes unrecorded.
        log.warning("backup: %s was backed up, but the time of the backup is not recorded in it: %s", source, exc)


def verify_backup(backup_path: str | Path) -> BackupManifest:
    """Check a backup's checksum, integrity and schema; return its manifest.

    Raises :class:`BackupError` saying what is wrong; never modifies the file.
    """
    path = _as_path(backup_path, "backup_path")
    if not path.is_file():
        raise BackupError(f"there is no backup at {path}", path)
    manifest = _read_manifest(path)
    digest, size = sha256_of(path)
    if size != manifest.size_bytes or digest != manifest.sha256:
        raise BackupError(
            f"{path} does not match its manifest (expected {manifest.size_bytes} bytes, "
            f"sha256 {manifest.sha256[:12]}…; found {size} bytes, {digest[:12]}…): the file is "
            "truncated or corrupted; use another backup",
            path,
        )
    _check_database(path)
    if manifest.schema_version > LATEST_VERSION:
        raise BackupError(
            f"{path} has schema version {manifest.schema_version}, newer than this Mnemosyne "
            f"understands ({LATEST_VERSION}); upgrade Mnemosyne to restore it",
            path,
        )
    return manifest


def restore_backup(
    backup_path: str | Path, db_path: str | Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT_S
) -> BackupManifest:
    """Replace ``db_path`` with the verified backup; return the backup's manifest.

    The backup is verified, copied next to the target, verified again, upgraded to
    this version's schema and marked as restored (in its audit log, and with a new
    index epoch that makes other processes reload), all before the target is
    touched. A healthy target is then overwritten through SQLite's backup API in
    one transaction: other processes with the database open see either the old or
    the restored contents, in the schema they expect. Once that transaction holds
    the target's write lock, and before any page is replaced, the target as it is
    is saved as ``<db>.pre-restore-<time>.bak`` (with its own manifest), so no
    write committed before the restore is lost. An interrupted restore changes
    nothing. An unreadable target is moved aside with its ``-wal``/``-shm`` files
    and the restored file renamed into place: stop the processes using it first,
    as they would go on writing to the file moved aside. A target other processes
    keep locked longer than ``busy_timeout`` seconds raises :class:`DatabaseBusyError`
    and is left as it is, and so is a target with other names (hard links), with
    :class:`StorageError`. A symlink is restored through, to the file it points at:
    that file (with the ``-wal``/``-shm`` beside it) is replaced or moved aside, its
    safety copy saved beside it, and the symlink stays as it is.
    """
    backup, target = _as_path(backup_path, "backup_path"), _through_symlink(_as_path(db_path, "db_path"))
    busy_timeout = check_seconds(busy_timeout, "busy_timeout")
    manifest = verify_backup(backup)
    if target.is_dir():
        raise InvalidInputError(f"db_path {target} is a directory; pass the database file path")
    if manifest_path(target).exists():
        raise InvalidInputError(
            f"db_path {target} is a backup (its manifest is beside it), not a database to restore into; "
            "restore into the database's own path"
        )
    # Restored by one name, the database would still be written by its others, each
    # with a log of its own: refused before anything is staged beside it.
    refuse_other_names(target)
    _refuse_foreign_target(target)
    mark = None
    try:
        with _stage(target) as staged:
            _copy_to_stage(backup, staged, manifest)
            mark = _mark_restored(staged, backup, manifest)
            if _is_healthy_database(target, busy_timeout):
                _match_page_size(staged, target)
                _copy_into_live(staged, target, busy_timeout, mark)
            else:
                _swap_file(staged, target)
    except KeyboardInterrupt:
        # Ctrl-C after the restored contents went live (while cleaning up) must not
        # be reported as a restore that changed nothing.
        if mark is None or not _restored_by(target, mark):
            raise
        log.warning("interrupted after %s was restored; the restore is complete", target)
    return manifest


def _through_symlink(target: Path) -> Path:
    """The file a symlinked ``db_path`` points at; any other path as it is.

    SQLite opens the file a symlink points at and keeps its ``-wal``/``-shm`` beside
    that file: a restore that replaced the symlink itself would leave the damaged
    file (and its stale ``-wal``) in use for everything opening it by its real path.
    A symlink to a file that is gone is restored through too: the lost file is what
    the restore puts back (its folders created, as for any missing ``db_path``).
    """
    if not target.is_symlink():
        return target
    try:
        return target.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop, before Python 3.13
        raise InvalidInputError(
            f"db_path {target} is a symlink that leads back to itself ({exc}); point it at the database file"
        ) from exc


def _copy_to_stage(backup: Path, staged: Path, manifest: BackupManifest) -> None:
    try:
        shutil.copyfile(backup, staged)
        fsync_file(staged)
    except OSError as exc:  # a full disk, a file size limit
        raise translate(exc, staged, f"copy {backup} beside the database (nothing was restored)") from exc
    if sha256_of(staged)[0] != manifest.sha256:
        raise BackupError(f"copying {backup} to {staged} changed its content; check the disk", staged)


@contextmanager
def _stage(target: Path) -> Iterator[Path]:
    """A new file beside ``target``, readable by its owner only, to copy the backup
    into; removed afterwards (see ``snapshot.temporary_file``). It is locked while
    the restore runs: another restore, even from another container, tells it from
    one that a killed restore left."""
    with ExitStack() as stack:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            # What killed restores left here: their safety copies, and the stages of
            # releases that named them apart.
            remove_killed_backups(target.parent, f"{glob.escape(target.name)}.pre-restore-*.bak")
            remove_abandoned(target.parent, f".{glob.escape(target.name)}.restore-*.tmp")
            staged = stack.enter_context(temporary_file(target, mode=0o600))
        except OSError as exc:  # a read-only folder
            raise translate(exc, target, "stage the backup beside the database (nothing was restored)") from exc
        yield staged


def _refuse_foreign_target(target: Path) -> None:
    """Another application's SQLite database at ``db_path`` is refused and left as it
    is (an unreadable file is the restore's to move aside)."""
    if not target.is_file():
        return
    if _schema_on_disk(target):
        return  # a Mnemosyne schema: no need to copy the file to look
    with tempfile.TemporaryDirectory() as folder:
        # Probed as a copy, with its -wal (an app's tables may sit only there), so the
        # probe adds nothing beside the target, not even a -shm.
        probe = Path(folder) / "probe.db"
        try:
            shutil.copyfile(target, probe)
            wal = target.with_name(target.name + "-wal")
            if wal.exists():
                shutil.copyfile(wal, probe.with_name(probe.name + "-wal"))
            conn = sqlite3.connect(probe)
        except (OSError, sqlite3.Error):
            return
        try:
            refuse_foreign(conn, target)
        except sqlite3.Error:
            pass
        finally:
            conn.close()


def _schema_on_disk(path: Path) -> bool:
    """Whether the file itself (its -wal aside) holds a Mnemosyne schema: its
    ``user_version`` alone may be another application's."""
    try:
        conn = open_immutable(path)
        try:
            return int(conn.execute("PRAGMA user_version").fetchone()[0]) > 0 and foreign_reason(conn) is None
        finally:
            conn.close()
    except sqlite3.Error:
        return False


def _read_pragma(path: Path, pragma: str) -> int:
    """A number from the file's header (0 if unreadable)."""
    try:
        conn = open_immutable(path)
        try:
            return int(conn.execute(f"PRAGMA {pragma}").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


# SQLITE_BUSY and SQLITE_LOCKED, the step results a backup retries.
_BUSY = (5, 6)


def _copy_into_live(staged: Path, target: Path, busy_timeout: float, mark: str) -> None:
    """Overwrite a healthy database in place, as one transaction other processes
    respect, saving it first as it is once that transaction holds its write lock."""
    safety_copy = target.with_name(f"{target.name}.pre-restore-{timestamp_for_names()}.bak")
    check_backup_target(target, safety_copy)
    saved = False
    deadline = time.monotonic() + busy_timeout

    def save_first(status: int, remaining: int, total: int) -> None:
        # SQLite's backup holds the target's write lock from its first successful
        # step to its last, so nothing can commit between this copy and the overwrite.
        nonlocal saved
        if status in _BUSY:  # retried after a pause
            if time.monotonic() > deadline:
                raise DatabaseBusyError(f"another writer held {target} too long; nothing was restored", target)
            return
        if not saved:
            _snapshot(target, safety_copy)
            saved = True

    # mode=rw: a staged copy gone missing is an error, never a new empty database.
    source = sqlite3.connect(staged.resolve().as_uri() + "?mode=rw", uri=True)
    try:
        store = SQLiteStore(target, busy_timeout)
        try:
            # One page per step, so the first step cannot finish the copy before the
            # target is saved.
            source.backup(store.connection(), pages=1, progress=save_first)
        except BaseException:
            # Stopped before the copy went live (its transaction rolled back): the
            # target is as it was, and a copy of it would only take room.
            if not _restored_by(target, mark):
                for made in (safety_copy, manifest_path(safety_copy)):
                    made.unlink(missing_ok=True)
            raise
        finally:
            store.close()
    except sqlite3.Error as exc:
        _raise_if_full(exc, target, "restore into the database", copy_size(source))
        raise BackupError(f"restoring into {target} failed, nothing was changed: {exc}", target) from exc
    finally:
        source.close()


def _match_page_size(staged: Path, target: Path) -> None:
    """Give the staged copy the target's page size: SQLite's backup cannot change the
    page size of a database in WAL mode (a backup made by an older SQLite, whose
    default was 1024 bytes, could not be restored over a live database)."""
    wanted = _read_pragma(target, "page_size")
    conn = sqlite3.connect(staged, isolation_level=None)
    try:
        if wanted and conn.execute("PRAGMA page_size").fetchone()[0] != wanted:
            conn.execute("PRAGMA journal_mode = DELETE")  # a page size cannot change in WAL mode
            conn.execute(f"PRAGMA page_size = {int(wanted)}")
            conn.execute("VACUUM")
    except sqlite3.Error as exc:
        _raise_if_full(exc, staged, "give the staged copy the database's page size (nothing was restored)",
                       copy_size(conn))
        raise BackupError(f"cannot give the staged copy {staged} the page size of {target}: {exc}; "
                          "nothing was restored", staged) from exc
    finally:
        conn.close()


def _swap_file(staged: Path, target: Path) -> None:
    """Move an absent or unreadable target (and its -wal/-shm) aside, rename in the copy."""
    stamp = timestamp_for_names()
    if target.exists():
        target.rename(target.with_name(f"{target.name}.unreadable-{stamp}"))
    for suffix in ("-wal", "-shm", "-journal"):
        # A leftover -wal would be replayed into the restored file: never keep it.
        stale = target.with_name(target.name + suffix)
        if stale.exists():
            stale.rename(target.with_name(f"{target.name}.unreadable-{stamp}{suffix}"))
    os.replace(staged, target)
    fsync_dir(target.parent)


def _mark_restored(staged: Path, backup: Path, manifest: BackupManifest) -> str:
    """Bring the staged copy to this version's schema and record the restore in it, so
    the restored contents, their schema and their record go live in one transaction.
    Returns the mark in that record, which tells whether those contents went live."""
    if not staged.is_file():  # SQLite would make a new, empty database there
        raise BackupError(f"the staged copy {staged} disappeared; nothing was restored", staged)
    store = SQLiteStore(staged)  # migrates a backup made by an older schema
    try:
        if store.safety_backup is not None:  # the backup itself is the copy from before
            store.safety_backup.unlink()
            manifest_path(store.safety_backup).unlink()
        mark = secrets.token_hex(8)
        # A file name that is not UTF-8 (lone surrogates in Python) is recorded escaped.
        named = str(backup).encode("utf-8", "backslashreplace").decode("utf-8")
        store.record_event("restore", {"backup": named, "mark": mark})
        # The restored contents were backed up when that backup was made: their own
        # record of the last backup predates it.
        try:
            made = datetime.fromisoformat(manifest.created_at).timestamp()
        except (TypeError, ValueError):  # a hand-edited manifest: keep what the contents say
            made = 0.0
        recorded = store.get_meta("last_backup_at")
        store.set_meta("last_backup_at", repr(max(made, float(recorded or 0))))
        # Processes that had the database open hold an index of the old contents;
        # a new epoch makes them reload it (the backup's epoch may equal theirs).
        store.set_meta("index_epoch", str(time.time_ns()))
    finally:
        store.close()
    return mark


def _restored_by(path: Path, mark: str) -> bool:
    """Whether the database at ``path`` records the restore that ``mark`` names."""
    try:
        with closing(open_read_only(path)) as conn:
            row = conn.execute(
                "SELECT 1 FROM audit_log WHERE op = 'restore' AND json_extract(detail, '$.mark') = ?", (mark,)
            ).fetchone()
    except sqlite3.Error:
        return False
    return row is not None


def _read_manifest(backup: Path) -> BackupManifest:
    path = manifest_path(backup)
    if not path.is_file():
        raise BackupError(
            f"{backup} has no manifest ({path.name}); it is not a Mnemosyne backup, or the "
            "manifest was not copied with it; keep both files together",
            backup,
        )
    try:
        fields = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:  # RecursionError: nested thousands deep
        raise BackupError(f"the manifest {path} is unreadable: {exc}", backup) from exc
    if not isinstance(fields, dict):
        raise BackupError(f"the manifest {path} is damaged: it holds no JSON object", backup)
    for name, kind in _MANIFEST_TYPES.items():
        value = fields.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise BackupError(
                f"the manifest {path} is damaged: {name} must be a {kind.__name__}, got {value!r}", backup
            )
    if fields["format"] > MANIFEST_FORMAT:
        raise BackupError(
            f"the manifest {path} is of format {fields['format']}, written by a newer release of Mnemosyne "
            f"(this one reads format {MANIFEST_FORMAT}): restore it with that release", backup
        )
    # Fields a later release adds within a format are not needed here: the size and
    # digest prove the file, whatever else the manifest tells.
    return BackupManifest(**{name: fields[name] for name in _MANIFEST_TYPES})


# What each manifest field holds, checked before any is used.
_MANIFEST_TYPES: dict[str, type] = {
    "format": int, "sha256": str, "size_bytes": int, "schema_version": int, "memory_count": int,
    "counts_by_status": dict, "created_at": str, "source_db": str, "mnemosyne_version": str,
}


def _check_database(path: Path) -> None:
    try:
        conn = open_read_only(path, backup=True)
        try:
            result = conn.execute("PRAGMA integrity_check").fetchall()
            conn.execute("SELECT count(*) FROM memories").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise BackupError(f"{path} is not a readable Mnemosyne database: {exc}", path) from exc
    if result != [("ok",)]:
        raise BackupError(f"{path} fails SQLite's integrity check: {result[:3]}", path)


def _is_healthy_database(path: Path, busy_timeout: float) -> bool:
    """Whether ``path`` opens as a Mnemosyne database and passes SQLite's quick check.

    A damaged page behind an intact header must count as unhealthy: that is the
    database restore exists for, and it cannot be backed up first. A database
    another process holds locked, or one this process may not write, is not a
    damaged one: those errors propagate, and the target is left as it is.
    """
    if not path.is_file():
        return False
    try:
        store = SQLiteStore(path, busy_timeout)
    except (DatabaseBusyError, ReadOnlyDatabaseError):
        raise
    except MnemosyneError:
        return False
    try:
        return [tuple(row) for row in store.connection().execute("PRAGMA quick_check")] == [("ok",)]
    except (DatabaseBusyError, ReadOnlyDatabaseError):
        raise
    except (MnemosyneError, sqlite3.Error):
        return False
    finally:
        store.close()


def _as_path(value: object, name: str) -> Path:
    if not isinstance(value, (str, Path)) or not str(value).strip():
        raise InvalidInputError(f"{name} must be a non-empty str or Path, got {value!r}")
    if isinstance(value, str) and (value.endswith(("/", os.sep)) or os.path.basename(value) in (".", "..")):
        # Path() would drop a trailing "/" or "/.", and name a file where a folder was meant.
        raise InvalidInputError(f"{name} {value!r} names a folder; name a file in it")
    return expand_user(value, name)
