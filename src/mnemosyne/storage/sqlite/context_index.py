"""Keeping the episode-context index (``memories_context_fts``) in step with the rows.

Called inside the write transaction that changed a session's events, so a memory
and the windows of its neighbours always commit together. Rewriting only the
windows near a change gives exactly what rebuilding every window would. A window
holding CJK or emoji is stored in the form ``core/cjk.py`` gives it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator

from ...core import cjk
from ...core.context import RADIUS, Event, windows
from .rows import select_in

_EVENT_COLUMNS = "seq, content, scope, created_at"


def refresh_contexts(
    conn: sqlite3.Connection, session_id: str, positions: Iterable[tuple[float, int]], *, was_global: bool = False
) -> None:
    """Rewrite the windows that changed because events at ``positions`` were added,
    edited or removed. A position is ``(created_at, seq)``, the event order key.

    A session memory's window counts every neighbour, but a global memory's counts
    only global ones, which may lie any number of events away; so global windows are
    rewritten too when a global event changed. An event still stored shows its
    scope; ``was_global`` says that an event removed, or now stored as a session
    memory, was global before this transaction.

    >>> refresh_contexts(conn, "agent", [(row["created_at"], row["seq"])])
    """
    keys = sorted(set(positions))
    if not keys:
        return
    texts, events = _windows_near(conn, session_id, keys, globals_only=False)
    scope_at = {(row["created_at"], row["seq"]): row["scope"] for row in events}
    if was_global or any(scope_at.get(key) == "global" for key in keys):
        texts.update(_windows_near(conn, session_id, keys, globals_only=True)[0])
    _write(conn, texts)
    _settle(conn, session_id, keys)


def refresh_all_contexts(conn: sqlite3.Connection) -> None:
    """Rebuild every window (a migration, or ``doctor --repair``)."""
    conn.execute("DELETE FROM memories_context_fts")
    for texts in expected_contexts(conn):
        _write(conn, texts)


def context_problems(conn: sqlite3.Connection) -> list[str]:
    """How the stored windows differ from a full rebuild (``doctor``), one session
    at a time, so memory use stays that of the largest session."""
    wrong = 0
    for texts in expected_contexts(conn):
        sql = "SELECT rowid, context FROM memories_context_fts WHERE rowid IN ({marks})"
        stored: dict[int, str] = {seq: text for seq, text in select_in(conn, sql, list(texts))}
        wrong += sum(stored.get(seq) != cjk.indexed_text(text) for seq, text in texts.items())
    # Windows of memories that should have none (forgotten, or not episodic).
    wrong += conn.execute(
        "SELECT count(*) FROM memories_context_fts AS f WHERE NOT EXISTS "
        "(SELECT 1 FROM memories AS m WHERE m.seq = f.rowid AND m.kind = 'episodic')"
    ).fetchone()[0]
    return [f"{wrong} episode context window(s) differ from their neighbours' text"] if wrong else []


def expected_contexts(conn: sqlite3.Connection) -> Iterator[dict[int, str]]:
    """Every window computed from the rows, one session at a time (``{seq: text}``)."""
    sessions = [row[0] for row in conn.execute("SELECT DISTINCT session_id FROM memories")]
    for session_id in sessions:
        rows = conn.execute(
            f"SELECT {_EVENT_COLUMNS} FROM memories WHERE session_id = ? AND kind = 'episodic' "
            "ORDER BY created_at, seq",
            (session_id,),
        ).fetchall()
        yield windows([Event(*row) for row in rows])  # any row factory


def _windows_near(
    conn: sqlite3.Connection, session_id: str, keys: list[tuple[float, int]], *, globals_only: bool
) -> tuple[dict[int, str], list[sqlite3.Row]]:
    """The session windows (or, ``globals_only``, the global ones) near ``keys``,
    and the events from the first key to the last."""
    low, high = keys[0], keys[-1]
    where = "session_id = ? AND kind = 'episodic'" + (" AND scope = 'global'" if globals_only else "")
    # Windows change up to RADIUS events around the edit; computing those windows
    # needs RADIUS more events beyond them.
    reach = 2 * RADIUS
    before = conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM memories WHERE {where} "
        "AND (created_at, seq) < (?, ?) ORDER BY created_at DESC, seq DESC LIMIT ?",
        (session_id, *low, reach),
    ).fetchall()[::-1]
    middle = conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM memories WHERE {where} "
        "AND (created_at, seq) >= (?, ?) AND (created_at, seq) <= (?, ?) ORDER BY created_at, seq",
        (session_id, *low, *high),
    ).fetchall()
    after = conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM memories WHERE {where} "
        "AND (created_at, seq) > (?, ?) ORDER BY created_at, seq LIMIT ?",
        (session_id, *high, reach),
    ).fetchall()
    rows = before + middle + after
    near = rows[max(0, len(before) - RADIUS) : len(before) + len(middle) + RADIUS]
    texts = windows([Event(row["seq"], row["content"], row["scope"], row["created_at"]) for row in rows])
    return {row["seq"]: texts[row["seq"]] for row in near if (row["scope"] == "global") == globals_only}, middle


def _write(conn: sqlite3.Connection, texts: dict[int, str]) -> None:
    # One delete batch, then one insert batch, in rowid order: FTS5 flushes its
    # pending terms to disk when a write goes back below a rowid it already holds.
    seqs = sorted(texts)
    conn.executemany("DELETE FROM memories_context_fts WHERE rowid = ?", [(seq,) for seq in seqs])
    conn.executemany(
        "INSERT INTO memories_context_fts (rowid, context) VALUES (?, ?)",
        [(seq, cjk.indexed_text(texts[seq])) for seq in seqs],
    )


def _settle(conn: sqlite3.Connection, session_id: str, keys: list[tuple[float, int]]) -> None:
    """Take the places whose windows were just rewritten off the queue of changes to
    bring level (see ``levelling.py``): the triggers queue this release's own too."""
    if conn.execute("SELECT 1 FROM memories_cjk_pending WHERE session_id = ? LIMIT 1", (session_id,)).fetchone():
        conn.executemany(
            "DELETE FROM memories_cjk_pending WHERE session_id = ? AND created_at = ? AND seq = ?",
            [(session_id, *key) for key in keys],
        )
