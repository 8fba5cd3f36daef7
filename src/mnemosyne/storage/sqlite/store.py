"""The SQLite store: rows, full-text index and audit log in one file."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ...core.timeutil import from_timestamp
from ...errors import InvalidInputError, MemoryNotFoundError, NotADatabaseError, StorageError
from ...models import Memory
from ..base import Filters, NewMemory
from .connection import Database
from .migrate import migrate, schema_version

_COLUMNS = (
    "id, session_id, scope, kind, status, content, content_hash, source, importance, "
    "metadata, created_at, recorded_at, updated_at, valid_until, access_count, idempotency_key"
)
_SQLITE_MAGIC = b"SQLite format 3\x00"


class SQLiteStore:
    """Memories in one SQLite file (WAL mode), migrated to the latest schema on open."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        db_path = prepare_path(path)
        self._db = Database(db_path)
        try:
            with self._db.read() as conn:
                # The first real read tells a foreign file from a database.
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")
            self.safety_backup = migrate(self._db)
        except BaseException:
            self._db.close()
            raise

    # -- writes ---------------------------------------------------------------------

    def insert(self, memories: Sequence[NewMemory], op: str = "remember") -> list[str]:
        """Insert memories and their audit records in one transaction.

        A memory whose idempotency key is already stored is not inserted again; the
        stored memory's id is returned in its place.
        """
        ids: list[str] = []
        with self._db.write(op) as conn:
            for memory in memories:
                ids.append(self._insert_one(conn, memory, op))
        return ids

    def _insert_one(self, conn: sqlite3.Connection, memory: NewMemory, op: str) -> str:
        if memory.idempotency_key is not None:
            row = conn.execute(
                "SELECT id FROM memories WHERE idempotency_key = ?", (memory.idempotency_key,)
            ).fetchone()
            if row is not None:
                return str(row[0])
        conn.execute(
            f"INSERT INTO memories ({_COLUMNS}) VALUES ({', '.join('?' * 16)})",
            (
                memory.id, memory.session_id, memory.scope, memory.kind, memory.status,
                memory.content, memory.content_hash, memory.source, memory.importance,
                dump_json(memory.metadata), memory.created_at, memory.recorded_at,
                memory.recorded_at, memory.valid_until, 0, memory.idempotency_key,
            ),
        )
        if memory.episode_id is not None:
            conn.execute("UPDATE memories SET episode_id = ? WHERE id = ?", (memory.episode_id, memory.id))
        audit(conn, op, memory.id, memory.session_id, {"hash": memory.content_hash})
        return memory.id

    def update(self, memory_id: str, viewer_session: str, changes: dict[str, Any]) -> Memory:
        """Apply column changes to a visible memory; audit which fields changed."""
        allowed = {"content", "content_hash", "importance", "metadata", "status", "scope", "valid_until"}
        unknown = set(changes) - allowed
        if unknown:
            raise InvalidInputError(f"cannot update {sorted(unknown)}")
        values = {k: dump_json(v) if k == "metadata" else v for k, v in changes.items()}
        with self._db.write("update a memory") as conn:
            row = self._visible_row(conn, memory_id, viewer_session)
            if values:
                assignments = ", ".join(f"{column} = ?" for column in values)
                conn.execute(
                    f"UPDATE memories SET {assignments}, updated_at = ? WHERE id = ?",
                    (*values.values(), time.time(), memory_id),
                )
                audit(conn, "update", memory_id, row["session_id"], {"fields": sorted(values)})
            updated = conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (memory_id,)
            ).fetchone()
        return row_to_memory(updated)

    def delete(self, memory_id: str, viewer_session: str) -> None:
        """Remove a visible memory from the table and every index; leave a tombstone."""
        with self._db.write("forget a memory") as conn:
            row = self._visible_row(conn, memory_id, viewer_session)
            conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
            audit(conn, "forget", memory_id, row["session_id"], {"hash": row["content_hash"]})

    def import_memories(self, memories: Iterable[NewMemory]) -> int:
        """Insert memories whose id is not stored yet; return how many were added."""
        added = 0
        with self._db.write("import memories") as conn:
            for memory in memories:
                exists = conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory.id,)).fetchone()
                if exists is None:
                    self._insert_one(conn, memory, "import")
                    added += 1
        return added

    def record_event(self, op: str, detail: dict[str, Any]) -> None:
        """Append a database-wide event (a restore, a sleep) to the audit log."""
        with self._db.write(f"record {op}") as conn:
            audit(conn, op, None, None, detail)

    def set_meta(self, key: str, value: str) -> None:
        with self._db.write("record metadata") as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- reads ----------------------------------------------------------------------

    def get(self, memory_id: str, viewer_session: str) -> Memory | None:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE id = ? AND (scope = 'global' OR session_id = ?)",
                (memory_id, viewer_session),
            ).fetchone()
        return None if row is None else row_to_memory(row)

    def search_text(self, query: str, filters: Filters, limit: int) -> list[tuple[Memory, float]]:
        """BM25 over the full-text index, filters applied before the limit.

        ``query`` must already be a safe FTS5 expression (see ``core.lexical``).
        Scores are positive; higher is better.
        """
        where, params = filter_sql(filters, alias="m")
        sql = (
            f"SELECT {', '.join('m.' + c.strip() for c in _COLUMNS.split(','))}, "
            "-bm25(memories_fts) AS score "
            "FROM memories_fts JOIN memories AS m ON m.seq = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND {where} ORDER BY score DESC LIMIT ?"
        )
        with self._db.read() as conn:
            rows = conn.execute(sql, (query, *params, limit)).fetchall()
        return [(row_to_memory(row), float(row["score"])) for row in rows]

    def iter_memories(self) -> Iterator[Memory]:
        """Every stored memory, in id (creation) order, read in pages."""
        last = ""
        while True:
            with self._db.read() as conn:
                rows = conn.execute(
                    f"SELECT {_COLUMNS} FROM memories WHERE id > ? ORDER BY id LIMIT 500", (last,)
                ).fetchall()
            if not rows:
                return
            for row in rows:
                yield row_to_memory(row)
            last = rows[-1]["id"]

    def get_meta(self, key: str) -> str | None:
        with self._db.read() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def counts(self) -> dict[str, dict[str, int]]:
        """Memory counts grouped by scope, status, kind and session."""
        result: dict[str, dict[str, int]] = {}
        with self._db.read() as conn:
            for column in ("scope", "status", "kind", "session_id"):
                rows = conn.execute(
                    f"SELECT {column}, count(*) FROM memories GROUP BY {column} ORDER BY {column}"
                ).fetchall()
                result[column] = {str(key): int(count) for key, count in rows}
        return result

    def schema_version(self) -> int:
        with self._db.read() as conn:
            return schema_version(conn)

    def size_bytes(self) -> int:
        path = Path(self.path)
        return sum(
            p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists()
        )

    def connection(self) -> sqlite3.Connection:
        """This thread's raw connection, for the backup module."""
        return self._db.connect()

    def close(self) -> None:
        self._db.close()

    # -- helpers --------------------------------------------------------------------

    def _visible_row(self, conn: sqlite3.Connection, memory_id: str, viewer_session: str) -> sqlite3.Row:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE id = ? AND (scope = 'global' OR session_id = ?)",
            (memory_id, viewer_session),
        ).fetchone()
        if row is None:
            raise MemoryNotFoundError(memory_id, viewer_session)
        return row


def prepare_path(path: str | Path) -> Path:
    """Validate a database path and create its missing parent directories."""
    if not isinstance(path, (str, Path)) or not str(path).strip():
        raise InvalidInputError(f"db_path must be a non-empty str or Path, got {path!r}")
    db_path = Path(path).expanduser()
    if db_path.is_dir():
        raise InvalidInputError(f"db_path {db_path} is a directory; pass a file path such as {db_path / 'memories.db'}")
    if db_path.exists():
        with open(db_path, "rb") as handle:
            header = handle.read(16)
        if header and header != _SQLITE_MAGIC:
            raise NotADatabaseError(
                f"{db_path} exists but is not a SQLite database; point db_path at a new "
                "file or at a Mnemosyne database",
                db_path,
            )
    try:
        db_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create the folder for {db_path}: {exc}", db_path) from exc
    return db_path


def filter_sql(filters: Filters, alias: str) -> tuple[str, list[Any]]:
    """The WHERE clause for ``filters`` (visibility first, then the user's filters)."""
    a = alias
    clauses = [f"({a}.scope = 'global' OR {a}.session_id = ?)"]
    params: list[Any] = [filters.viewer_session]
    if filters.scope == "session":
        clauses.append(f"{a}.scope = 'session'")
    elif filters.scope == "global":
        clauses.append(f"{a}.scope = 'global'")
    for column, values in (("status", filters.statuses), ("kind", filters.kinds), ("source", filters.sources)):
        if values:
            clauses.append(f"{a}.{column} IN ({', '.join('?' * len(values))})")
            params.extend(values)
    if filters.since is not None:
        clauses.append(f"{a}.created_at >= ?")
        params.append(filters.since)
    if filters.until is not None:
        clauses.append(f"{a}.created_at <= ?")
        params.append(filters.until)
    return " AND ".join(clauses), params


def audit(conn: sqlite3.Connection, op: str, memory_id: str | None, session_id: str | None, detail: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO audit_log (at, op, memory_id, session_id, detail) VALUES (?, ?, ?, ?, ?)",
        (time.time(), op, memory_id, session_id, dump_json(detail)),
    )


def dump_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def row_to_memory(row: sqlite3.Row) -> Memory:
    return Memory(
        id=row["id"],
        content=row["content"],
        source=row["source"],
        importance=row["importance"],
        scope=row["scope"],
        session_id=row["session_id"],
        created_at=from_timestamp(row["created_at"]),
        recorded_at=from_timestamp(row["recorded_at"]),
        metadata=json.loads(row["metadata"]),
        kind=row["kind"],
        status=row["status"],
        valid_until=None if row["valid_until"] is None else from_timestamp(row["valid_until"]),
        access_count=row["access_count"],
    )

