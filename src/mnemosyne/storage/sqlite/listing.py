"""The listing side of the SQLite store: a span's memories that a listing puts first
(the most important, the newest of equals), however many the span holds."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from ...models import STATUSES
from ..base import Filters
from .connection import Database
from .search import _walks, filter_sql

# A walk of ``most_important`` over a span of up to this many memories reads them all
# by time and sorts them, unless its status has no more: a longer span, or a status
# of few memories, is read by importance. Measured in a session of 100,000: a span
# of 600 took 0.5 ms sorted and 1.6 ms by importance, one of 2,000 1.1 and 0.5 ms;
# a source's 1,150 of a week 1.5 and 0.5 ms.
_SPAN_SORTED = 500


class ListingReads:
    """Mixed into :class:`SQLiteStore`; these only read."""

    _db: Database

    def most_important(self, filters: Filters, limit: int) -> list[int]:
        """The seqs of the ``limit`` memories passing ``filters`` that a listing of
        their span puts first: the most important, the newest of equals first.

        The walks are those of ``SearchReads.latest``, a status at a time. Each
        goes down an importance index from the most important, skipping the
        memories of other times and sources by the index alone, and stops once
        ``limit`` rows pass; but where its status may have many memories and the
        span has few (at most ``_SPAN_SORTED``), it reads the span by time and sorts
        it, or it would pass most of its status's memories looking for those of the
        span. Measured over 100,000 memories of a year: 0.1-1 ms for a day, a week,
        a month or the whole year (a status no memory has: 0.03 ms), where reading
        and sorting a span took up to 100 ms; 12-18 ms where every memory of a long
        span is less important than all the others, which the walks then pass in the
        index.
        """
        where, params = filter_sql(filters, alias="m")
        bounds = [(op, bound) for op, bound in ((">=", filters.since), ("<=", filters.until)) if bound is not None]
        span = "".join(f" AND m.created_at {op} ?" for op, _ in bounds)
        most_first = "ORDER BY m.importance DESC, m.created_at DESC, m.seq DESC"
        found: list[tuple[int, float, float]] = []
        with self._db.read() as conn:
            for walk in _walks(filters):
                condition, condition_params = walk.condition("m")
                short_span: bool | None = None  # counted once a status needs it
                for status in filters.statuses or STATUSES:
                    # A status of few memories (of any source) is walked whole.
                    index = walk.by_importance
                    if not _held_up_to(conn, index, f"{walk.part.format('m')} AND m.status = ?",
                                       [*walk.params, status]):
                        if short_span is None:
                            short_span = _held_up_to(conn, walk.by_time, condition + span,
                                                     [*condition_params, *(bound for _, bound in bounds)])
                        index = walk.by_time if short_span else index
                    found.extend(conn.execute(
                        f"SELECT m.seq, m.importance, m.created_at FROM memories AS m INDEXED BY {index} "
                        f"WHERE {condition} AND m.status = ? AND {where} {most_first} LIMIT ?",
                        [*condition_params, status, *params, limit],
                    ))
        first = sorted({seq: (seq, importance, at) for seq, importance, at in found}.values(),
                       key=lambda row: (-row[1], -row[2], -row[0]))
        return [seq for seq, _, _ in first[:limit]]


def _held_up_to(conn: sqlite3.Connection, index: str, condition: str, params: Sequence[Any]) -> bool:
    """Whether at most ``_SPAN_SORTED`` memories meet ``condition`` (on alias ``m``,
    of columns of ``index``): counted in the index alone, without reading a row."""
    held = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM memories AS m INDEXED BY {index} WHERE {condition} LIMIT ?)",
        [*params, _SPAN_SORTED + 1],
    ).fetchone()[0]
    return bool(held <= _SPAN_SORTED)
