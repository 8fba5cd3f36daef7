"""Bringing the CJK and emoji forms of the indexes level with the rows."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from ...core import cjk
from .context_index import refresh_contexts


def index_stored(conn: sqlite3.Connection) -> None:
    """Index every stored memory that holds CJK or emoji and rewrite the windows
    around them (migration 9, ``doctor --repair``)."""
    conn.execute("DELETE FROM memories_cjk_fts")
    places = []
    rows = conn.execute("SELECT seq, session_id, created_at, content FROM memories ORDER BY seq")
    while batch := rows.fetchmany(10_000):
        held = [row for row in batch if cjk.holds(row[3])]
        conn.executemany(
            "INSERT INTO memories_cjk_fts (rowid, content) VALUES (?, ?)",
            [(seq, cjk.indexed_text(text)) for seq, _, _, text in held],
        )
        places += [(session_id, created_at, seq) for seq, session_id, created_at, _ in held]
    _refresh_windows(conn, places, was_global=True)


def _refresh_windows(conn: sqlite3.Connection, places: Iterable[tuple[str, float, int]], was_global: bool) -> None:
    by_session: dict[str, list[tuple[float, int]]] = {}
    for session_id, created_at, seq in places:
        by_session.setdefault(session_id, []).append((created_at, seq))
    for session_id, positions in by_session.items():
        refresh_contexts(conn, session_id, positions, was_global=was_global)
