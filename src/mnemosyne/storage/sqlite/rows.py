"""Row helpers shared by the SQLite modules: JSON text, audit records, Memory values."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from ...core.timeutil import from_timestamp
from ...models import Memory


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


def audit(
    conn: sqlite3.Connection, op: str, memory_id: str | None, session_id: str | None, detail: dict[str, Any]
) -> None:
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

