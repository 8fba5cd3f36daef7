"""Indexes derived from the ``memories`` rows: how to check them and rebuild them.

Rows are the source of truth; everything listed here can be rebuilt from them, so
``mnemosyne doctor`` checks each entry and ``doctor --repair`` rebuilds the ones
that fail. A new derived index (a vectors table, a context full-text index)
registers here with one ``DerivedIndex(...)`` line in ``DERIVED_INDEXES``.

``check`` runs on a private in-memory copy of the database (so checks that SQLite
implements as writes, like FTS5's ``integrity-check``, never touch the real file)
and returns a list of problems (empty when healthy). ``rebuild`` runs inside one
write transaction on the real database.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from .cjk_index import cjk_problems
from .context_index import context_problems, refresh_all_contexts
from .levelling import index_stored
from .vector_index import decode_vectors, sound_rows


@dataclass(frozen=True)
class DerivedIndex:
    name: str
    table: str  # skipped when this table does not exist (older or newer schemas)
    check: Callable[[sqlite3.Connection], list[str]]
    rebuild: Callable[[sqlite3.Connection], None]


def fts_checker(
    fts: str, content: str = "memories", key: str = "seq"
) -> Callable[[sqlite3.Connection], list[str]]:
    """Checks for an external-content FTS5 table kept in step with the rows of ``content``."""

    def check(conn: sqlite3.Connection) -> list[str]:
        problems = []
        missing = conn.execute(
            f"SELECT count(*) FROM {content} AS c WHERE NOT EXISTS "
            f"(SELECT 1 FROM {fts}_docsize AS d WHERE d.id = c.{key})"
        ).fetchone()[0]
        orphans = conn.execute(
            f"SELECT count(*) FROM {fts}_docsize AS d WHERE NOT EXISTS "
            f"(SELECT 1 FROM {content} AS c WHERE c.{key} = d.id)"
        ).fetchone()[0]
        if missing:
            problems.append(f"{missing} row(s) of {content} missing from {fts}")
        if orphans:
            problems.append(f"{orphans} orphan entr(y/ies) in {fts} with no row in {content}")
        try:
            # rank = 1: also compare the index with the text in the content table.
            conn.execute(f"INSERT INTO {fts} ({fts}, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError as exc:
            problems.append(f"{fts} does not match the text in {content} ({exc})")
        return problems

    return check


def fts_rebuilder(fts: str) -> Callable[[sqlite3.Connection], None]:
    def rebuild(conn: sqlite3.Connection) -> None:
        conn.execute(f"INSERT INTO {fts} ({fts}) VALUES ('rebuild')")

    return rebuild


def _damaged_vectors(conn: sqlite3.Connection) -> list[int]:
    """The seqs of stored vectors that are not one of the recorded embedder's
    (a float16 blob of its dimension, ``sound_rows``): truncated or overwritten, a
    vector would be read as another one, or spoil every search by meaning."""
    recorded = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
    try:
        dimension = int(json.loads(recorded[0]).get("dimension") or 0) if recorded else 0
    except (ValueError, TypeError, AttributeError):
        dimension = 0
    if not dimension:
        return []
    size = 2 * dimension
    damaged = [seq for (seq,) in conn.execute(
        "SELECT seq FROM memory_vectors WHERE typeof(vector) != 'blob' OR length(vector) != ?", (size,))]
    rows = conn.execute(
        "SELECT seq, vector FROM memory_vectors WHERE typeof(vector) = 'blob' AND length(vector) = ?", (size,))
    while batch := rows.fetchmany(10_000):
        sound = sound_rows(decode_vectors([vector for _, vector in batch], dimension))
        damaged += [seq for (seq, _), ok in zip(batch, sound, strict=True) if not ok]
    return damaged


def vector_problems(conn: sqlite3.Connection) -> list[str]:
    damaged = len(_damaged_vectors(conn))
    return [f"{damaged} damaged vector(s) (not a vector of the recorded size and unit length); repair drops them "
            "and the backfill embeds their memories again"] if damaged else []


def drop_damaged_vectors(conn: sqlite3.Connection) -> None:
    conn.executemany("DELETE FROM memory_vectors WHERE seq = ?", [(seq,) for seq in _damaged_vectors(conn)])


DERIVED_INDEXES: tuple[DerivedIndex, ...] = (
    DerivedIndex("memories_fts", "memories_fts", fts_checker("memories_fts"), fts_rebuilder("memories_fts")),
    DerivedIndex("memories_context_fts", "memories_context_fts", context_problems, refresh_all_contexts),
    DerivedIndex("memories_cjk_fts", "memories_cjk_fts", cjk_problems, index_stored),
    DerivedIndex("memory_vectors", "memory_vectors", vector_problems, drop_damaged_vectors),
)


def present(conn: sqlite3.Connection) -> list[DerivedIndex]:
    """The registered indexes whose table exists in this database."""
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return [index for index in DERIVED_INDEXES if index.table in tables]
