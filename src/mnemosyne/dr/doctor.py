"""``mnemosyne doctor``: is this database healthy, and can its derived indexes be fixed?

``diagnose`` never changes the database: it opens the file read-only, runs SQLite's
integrity check, reads the schema version, and runs every consistency check on a
private in-memory copy (FTS5 implements its own check as a write, so it must not run
on the real file). On an older schema, an index the upgrade rebuilds from the rows
anyway is not held to today's rules. ``repair`` takes a verified backup first, then
rebuilds only the derived indexes that failed, from the rows, in one transaction;
opening the database for that upgrades an older schema first.

    from mnemosyne.dr.doctor import diagnose, repair

    report = diagnose("/data/memories.db")
    if not report.ok:
        report = repair("/data/memories.db")
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..core.timeutil import EARLIEST, LATEST
from ..core.validation import expand_user
from ..errors import InvalidInputError, ReadOnlyDatabaseError, StorageError
from ..models import DoctorCheck, DoctorReport
from ..storage.sqlite.backup_file import timestamp_for_names
from ..storage.sqlite.connection import open_read_only
from ..storage.sqlite.derived import present
from ..storage.sqlite.file_names import refuse_leftover_wal, refuse_other_names
from ..storage.sqlite.migrations import LATEST_VERSION, MIGRATIONS, foreign_reason, rebuilt_by_upgrade

_FILE_CHECKS = ("file", "open", "integrity", "schema", "read")


def diagnose(db_path: str | Path) -> DoctorReport:
    """Check ``db_path`` without changing it; return a report (``report.ok``).

    >>> diagnose("/data/memories.db").ok
    True
    """
    path = _as_path(db_path)
    checks: list[DoctorCheck] = []
    problem = _file_problem(path)
    if problem is not None:
        checks.append(DoctorCheck("file", False, problem))
        return DoctorReport(str(path), None, LATEST_VERSION, tuple(checks))
    checks.append(DoctorCheck("file", True, f"SQLite database, {path.stat().st_size:,} bytes"))
    try:
        source = open_read_only(path, timeout=30)
    except sqlite3.Error as exc:
        checks.append(DoctorCheck("open", False, f"cannot open read-only: {exc}"))
        return DoctorReport(str(path), None, LATEST_VERSION, tuple(checks))
    version: int | None = None
    try:
        integrity = _integrity(source)
        checks.append(integrity)
        if integrity.detail.startswith("SQLite cannot read"):
            return DoctorReport(str(path), None, LATEST_VERSION, tuple(checks))
        version, schema = _schema(source)
        checks.append(schema)
        if integrity.ok and schema.ok:
            copy = sqlite3.connect(":memory:")
            try:
                # One consistent snapshot; the checks never see a half-written state.
                source.backup(copy)
                checks.extend(_consistency(copy, version))
            finally:
                copy.close()
    except sqlite3.Error as exc:
        checks.append(DoctorCheck("read", False, f"reading the database failed: {exc}"))
    finally:
        source.close()
    return DoctorReport(str(path), version, LATEST_VERSION, tuple(checks))


def repair(db_path: str | Path, backup_path: str | Path | None = None) -> DoctorReport:
    """Back up ``db_path``, rebuild every derived index that fails, return the new report.

    Only derived data (full-text and other indexes) is rebuilt, from the rows; a
    database whose file is damaged cannot be repaired here: restore a backup. The
    backup defaults to ``<db>.pre-repair-<time>.bak`` beside the database.

    >>> repair("/data/memories.db").repaired
    ('memories_fts',)
    """
    from ..storage.sqlite import SQLiteStore
    from .recovery import create_backup

    path = _as_path(db_path)
    refuse_other_names(path)  # their fixes are their own, not a restore
    refuse_leftover_wal(path)
    before = diagnose(path)
    broken = tuple(c.name.removeprefix("index:") for c in before.problems if c.name.startswith("index:"))
    # Rebuilding indexes needs a readable file of a known schema; row-level findings
    # (lost or unaudited memories) are reported, not blocking.
    blocking = [c for c in before.problems if c.name in _FILE_CHECKS]
    if blocking:
        raise StorageError(
            f"{path} cannot be repaired by rebuilding indexes: "
            + "; ".join(f"{c.name}: {c.detail}" for c in blocking)
            + "; restore it from a backup with `mnemosyne restore`",
            path,
        )
    if not broken:
        return before
    default = path.with_name(f"{path.name}.pre-repair-{timestamp_for_names()}.bak")
    backup = default if backup_path is None else Path(backup_path)
    create_backup(db_path=path, backup_path=backup)
    store = SQLiteStore(path)
    try:
        store.rebuild_indexes(broken, {"backup": str(backup)})
    finally:
        store.close()
    after = diagnose(path)
    return DoctorReport(
        after.db_path, after.schema_version, after.latest_schema_version, after.checks,
        repaired=broken, backup_path=str(backup),
    )


def _consistency(conn: sqlite3.Connection, version: int) -> list[DoctorCheck]:
    checks = []
    upgrade_rebuilds = rebuilt_by_upgrade(version)
    for index in present(conn):
        if index.name in upgrade_rebuilds:
            # Written by an older rule, it would differ from today's: no fault of the
            # database, and the next open rebuilds it from the rows.
            detail = f"not checked: rebuilt from the rows by the upgrade to version {LATEST_VERSION} on next open"
            checks.append(DoctorCheck(f"index:{index.name}", True, detail))
            continue
        problems = index.check(conn)
        checks.append(DoctorCheck(f"index:{index.name}", not problems, "; ".join(problems) or "consistent"))
    checks.append(_rows(conn))
    checks.append(_audit_coverage(conn))
    checks.append(_lost(conn))
    return checks


def _integrity(conn: sqlite3.Connection) -> DoctorCheck:
    try:
        rows = [row[0] for row in conn.execute("PRAGMA integrity_check(20)")]
    except sqlite3.DatabaseError as exc:
        return DoctorCheck("integrity", False, f"SQLite cannot read the file: {exc}")
    if rows == ["ok"]:
        return DoctorCheck("integrity", True, "ok")
    return DoctorCheck("integrity", False, "; ".join(rows[:5]))


def _schema(conn: sqlite3.Connection) -> tuple[int, DoctorCheck]:
    reason = foreign_reason(conn)
    if reason is not None:  # its user_version, if any, is its own application's
        return 0, DoctorCheck("schema", False, f"not a Mnemosyne database: another application's ({reason})")
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > LATEST_VERSION:
        return version, DoctorCheck(
            "schema", False, f"version {version} is newer than this Mnemosyne ({LATEST_VERSION}); upgrade it"
        )
    if version == 0:
        return version, DoctorCheck("schema", False, "not a Mnemosyne database (no schema)")
    applied = dict(conn.execute("SELECT version, checksum FROM schema_migrations").fetchall())
    edited = [m.version for m in MIGRATIONS if m.version in applied and not m.applied_as(applied[m.version])]
    if edited:
        return version, DoctorCheck("schema", False, f"migrations {edited} differ from this Mnemosyne's")
    note = "" if version == LATEST_VERSION else f" (upgraded to {LATEST_VERSION} on next open)"
    return version, DoctorCheck("schema", True, f"version {version}{note}")


def _rows(conn: sqlite3.Connection) -> DoctorCheck:
    total = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    bad = conn.execute("SELECT count(*) FROM memories WHERE json_valid(metadata) = 0").fetchone()[0]
    if bad:
        return DoctorCheck("rows", False, f"{bad} of {total} memories have unreadable metadata")
    # Versions before times were range-checked could store one a date cannot hold,
    # which then breaks every read of its row. The bound is the one every write is
    # checked against (timeutil.storable): a time accepted is never called damaged.
    present = {row[1] for row in conn.execute("PRAGMA table_info(memories)")}  # older schemas lack some
    columns = [column for column in _TIME_COLUMNS if column in present]
    times = " OR ".join(f"NOT ({column} IS NULL OR {column} BETWEEN ? AND ?)" for column in columns)
    outside = [row[0] for row in conn.execute(
        f"SELECT id FROM memories WHERE {times} LIMIT 6", [EARLIEST, LATEST] * len(columns)
    )]
    if outside:
        shown = ", ".join(outside[:5]) + (", ..." if len(outside) > 5 else "")
        return DoctorCheck(
            "rows", False,
            f"memories with a time outside the years 1 to 9999, which reads cannot show: {shown}; "
            "forget them, or correct their times with SQL",
        )
    return DoctorCheck("rows", True, f"{total} memories")


_TIME_COLUMNS = ("created_at", "recorded_at", "updated_at", "valid_until", "last_accessed_at", "last_seen_at")


def _audit_coverage(conn: sqlite3.Connection) -> DoctorCheck:
    uncovered = conn.execute(
        "SELECT count(*) FROM memories AS m WHERE NOT EXISTS "
        "(SELECT 1 FROM audit_log AS a WHERE a.memory_id = m.id)"
    ).fetchone()[0]
    if uncovered:
        return DoctorCheck("audit coverage", False, f"{uncovered} memories have no audit record")
    return DoctorCheck("audit coverage", True, "every memory has an audit record")


def _lost(conn: sqlite3.Connection) -> DoctorCheck:
    """Memories the audit log says were stored, never forgotten, and are not there."""
    lost = conn.execute(
        "SELECT count(DISTINCT a.memory_id) FROM audit_log AS a "
        "WHERE a.memory_id IS NOT NULL AND a.op IN ('remember', 'import') "
        "AND NOT EXISTS (SELECT 1 FROM memories AS m WHERE m.id = a.memory_id) "
        "AND NOT EXISTS (SELECT 1 FROM audit_log AS f WHERE f.memory_id = a.memory_id AND f.op = 'forget')"
    ).fetchone()[0]
    if lost:
        return DoctorCheck("lost memories", False, f"{lost} stored memories are missing without a forget")
    return DoctorCheck("lost memories", True, "none")


def _file_problem(path: Path) -> str | None:
    try:
        # Read by this name it would be read without its writers' log; and reading an
        # empty file deletes a -wal left over beside it.
        refuse_other_names(path)
        refuse_leftover_wal(path)
    except StorageError as exc:
        return str(exc)
    if not path.exists():
        return f"there is no database at {path}"
    if not path.is_file():
        return f"{path} is not a file"
    # Not open(): closing a descriptor of the file would drop this process's SQLite
    # locks on it. SQLite reads the header itself.
    try:
        conn = open_read_only(path, timeout=30)
        try:
            conn.execute("PRAGMA schema_version").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        if "not a database" in str(exc):
            return f"{path} is not a SQLite database ({exc})"
    except sqlite3.Error as exc:
        return f"cannot open {path} read-only: {exc}"
    except ReadOnlyDatabaseError as exc:  # its folder: SQLite could not read it here
        return str(exc)
    return None


def _as_path(value: object) -> Path:
    if not isinstance(value, (str, Path)) or not str(value).strip():
        raise InvalidInputError(f"db_path must be a non-empty str or Path, got {value!r}")
    return expand_user(value, "db_path")
