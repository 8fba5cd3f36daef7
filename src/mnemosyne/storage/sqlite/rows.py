"""Row helpers shared by the SQLite modules: JSON text, audit records, Memory values."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from ...core.timeutil import from_timestamp
from ...models import Memory
from .cjk_index import index_inserted


def select_in(
    conn: sqlite3.Connection, sql: str, values: Sequence[Any], params: Sequence[Any] = ()
) -> list[sqlite3.Row]:
    """Run ``sql`` (``{marks}`` where the IN list goes, after ``params``) over ``values``
    in chunks that stay under SQLite's limit on bound variables."""
    rows: list[sqlite3.Row] = []
    for start in range(0, len(values), 500):
        chunk = values[start : start + 500]
        rows.extend(conn.execute(sql.format(marks=", ".join("?" * len(chunk))), (*params, *chunk)).fetchall())
    return rows


_AUDIT = "INSERT INTO audit_log (at, op, memory_id, session_id, detail) VALUES (?, ?, ?, ?, ?)"


def audit(
    conn: sqlite3.Connection, op: str, memory_id: str | None, session_id: str | None, detail: dict[str, Any]
) -> None:
    conn.execute(_AUDIT, (time.time(), op, memory_id, session_id, dump_json(detail)))


class Inserting:
    """The text index entries and audit records of the rows one write inserts,
    written with one statement each when its block ends without error.

    Written row by row, between the row inserts, they made ingest a quarter slower
    (``bench/speed.py``, 100k memories: 4,800 against 6,250 memories/s).
    """

    def __init__(self, conn: sqlite3.Connection, op: str) -> None:
        self._conn = conn
        self._op = op
        self._texts: list[tuple[int, str]] = []
        self._audits: list[tuple[float, str, str, str, str]] = []

    def add(self, seq: int, memory_id: str, session_id: str, content: str, content_hash: str) -> None:
        self._texts.append((seq, content))
        self._audits.append((time.time(), self._op, memory_id, session_id, dump_json({"hash": content_hash})))

    def __enter__(self) -> Inserting:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if kind is not None:  # the transaction rolls back: nothing to index
            return
        # Indexed here, not by a trigger: see migration 5.
        self._conn.executemany("INSERT INTO memories_fts (rowid, content) VALUES (?, ?)", self._texts)
        index_inserted(self._conn, self._texts)
        self._conn.executemany(_AUDIT, self._audits)


def dump_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


# The columns ``row_to_memory`` reads; the store's inserts bind their values in this order.
_COLUMNS = (
    "id, session_id, scope, kind, status, content, content_hash, source, importance, "
    "metadata, created_at, recorded_at, updated_at, valid_until, access_count, idempotency_key"
)


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

