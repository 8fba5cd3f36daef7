"""Retried and repeated writes return the memory already stored, race-free.

Both lookups run inside the caller's ``BEGIN IMMEDIATE`` transaction, so no other
process can insert between the check and the insert; the UNIQUE constraint on
``idempotency_key`` (with ``ON CONFLICT DO NOTHING``) is the last word anyway.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ...core.fingerprint import same_text
from ...errors import InvalidInputError
from ..base import NewMemory
from .rows import dump_json, select_in


def stored_hashes(conn: sqlite3.Connection, memories: Sequence[NewMemory]) -> set[str]:
    """The content hashes of ``memories`` that some stored memory already has.

    A write whose text is stored nowhere repeats nothing: one lookup for a whole
    batch spares most writes the per-memory repeat check.
    """
    hashes = list({m.content_hash for m in memories if m.dedupe_since is not None})
    sql = "SELECT DISTINCT content_hash FROM memories WHERE content_hash IN ({marks})"
    return {row[0] for row in select_in(conn, sql, hashes)}


def existing_id(conn: sqlite3.Connection, memory: NewMemory, text_stored: bool = True) -> str | None:
    """The id of a stored memory this write repeats, or None to insert it.

    ``text_stored=False`` says no stored memory has this content hash (see
    ``stored_hashes``), so only the idempotency key needs looking up.
    """
    if memory.idempotency_key is not None:
        found = for_key(conn, memory)
        if found is not None:
            return found
    if memory.dedupe_since is not None and text_stored:
        # Only a repeat is reused: the same text (up to spacing) with the same
        # source, importance, metadata, expiry and episode. A write that differs in
        # anything else it stores would otherwise be silently dropped. So would a
        # replayed event: "yes" said at 09:00 and again at 09:06 is two events, so an
        # event time given by the caller must match too. A write without one (its
        # event time is when it was recorded) repeats only a write without one.
        implicit_time = memory.created_at == memory.recorded_at
        # A session write repeats a global memory of its own session too: sleep may
        # have made its first copy global since (it is important). Its session still
        # sees that copy, and nothing the write says is private.
        # Not a value sleep found replaced by a newer one: "Friday", then "Tuesday",
        # then "Friday" again is a change back, said anew. One sleep condensed (into
        # a summary, or a copy it kept) is still what stands for it: a replayed
        # history or a retry repeats it, and adds no copy for the next sleep.
        # Sleep changes only what a memory's own write did not give: how often and when
        # it was seen, its strength, and, merging a repeat into it, its importance,
        # raised to the repeat's. A retry of the first write still repeats that copy.
        # Only the content hash may pick the index ("+" keeps the others from it):
        # "episode_id IS NULL" would otherwise walk every memory outside an episode.
        rows = conn.execute(
            "SELECT id, content, importance FROM memories WHERE content_hash = ? AND +session_id = ? "
            "AND (+scope = ? OR (? = 'session' AND +scope = 'global')) AND +status <> 'superseded' "
            "AND +kind = ? AND +recorded_at >= ? AND +source = ? AND +importance >= ? "
            "AND +metadata = ? AND +valid_until IS ? AND +episode_id IS ? "
            "AND (+created_at = ? OR (? AND +created_at = recorded_at)) ORDER BY recorded_at DESC",
            (memory.content_hash, memory.session_id, memory.scope, memory.scope, memory.kind,
             memory.dedupe_since, memory.source, memory.importance, dump_json(memory.metadata),
             memory.valid_until, memory.episode_id, memory.created_at, implicit_time),
        )
        return next((str(row["id"]) for row in rows if same_text(row["content"], memory.content) and (
            row["importance"] == memory.importance or _raised_by_merge(conn, row["id"], row["importance"]))), None)
    return None


def _raised_by_merge(conn: sqlite3.Connection, memory_id: str, importance: float) -> bool:
    """Whether sleep may have raised ``memory_id`` to ``importance`` by merging into it
    a copy that important. Else a write less important than the stored one is not
    its repeat: it would be silently dropped."""
    return conn.execute(
        "SELECT 1 FROM memory_links AS l JOIN memories AS c ON c.id = l.dst_id "
        "WHERE l.src_id = ? AND l.kind = 'merges' AND c.importance = ? LIMIT 1", (memory_id, importance)
    ).fetchone() is not None


def for_key(conn: sqlite3.Connection, memory: NewMemory) -> str | None:
    """The memory stored under ``memory.idempotency_key``, checked to be the same write."""
    row = conn.execute(
        "SELECT id, session_id, scope, content FROM memories WHERE idempotency_key = ?",
        (memory.idempotency_key,),
    ).fetchone()
    if row is None:
        return None
    if row["session_id"] != memory.session_id or not same_text(row["content"], memory.content):
        # Returning the old id here would silently drop this different content. Keys
        # are unique across the database, but another session's private memory is
        # not named: its id would let this session reach it.
        visible = row["session_id"] == memory.session_id or row["scope"] == "global"
        holder = f"memory ({row['id']})" if visible else "memory of another session"
        raise InvalidInputError(
            f"idempotency_key {memory.idempotency_key!r} was already used for a different "
            f"{holder}; use a new key for new content"
        )
    return str(row["id"])
