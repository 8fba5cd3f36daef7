"""Keeping ``memories_cjk_fts`` (memories holding CJK or emoji, indexed in the form
``core/cjk.py`` gives them) in step with the rows.

This release indexes a memory's text there as it inserts or edits it, in the same
transaction; triggers take a forgotten or edited memory's text out, whoever writes.
What a process of the previous release writes meanwhile (see migration 9) is
noted here and brought level by ``levelling.catch_up``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from ...core import cjk

WATERMARK = "cjk_indexed_through"


def index_inserted(conn: sqlite3.Connection, texts: Sequence[tuple[int, str]]) -> None:
    """Index the memories this write inserted (``(seq, content)``, in seq order) and
    move the watermark past them. Another writer's memories below them, stored since
    the watermark, are queued for ``levelling.catch_up``."""
    if not texts:
        return
    conn.execute(
        "INSERT OR IGNORE INTO memories_cjk_pending (session_id, created_at, seq) "
        "SELECT session_id, created_at, seq FROM memories "
        "WHERE seq > (SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?) AND seq < ?",
        (WATERMARK, texts[0][0]),
    )
    conn.executemany(
        "INSERT INTO memories_cjk_fts (rowid, content) VALUES (?, ?)",
        [(seq, cjk.indexed_text(text)) for seq, text in texts if cjk.holds(text)],
    )
    conn.execute("UPDATE meta SET value = ? WHERE key = ?", (str(texts[-1][0]), WATERMARK))


def index_edited(conn: sqlite3.Connection, seq: int, session_id: str, created_at: float, text: str) -> None:
    """Index a memory's new text (a trigger took the old one out), and take it off
    the queue of changes to bring level: this write saw to it."""
    reindex(conn, [(seq, text)])
    conn.execute(
        "DELETE FROM memories_cjk_pending WHERE session_id = ? AND created_at = ? AND seq = ?",
        (session_id, created_at, seq),
    )


def reindex(conn: sqlite3.Connection, texts: Iterable[tuple[int, str]]) -> None:
    """Replace the entries of the memories ``(seq, content)`` with their text now."""
    ordered = sorted(texts)
    conn.executemany("DELETE FROM memories_cjk_fts WHERE rowid = ?", [(seq,) for seq, _ in ordered])
    conn.executemany(
        "INSERT INTO memories_cjk_fts (rowid, content) VALUES (?, ?)",
        [(seq, cjk.indexed_text(text)) for seq, text in ordered if cjk.holds(text)],
    )


def cjk_problems(conn: sqlite3.Connection) -> list[str]:
    """How ``memories_cjk_fts`` differs from the rows (``doctor``)."""
    expected: dict[int, str] = {}
    rows = conn.execute("SELECT seq, content FROM memories")
    while batch := rows.fetchmany(10_000):
        expected.update((seq, cjk.indexed_text(text)) for seq, text in batch if cjk.holds(text))
    stored = dict(conn.execute("SELECT rowid, content FROM memories_cjk_fts").fetchall())
    problems = []
    wrong = sum(stored.get(seq) != text for seq, text in expected.items())
    if wrong:
        problems.append(f"{wrong} memor(y/ies) with CJK or emoji text missing from memories_cjk_fts, or stale")
    orphans = len(stored.keys() - expected.keys())
    if orphans:
        problems.append(f"{orphans} entr(y/ies) in memories_cjk_fts with no such memory")
    try:
        conn.execute("INSERT INTO memories_cjk_fts (memories_cjk_fts, rank) VALUES ('integrity-check', 1)")
    except sqlite3.DatabaseError as exc:
        problems.append(f"memories_cjk_fts does not match its text ({exc})")
    return problems
