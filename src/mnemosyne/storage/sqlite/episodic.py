"""Episodic reads and writes on SQLite: explicit episodes, timelines, neighbours."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

from ...models import Memory
from .rows import _COLUMNS, row_to_memory
from .store import SQLiteStore

_VISIBLE = "(scope = 'global' OR session_id = ?)"
# The history: everything that happened, whatever sleep made of it since.
_EVENT_STATUSES = ("active", "consolidated", "superseded", "expired")


class Event(NamedTuple):
    memory: Memory
    episode_id: str | None
    # When, as stored: ``memory.created_at`` is rounded to the microsecond, and the
    # timeline's order (and its ties) are the stored value's.
    at: float


class EpisodicStore:
    """Episode rows and time-ordered reads over one :class:`SQLiteStore`."""

    def __init__(self, store: SQLiteStore) -> None:
        self._db = store._db

    def start_episode(self, episode_id: str, session_id: str, label: str) -> float:
        """Record an episode as begun; return when."""
        started_at = time.time()
        with self._db.write("start an episode") as conn:
            conn.execute(
                "INSERT INTO episodes (id, session_id, label, started_at) VALUES (?, ?, ?, ?)",
                (episode_id, session_id, label, started_at),
            )
        return started_at

    def end_episode(
        self, episode_id: str, session_id: str, label: str, started_at: float, action: str = "end an episode"
    ) -> None:
        """Record an episode as ended, and as begun again if its row is gone: a backup
        restored while its block ran holds no row for it, and the memories written
        since would name an episode with no label that never ends."""
        with self._db.write(action) as conn:
            conn.execute(
                "INSERT INTO episodes (id, session_id, label, started_at, ended_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET ended_at = excluded.ended_at",
                (episode_id, session_id, label, started_at, time.time()),
            )

    def tag_episode(self, memory_ids: Sequence[str], episode_id: str) -> None:
        with self._db.write("tag memories with their episode") as conn:
            conn.executemany(
                "UPDATE memories SET episode_id = ? WHERE id = ?", [(episode_id, i) for i in memory_ids]
            )

    def episode_rows(self, session_id: str) -> dict[str, tuple[str, float | None]]:
        """Explicit episodes of a session: id -> (label, ended_at)."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT id, label, ended_at FROM episodes WHERE session_id = ?", (session_id,)
            ).fetchall()
        return {row["id"]: (row["label"], row["ended_at"]) for row in rows}

    def events(
        self, viewer: str, session_id: str, since: float | None, until: float | None,
        limit: int | None, kinds: Sequence[str] = ("episodic", "fact"), before: float | None = None,
    ) -> list[Event]:
        """A session's events visible to ``viewer``, oldest first: the latest ``limit``
        of them (None: all). ``since`` and ``until`` are inclusive, ``before`` is not."""
        clauses = [_VISIBLE, "session_id = ?", _in("kind", kinds), _in("status", _EVENT_STATUSES)]
        params: list[object] = [viewer, session_id, *kinds, *_EVENT_STATUSES]
        if since is not None:
            clauses.append("created_at >= ?")
            params.append(since)
        if until is not None:
            clauses.append("created_at <= ?")
            params.append(until)
        if before is not None:
            clauses.append("created_at < ?")
            params.append(before)
        where = " AND ".join(clauses)
        sql = f"SELECT {_COLUMNS}, episode_id FROM memories WHERE {where}"
        if limit is None:
            sql += " ORDER BY created_at, id"
        else:  # the latest ``limit``, put back in the order they happened
            sql = f"SELECT * FROM ({sql} ORDER BY created_at DESC, id DESC LIMIT ?) ORDER BY created_at, id"
            params.append(limit)
        with self._db.read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [Event(row_to_memory(row), row["episode_id"], row["created_at"]) for row in rows]

    def neighbours(self, viewer: str, memory: Memory, n: int) -> tuple[Memory, ...]:
        """The ``n`` events just before and just after ``memory`` in its session, as
        its timeline shows them."""
        base = (f"SELECT {_COLUMNS} FROM memories WHERE {_VISIBLE} AND session_id = ? "
                f"AND kind != 'summary' AND {_in('status', _EVENT_STATUSES)} AND id != ?")
        with self._db.read() as conn:
            # The stored time, not ``memory.created_at`` (rounded to the microsecond):
            # an event at the same instant must fall on the side its id puts it.
            stored = conn.execute("SELECT created_at FROM memories WHERE id = ?", (memory.id,)).fetchone()
            at = memory.created_at.timestamp() if stored is None else stored[0]
            before = conn.execute(
                f"{base} AND (created_at, id) < (?, ?) ORDER BY created_at DESC, id DESC LIMIT ?",
                (viewer, memory.session_id, *_EVENT_STATUSES, memory.id, at, memory.id, n),
            ).fetchall()
            after = conn.execute(
                f"{base} AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?",
                (viewer, memory.session_id, *_EVENT_STATUSES, memory.id, at, memory.id, n),
            ).fetchall()
        return tuple(row_to_memory(row) for row in [*reversed(before), *after])

    def summaries_of(self, viewer: str, memory_ids: Sequence[str]) -> dict[str, Memory]:
        """For each id summarised by a visible summary: that summary."""
        found: dict[str, Memory] = {}
        with self._db.read() as conn:
            for start in range(0, len(memory_ids), 500):
                chunk = list(memory_ids[start:start + 500])
                # CROSS JOIN keeps the links first, found by their ids: left to itself
                # SQLite drives from ``memories`` through the OR on scope and session,
                # reading every visible memory for each chunk (98 ms against 0.25 ms a
                # chunk at 100,000 memories; 13 s for the episodes of one such session).
                rows = conn.execute(
                    f"SELECT l.dst_id AS source, {', '.join('m.' + c.strip() for c in _COLUMNS.split(','))} "
                    "FROM memory_links AS l CROSS JOIN memories AS m ON m.id = l.src_id "
                    f"WHERE l.kind = 'summarises' AND (m.scope = 'global' OR m.session_id = ?) "
                    f"AND l.dst_id IN ({', '.join('?' * len(chunk))})",
                    (viewer, *chunk),
                ).fetchall()
                for row in rows:
                    found[row["source"]] = row_to_memory(row)
        return found


def _in(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join('?' * len(values))})"
