"""Bringing the CJK and emoji forms of the indexes level with the rows.

A process of the previous release, still running during a rolling upgrade, stores,
edits, forgets and moves memories without knowing ``memories_cjk_fts``, and writes
context windows as plain text. Migration 8 keeps track of where (the watermark and
the queue, see ``cjk_index``); :func:`catch_up` indexes those memories and rewrites
the windows around those places, when a process of this release opens the database
or sleeps.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from ...core import cjk
from .cjk_index import WATERMARK, reindex
from .context_index import refresh_contexts
from .rows import select_in


def lagging(conn: sqlite3.Connection) -> bool:
    """Whether another writer's changes wait for :func:`catch_up` (two lookups)."""
    behind = conn.execute(
        "SELECT (SELECT coalesce(max(seq), 0) FROM memories) > "
        "(SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?)", (WATERMARK,)
    ).fetchone()[0]
    return bool(behind) or conn.execute("SELECT 1 FROM memories_cjk_pending LIMIT 1").fetchone() is not None


def catch_up(conn: sqlite3.Connection) -> int:
    """Index what other writers stored or edited, and rewrite the windows around every
    place they changed; return how many places."""
    places = conn.execute(
        "SELECT session_id, created_at, seq FROM memories "
        "WHERE seq > (SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?) "
        "UNION SELECT session_id, created_at, seq FROM memories_cjk_pending", (WATERMARK,)
    ).fetchall()
    seqs = list({seq for _, _, seq in places})
    reindex(conn, [(row[0], row[1]) for row in select_in(
        conn, "SELECT seq, content FROM memories WHERE seq IN ({marks})", seqs)])
    # Whether a forgotten or moved memory was global is not known: both kinds of windows are rewritten.
    _refresh_windows(conn, places, was_global=True)
    conn.execute("DELETE FROM memories_cjk_pending")
    _watermark_at_the_top(conn)
    return len(places)


def index_stored(conn: sqlite3.Connection) -> None:
    """Index every stored memory that holds CJK or emoji and rewrite the windows
    around them (migration 9, ``doctor --repair``)."""
    conn.execute("DELETE FROM memories_cjk_fts")
    conn.execute("DELETE FROM memories_cjk_pending")
    places = []
    rows = conn.execute("SELECT seq, session_id, created_at, content FROM memories ORDER BY seq")
    while batch := rows.fetchmany(10_000):
        held = [row for row in batch if cjk.holds(row[3])]
        conn.executemany(
            "INSERT INTO memories_cjk_fts (rowid, content) VALUES (?, ?)",
            [(seq, cjk.indexed_text(text)) for seq, _, _, text in held],
        )
        places += [(session_id, created_at, seq) for seq, session_id, created_at, _ in held]
    _refresh_windows(conn, places, was_global=False)  # each is still stored, and shows its scope
    _watermark_at_the_top(conn)


def _refresh_windows(conn: sqlite3.Connection, places: Iterable[tuple[str, float, int]], was_global: bool) -> None:
    by_session: dict[str, list[tuple[float, int]]] = {}
    for session_id, created_at, seq in places:
        by_session.setdefault(session_id, []).append((created_at, seq))
    for session_id, positions in by_session.items():
        refresh_contexts(conn, session_id, positions, was_global=was_global)


def _watermark_at_the_top(conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE meta SET value = (SELECT coalesce(max(seq), 0) FROM memories) WHERE key = ?", (WATERMARK,))
