"""Keeping the episode-context index (``memories_context_fts``) in step with the rows.

Called inside the write transaction that changed a session's events, so a memory
and the windows of its neighbours always commit together.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from ...core.context import RADIUS, Event, windows

_EVENT_COLUMNS = "seq, content, scope, created_at"


def refresh_contexts(conn: sqlite3.Connection, session_id: str, positions: Iterable[tuple[float, int]]) -> None:
    """Rewrite the windows that changed because events at ``positions`` were added,
    edited or removed. A position is ``(created_at, seq)``, the event order key."""
    keys = sorted(positions)
    if not keys:
        return
    low, high = keys[0], keys[-1]
    # Windows change up to RADIUS events around the edit; computing those windows
    # needs RADIUS more events beyond them.
    reach = 2 * RADIUS
    before = conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM memories WHERE session_id = ? AND kind = 'episodic' "
        "AND (created_at, seq) < (?, ?) ORDER BY created_at DESC, seq DESC LIMIT ?",
        (session_id, *low, reach),
    ).fetchall()[::-1]
    middle = conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM memories WHERE session_id = ? AND kind = 'episodic' "
        "AND (created_at, seq) >= (?, ?) AND (created_at, seq) <= (?, ?) ORDER BY created_at, seq",
        (session_id, *low, *high),
    ).fetchall()
    after = conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM memories WHERE session_id = ? AND kind = 'episodic' "
        "AND (created_at, seq) > (?, ?) ORDER BY created_at, seq LIMIT ?",
        (session_id, *high, reach),
    ).fetchall()
    rows = before + middle + after
    changed = rows[max(0, len(before) - RADIUS) : len(before) + len(middle) + RADIUS]
    _write(conn, rows, {row["seq"] for row in changed})


def refresh_all_contexts(conn: sqlite3.Connection) -> None:
    """Rebuild every window (a migration, or ``doctor --repair``)."""
    conn.execute("DELETE FROM memories_context_fts")
    sessions = [row[0] for row in conn.execute("SELECT DISTINCT session_id FROM memories")]
    for session_id in sessions:
        rows = conn.execute(
            f"SELECT {_EVENT_COLUMNS} FROM memories WHERE session_id = ? AND kind = 'episodic' "
            "ORDER BY created_at, seq",
            (session_id,),
        ).fetchall()
        _write(conn, rows, {row["seq"] for row in rows})


def _write(conn: sqlite3.Connection, rows: list[sqlite3.Row], targets: set[int]) -> None:
    events = [Event(row["seq"], row["content"], row["scope"]) for row in rows]
    texts = windows(events)
    conn.executemany("DELETE FROM memories_context_fts WHERE rowid = ?", [(seq,) for seq in targets])
    conn.executemany(
        "INSERT INTO memories_context_fts (rowid, context) VALUES (?, ?)",
        [(seq, texts[seq]) for seq in targets],
    )
