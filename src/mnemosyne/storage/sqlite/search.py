"""The search side of the SQLite store: text and vector hits, what ranking reads
of them, what stands for a consolidated hit, and the latest memories of a span."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ...core.lexical import ascii_words, may_share_stem
from ...core.signature import same_embedder
from ...models import Memory
from ..base import Filters, Neighbours
from .connection import Database
from .rows import _COLUMNS, row_to_memory, select_in
from .vector_index import VectorIndex


class SearchReads:
    """Mixed into :class:`SQLiteStore`; these only read: nothing here writes to the database."""

    _db: Database
    _index: VectorIndex | None
    _frequencies: dict[str, int]
    _frequencies_as_of: tuple[int, str]
    _sources: tuple[tuple[int, str, int], frozenset[str] | None]

    def search_text(
        self, queries: Mapping[str, Sequence[str]], filters: Filters, limit: int,
        fallbacks: Mapping[str, str] | None = None, wanted: int = 0,
    ) -> dict[str, list[tuple[int, float]]]:
        """BM25 hits per indexed field: ``{"content": [(seq, score)...], "context": [...]}``.

        ``queries`` maps a field ("content", "context") to safe FTS5 queries (see
        ``core.lexical.fts_queries``); a memory's score in a field is its best over
        that field's queries, in each of its FTS tables (the content of a memory
        holding CJK or emoji is in two: as stored, and split as ``core/cjk.py``
        splits it). Each field has tables of its own, so its own length
        normalisation; filters apply before the limit. Higher is better.

        Joining every match to its memory row to filter it costs as much as scoring
        it, and filters usually reject few matches. So each query ranks its best
        ``2 * limit`` matches by BM25 alone, one lookup filters all of them, and only
        a query left with too few passing matches runs again with the filters
        joined in. Either way a query yields exactly its best passing matches: a
        passing match outside its first ranking scores no higher than any inside.
        The ``fallbacks`` queries (see ``core.lexical.fts_fallback``) run, with the
        filters joined in, when the filters rejected matches and fewer than
        ``wanted`` memories passed in all fields together: they score every memory
        holding a common term, which costs as much as the budget saves, so only
        when the results would otherwise fall short.
        """
        where, params = filter_sql(filters, alias="m")
        wide = limit * _OVERFETCH
        best: dict[str, dict[int, float]] = {field: {} for field in queries}
        few: list[list[int] | None] = []  # the memories passing the filters, if few; looked up once

        def filtered(table: str, query: str, limit: int) -> list[tuple[int, float]]:
            """The best matches of ``query`` among the memories passing the filters.

            Joined in, the filters are checked for every match, in every session: a
            common word's fallback from a session of 50 memories in a database of
            100,000 cost 8-30 ms a table. Where few memories pass, only their rows
            are scored: 3-8 ms (FTS5 still reads the word's postings)."""
            if not few:
                few.append(_few_passing(conn, filters, where, params))
            among = few[0]
            if among is None:
                return _ranked(conn, table, query, limit, where, params)
            return _ranked(conn, table, query, limit, among=among) if among else []

        with self._db.read() as conn:
            ranked = {
                (field, table, query): _ranked(conn, table, query, wide)
                for field, field_queries in queries.items()
                for query in field_queries
                for table in _FIELD_TABLES[field]
            }
            # NOT INDEXED: look the rows up by seq; the planner may otherwise scan a status index.
            check = f"SELECT m.seq FROM memories AS m NOT INDEXED WHERE {where} AND m.seq IN ({{marks}})"
            seen = list({seq for rows in ranked.values() for seq, _ in rows})
            passing = {row[0] for row in select_in(conn, check, seen, params)}
            for (field, table, query), rows in ranked.items():
                hits = [(seq, score) for seq, score in rows if seq in passing]
                if len(hits) < limit and len(rows) == wide:
                    hits = filtered(table, query, limit)
                for seq, score in hits:
                    best[field][seq] = max(score, best[field].get(seq, score))
            found = {seq for scores in best.values() for seq in scores}
            if fallbacks and len(found) < wanted and len(passing) < len(seen):
                for field, fallback in fallbacks.items():
                    for table in _FIELD_TABLES[field]:
                        for seq, score in filtered(table, fallback, limit):
                            best[field][seq] = max(score, best[field].get(seq, score))
        return {field: sorted(scores.items(), key=lambda hit: -hit[1])[:limit] for field, scores in best.items()}

    def text_scores(self, query: str, seqs: Mapping[str, Collection[int]]) -> dict[str, list[tuple[int, float]]]:
        """The BM25 of ``query`` (safe FTS5 syntax) of the memories at ``seqs`` in each
        field (``{"content": seqs, ...}``), however far down a search's ranking they
        are; those it does not match are left out.

        One query's BM25 of a memory weighs each phrase by how many memories of the
        whole index hold it, whichever memories the query returns: these scores and
        those of :meth:`search_text` compare.

        The seqs are checked as each match is read (the ``+`` keeps them from FTS5):
        handed to FTS5, each would run the query again, and BM25 would count the
        memories holding each phrase again. Measured at 100k memories for 200 seqs:
        10-500 ms that way, 0.2-15 ms this way (more for words in most memories).
        """
        scored: dict[str, list[tuple[int, float]]] = {}
        with self._db.read() as conn:
            for field, wanted in seqs.items():
                listed = json.dumps(sorted(wanted))
                best: dict[int, float] = {}
                for table in _FIELD_TABLES[field] if wanted else ():
                    rows = conn.execute(
                        f"SELECT rowid, -bm25({table}) FROM {table} WHERE {table} MATCH ? "
                        "AND +rowid IN (SELECT value FROM json_each(?))",
                        (query, listed),
                    )
                    for seq, score in rows:
                        best[int(seq)] = max(float(score), best.get(int(seq), float(score)))
                scored[field] = list(best.items())
        return scored

    def term_frequencies(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        """How many memories contain each term (in all of their content's indexes),
        and roughly how many memories there are (the highest seq).

        Counting a common term reads all its postings, so counts are kept while
        memories are only added, up to 10% more: a term's share then moves little.
        A forget or a sleep (anything that changes the index epoch) may move one
        term a lot, and a term no memory holds yet may be about to become common:
        those counts are taken again."""
        counts: dict[str, int] = {}
        with self._db.read() as conn:
            total, epoch = _as_of(conn)
            cache = self._frequencies  # threads share it: work on one dict, swap whole
            counted_at, epoch_then = self._frequencies_as_of
            if epoch != epoch_then or abs(total - counted_at) > 0.1 * max(total, 1):
                cache = {}
                self._frequencies, self._frequencies_as_of = cache, (total, epoch)
            for term in terms:
                count = cache.get(term)
                if count is None:
                    count = int(conn.execute(_COUNT, (f'"{term}"',)).fetchone()[0])
                    if count:
                        cache[term] = count
                counts[term] = count
        return counts, total

    def sources(self, limit: int) -> frozenset[str] | None:
        """Every source a memory of this database has (in any session, any status), or
        None when there are more than ``limit``.

        A database has few sources and many memories: they are read once, down a
        source index from one to the next, then only those of the memories added
        since, and again after anything else that changes the index epoch (a
        forget, a sleep, a restore)."""
        with self._db.read() as conn:
            as_of = _as_of(conn)
            then, known = self._sources  # threads share it: swap it whole
            if then == (*as_of, limit):
                return known
            if then[1:] == (as_of[1], limit) and as_of[0] > then[0]:
                # Sources are only added: past the limit, a database stays past it.
                known = None if known is None else _at_most(limit, known.union(_sources_since(conn, then[0])))
            else:
                known = _at_most(limit, (source for (source,) in conn.execute(_DISTINCT_SOURCES, (limit + 1,))))
            self._sources = (*as_of, limit), known
        return known

    def search_vectors(
        self, query: np.ndarray, filters: Filters, limit: int, embedder: dict[str, Any], field_rank: int = 0
    ) -> Neighbours:
        """Cosine hits ``(seq, similarity)`` from the in-process index, filters first,
        and where the field begins (see ``VectorIndex.nearest``).

        Empty when ``embedder`` is not the one that made this database's vectors
        (another process switched models): comparing across models means nothing.
        """
        with self._db.read() as conn:
            recorded = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
            if recorded is None or not same_embedder(json.loads(recorded[0]), embedder):
                return Neighbours([], None)
            if self._index is None or self._index.dimension != len(query):
                self._index = VectorIndex(len(query))
            self._index.sync(conn)
        return self._index.nearest(query, filters, limit, field_rank)

    def similarities(self, query: np.ndarray, seqs: Iterable[int]) -> list[tuple[int, float]]:
        """``(seq, similarity)`` of ``query`` to each memory's vector, from the index as
        the last ``search_vectors`` left it (see :meth:`window_similarities`); those
        without a vector are left out."""
        return [] if self._index is None else self._index.similarities(query, seqs)

    def closeness(self, seqs: Sequence[int]) -> np.ndarray:
        """The cosines between ``seqs``' vectors, rows and columns in their order (0
        where either has none), from the index as the last ``search_vectors`` left it
        (see :meth:`similarities`)."""
        return np.zeros((len(seqs), len(seqs))) if self._index is None else self._index.closeness(seqs)

    def window_similarities(self, query: np.ndarray, seqs: Iterable[int], max_gap_s: float) -> list[tuple[int, float]]:
        """``(seq, similarity)`` of ``query`` to each memory's episode window of
        vectors (see ``VectorIndex.window_similarities``), from the index as the
        last ``search_vectors`` left it: call it after a search that found hits, so
        the index is current and made by the query's embedder."""
        return [] if self._index is None else self._index.window_similarities(query, seqs, max_gap_s)

    def neighbour_similarities(self, seqs: Iterable[int], max_gap_s: float) -> list[tuple[int, float]]:
        """``(seq, similarity)`` of each memory to its episode neighbours (see
        ``VectorIndex.neighbour_similarities``), from the index as the last
        ``search_vectors`` left it (see :meth:`window_similarities`)."""
        return [] if self._index is None else self._index.neighbour_similarities(seqs, max_gap_s)

    def without_vectors(self, seqs: Iterable[int]) -> list[int]:
        """The ``seqs`` the index holds no vector for, as the last ``search_vectors``
        left it (a damaged vector counts as none). Asking the index, not the table:
        reading a memory's vector row costs a page per candidate."""
        return list(seqs) if self._index is None else self._index.lacking(seqs)

    def representatives(
        self, seqs: Iterable[int], filters: Filters, terms: Collection[str] = (),
        within: tuple[float, float] | None = None,
    ) -> dict[int, int | None]:
        """For each consolidated memory among ``seqs``: the newest active memory
        passing ``filters`` that merged or summarised it, directly or through a
        chain (a duplicate merged into a copy that a summary then condensed, or
        into a copy that a newer value then superseded); None if there is none.

        The representative is what recall returns, so it must pass the filters the
        hit passed: a summary by source "sleep" is no answer to ``source="chat"``.
        Nor does a summary or a kept copy stand for a memory holding a query term (of
        ``terms``) that it lacks: a summary without "Dana" is no answer to "who paged
        Dana", nor a kept copy to the words a repeat added around it ("Confirmed
        again: ..."). Then the newest one up the chain that holds them stands for it
        (a repeat merged into a copy that a summary left active is that copy), and
        only where none does is the memory returned itself. (A newer value lacks the
        old one's words on purpose: through a supersede, it still stands for it.)

        A time asked for keeps to itself: a memory made in ``within`` (a ``[start,
        end)`` span of time a query names) is stood for only by one made then too,
        and one passing the filters' ``since`` and ``until`` only by one that passes
        them. A repeat of yesterday merged into a copy kept from three weeks before is
        what happened yesterday, and that copy is not: the earliest of yesterday's
        repeats of it is returned itself and stands for the others, and for that
        copy too where it reads the very same (the result then maps an active
        memory to a consolidated one).
        """
        where, params = filter_sql(dataclasses.replace(filters, since=None, until=None), alias="m")
        with self._db.read() as conn:
            # NOT INDEXED: look the hits up by seq; by the status index the planner
            # would visit every consolidated memory.
            chains = select_in(
                conn,
                "WITH RECURSIVE up (start, id, newer) AS ("
                "  SELECT d.seq, d.id, 0 FROM memories AS d NOT INDEXED"
                "  WHERE d.status = 'consolidated' AND d.seq IN ({marks})"
                "  UNION SELECT up.start, l.src_id, up.newer OR l.kind = 'supersedes'"
                "  FROM up JOIN memory_links AS l ON l.dst_id = up.id"
                "  WHERE l.kind IN ('merges', 'summarises', 'supersedes')"
                ") SELECT up.start, s.seq, up.newer FROM up "
                "LEFT JOIN memories AS s ON s.id = up.id AND s.status = 'active'",
                list(dict.fromkeys(seqs)),
            )
            # When each hit and each memory that may stand for one (but for its time)
            # was made, and what the hits say.
            made = {row["seq"]: row for row in select_in(
                conn, f"SELECT m.seq, m.created_at, m.content_hash, {where} AS passes FROM memories AS m NOT INDEXED "
                "WHERE m.seq IN ({marks})", list({seq for row in chains for seq in row[:2] if seq is not None}), params,
            )}
            timely = _of_the_time_asked(filters, within, {seq: row["created_at"] for seq, row in made.items()})
            # Per hit, those that may stand for it; a newer value stands whatever its
            # words (one reached both ways counts as one).
            ups: dict[int, dict[int, bool]] = {start: {} for start, _, _ in chains}
            elsewhen: dict[int, int] = {}  # a hit that one of another time stands for
            for start, candidate, newer in chains:
                if candidate is None or not made[candidate]["passes"]:
                    continue
                if timely(start, candidate):
                    ups[start][candidate] = ups[start].get(candidate, False) or bool(newer)
                else:
                    elsewhen[start] = max(candidate, elsewhen.get(start, candidate))
            held: dict[int, set[str]] = {}
            if terms:
                # Every kept copy and summary up the chain, not just the newest: a
                # summary may lack the words the copy it left active holds.
                worded = {start for start, up in ups.items() if not all(up.values())}
                asked = {*worded, *(rep for start in worded for rep, newer in ups[start].items() if not newer)}
                if asked:
                    contents = {row["seq"]: row["content"] for row in select_in(
                        conn, "SELECT seq, content FROM memories WHERE seq IN ({marks})", list(asked))}
                    held = _terms_held(conn, terms, contents)
            standing_for: dict[int, int | None] = {}
            for start, up in ups.items():
                # The newest that says what was asked; None (returned itself) if none does.
                standing_for[start] = next(
                    (rep for rep in sorted(up, reverse=True) if up[rep] or not terms or held[start] <= held[rep]),
                    None,
                )
        standing_for.update(_earliest_of_each_repeat(
            {start: rep for start, rep in elsewhen.items() if standing_for.get(start) is None}, made))
        return standing_for

    def ranking_facts(self, seqs: Iterable[int]) -> dict[int, sqlite3.Row]:
        """What ranking needs of each candidate (importance, created_at, access_count,
        session_id, scope, source, length, status, content_hash): a light read, so
        only the final results pay for decoding."""
        with self._db.read() as conn:
            rows = select_in(
                conn,
                "SELECT seq, importance, created_at, access_count, session_id, scope, source, "
                "length(content) AS length, status, content_hash FROM memories WHERE seq IN ({marks})",
                list(dict.fromkeys(seqs)),
            )
        return {row["seq"]: row for row in rows}

    def contents_by_seq(self, seqs: Iterable[int]) -> dict[int, str]:
        """The text of the memories at ``seqs`` (those still there)."""
        with self._db.read() as conn:
            rows = select_in(conn, "SELECT seq, content FROM memories WHERE seq IN ({marks})", list(seqs))
        return {int(seq): str(content) for seq, content in rows}

    def latest(self, filters: Filters, limit: int, scanned: int | None = None) -> list[int]:
        """The seqs of the ``limit`` latest memories passing ``filters``, newest first:
        exactly, or among the ``scanned`` latest of the ``since``..``until`` span in
        each walk.

        The planner would rather take every active memory by status and sort them
        (20-40 ms at 100k), so two walks go down a time index from the newest and stop
        after ``limit`` rows pass: one over the viewer's own memories, one over every
        session's shared ones; for filters naming sources, the same two for each
        source, down its own stretch of a source index. Neither passes through what
        the viewer may not see, but other filters that pass few of them walk the
        whole span: 40-50 ms over 100k memories of a day. ``scanned`` bounds that,
        where other searches also look through the span.
        """
        where, params = filter_sql(filters, alias="m")
        newest_first = "ORDER BY created_at DESC, seq DESC"
        if scanned is None:
            walks = [(f"memories AS m INDEXED BY {walk.by_time} WHERE {condition} AND {where} {newest_first}",
                      condition_params)
                     for walk in _walks(filters) for condition, condition_params in [walk.condition("m")]]
        else:
            # The LIMIT keeps the inner walk apart (SQLite does not merge a limited
            # subquery into an outer query that filters it), and the outer query reads
            # it in its order, newest first, stopping at its own LIMIT.
            span, span_params = filter_sql(Filters(filters.viewer_session, since=filters.since,
                                                   until=filters.until, statuses=()), alias="s")
            walks = [(f"(SELECT {_FILTERED_COLUMNS} FROM memories AS s INDEXED BY {walk.by_time} "
                      f"WHERE {condition} AND {span} {newest_first} LIMIT ?) AS m WHERE {where}",
                      [*condition_params, *span_params, scanned])
                     for walk in _walks(filters) for condition, condition_params in [walk.condition("s")]]
        with self._db.read() as conn:
            found = [
                row
                for walk, walk_params in walks
                for row in conn.execute(f"SELECT seq, created_at FROM {walk} LIMIT ?", [*walk_params, *params, limit])
            ]
        newest = sorted(dict(found).items(), key=lambda row: (-row[1], -row[0]))
        return [seq for seq, _ in newest[:limit]]

    def memories_by_seq(self, seqs: Iterable[int], filters: Filters) -> dict[int, Memory]:
        """The memories at ``seqs`` that still pass ``filters``.

        The vector search reads in a snapshot of its own: in between, another process
        may forget a memory and a new one may take its seq. Filtering again means
        such a newcomer is returned only if the query could have found it.
        """
        where, params = filter_sql(filters, alias="m")
        # NOT INDEXED: look the rows up by seq; the planner may otherwise scan a status index.
        with self._db.read() as conn:
            rows = select_in(
                conn, f"SELECT seq, {_COLUMNS} FROM memories AS m NOT INDEXED WHERE {where} AND seq IN ({{marks}})",
                list(dict.fromkeys(seqs)), params,
            )
        return {row["seq"]: row_to_memory(row) for row in rows}


# How many times ``limit`` matches a text search ranks before applying filters.
_OVERFETCH = 2
# Up to this many memories passing a search's filters are scored by their seqs, not
# by joining the filters in (see ``search_text``); reading them costs up to 1 ms.
_FEW_PASSING = 1_000
# The columns ``filter_sql`` reads, and those ``latest`` returns.
_FILTERED_COLUMNS = "seq, session_id, scope, status, kind, source, created_at, valid_until"
# The text indexes of each field; a memory is in memories_cjk_fts only if its text
# holds CJK or emoji (see core/cjk.py).
_FIELD_TABLES = {"content": ("memories_fts", "memories_cjk_fts"), "context": ("memories_context_fts",)}
FTS_TABLES = tuple(table for tables in _FIELD_TABLES.values() for table in tables)
_COUNT = (
    "SELECT (SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1) "
    "+ (SELECT count(*) FROM memories_cjk_fts WHERE memories_cjk_fts MATCH ?1)"
)


def _as_of(conn: sqlite3.Connection) -> tuple[int, str]:
    """Roughly how many memories there are (the highest seq), and the index epoch:
    together they change whenever a memory is added, forgotten or changed where
    searches filter."""
    total = int(conn.execute("SELECT max(seq) FROM memories").fetchone()[0] or 0)
    return total, str(conn.execute("SELECT value FROM meta WHERE key = 'index_epoch'").fetchone()[0])


# Each source in turn, from the source index (the next one after the last): a seek per
# source, not a read of every memory's.
_DISTINCT_SOURCES = """
WITH RECURSIVE sources (source) AS (
    SELECT min(source) FROM memories
    UNION ALL SELECT (SELECT min(source) FROM memories WHERE source > sources.source) FROM sources
    WHERE source IS NOT NULL
) SELECT source FROM sources WHERE source IS NOT NULL LIMIT ?
"""


def _sources_since(conn: sqlite3.Connection, seq: int) -> Iterator[str]:
    """The sources of the memories added after ``seq``."""
    # NOT INDEXED: the added rows, by seq, not every memory's source in an index.
    for (source,) in conn.execute("SELECT DISTINCT source FROM memories NOT INDEXED WHERE seq > ?", (seq,)):
        yield source


def _at_most(limit: int, sources: Iterable[str]) -> frozenset[str] | None:
    found = frozenset(sources)
    return None if len(found) > limit else found


class _Walk(NamedTuple):
    """One walk of ``latest`` or ``ListingReads.most_important``: the memories of
    ``part`` (with ``{0}`` for the table's alias, and its ``params``), those of
    ``source`` alone if given, down the index ``by_time`` or ``by_importance``."""

    by_time: str
    by_importance: str
    part: str
    params: list[Any]
    source: str | None = None

    def condition(self, alias: str) -> tuple[str, list[Any]]:
        """The walk's condition on the table at ``alias``, and its parameters."""
        if self.source is None:
            return self.part.format(alias), self.params
        return f"{alias}.source = ? AND {self.part.format(alias)}", [self.source, *self.params]


def _walks(filters: Filters) -> list[_Walk]:
    """The index walks that ``latest`` and ``ListingReads.most_important`` merge:
    the viewer's own memories and, unless the filters keep only those, every
    session's shared ones; when the filters name sources, those two for each source
    apart (by time, down the source indexes; by importance, the source checked in
    the index)."""
    own: list[tuple[str, str, list[Any]]] = [("session", "{0}.session_id = ?", [filters.viewer_session])]
    shared: list[tuple[str, str, list[Any]]] = [("scope", "{0}.scope = 'global'", [])]
    parts = own if filters.scope == "session" else own + shared
    if not filters.sources:
        return [_Walk(f"memories_by_{key}_time", f"memories_by_{key}_importance", part, part_params)
                for key, part, part_params in parts]
    return [
        _Walk(f"memories_by_source_{key}_time", f"memories_by_{key}_importance", part, part_params, source)
        for source in dict.fromkeys(filters.sources)
        for key, part, part_params in parts
    ]


def _ranked(
    conn: sqlite3.Connection, table: str, query: str, limit: int, where: str = "", params: Sequence[Any] = (),
    among: Sequence[int] | None = None,
) -> list[tuple[int, float]]:
    """The ``limit`` best BM25 matches of ``query`` in ``table`` (among the memories
    passing ``where``, or those at the seqs ``among``, if given), best first."""
    if among is not None:
        # The ``+`` keeps the seqs from FTS5, as in ``text_scores``: BM25 still weighs
        # each phrase by the whole index.
        sql = (f"SELECT rowid, -bm25({table}) AS score FROM {table} WHERE {table} MATCH ? "
               "AND +rowid IN (SELECT value FROM json_each(?)) ORDER BY score DESC LIMIT ?")
        rows = conn.execute(sql, (query, json.dumps(sorted(among)), limit)).fetchall()
        return [(int(seq), float(score)) for seq, score in rows]
    if not where:
        sql = f"SELECT rowid, -bm25({table}) AS score FROM {table} WHERE {table} MATCH ? ORDER BY score DESC LIMIT ?"
    else:
        sql = (
            f"SELECT m.seq, -bm25({table}) AS score FROM {table} JOIN memories AS m ON m.seq = {table}.rowid "
            f"WHERE {table} MATCH ? AND {where} ORDER BY score DESC LIMIT ?"
        )
    rows = conn.execute(sql, (query, *params, limit)).fetchall()
    return [(int(seq), float(score)) for seq, score in rows]


def _few_passing(conn: sqlite3.Connection, filters: Filters, where: str, params: Sequence[Any]) -> list[int] | None:
    """The seqs of the memories passing ``filters`` (``where`` with ``params``, on
    alias ``m``), or None when they may be more than ``_FEW_PASSING``.

    The memories the viewer may see in the filters' span and sources are read, up to
    that many, by the indexes on those; the other filters are checked on each. The
    status index would lead the planner through every memory (24 ms at 100,000). A
    scope is tried as an index first ("session" where every memory is global), then
    as a check ("session" where sessions are many)."""
    spans = [filters, dataclasses.replace(filters, scope=None)] if filters.scope else [filters]
    for span_filters in spans:
        span, span_params = filter_sql(dataclasses.replace(
            span_filters, statuses=(), kinds=(), valid_at=None), alias="m")
        rows = conn.execute(
            f"SELECT m.seq, {where} FROM memories AS m WHERE {span} LIMIT ?", (*params, *span_params, _FEW_PASSING + 1)
        ).fetchall()
        if len(rows) <= _FEW_PASSING:
            return [seq for seq, passes in rows if passes]
    return None


def _of_the_time_asked(
    filters: Filters, within: tuple[float, float] | None, made: Mapping[int, float]
) -> Callable[[int, int], bool]:
    """Whether a memory (by seq, made at ``made``) may stand for a hit by their times:
    it passes the filters' ``since`` and ``until``, and is made in ``within`` if the
    hit is."""
    def timely(hit: int, candidate: int) -> bool:
        at = made[candidate]
        if (filters.since is not None and at < filters.since) or (filters.until is not None and at > filters.until):
            return False
        return within is None or not within[0] <= made[hit] < within[1] or within[0] <= at < within[1]

    return timely


def _earliest_of_each_repeat(elsewhen: Mapping[int, int], made: Mapping[int, sqlite3.Row]) -> dict[int, int | None]:
    """For hits that only a memory of another time stands for (``{hit: that memory}``):
    the earliest of those it stands for with the same text, which stands for the
    others in their place (None for itself), and for that memory too where it has
    the very same text. Sleep merged them as one memory said again: of the time
    asked about, that copy is the one."""
    repeats: dict[tuple[int, str], list[int]] = {}
    for hit, other in elsewhen.items():
        repeats.setdefault((other, made[hit]["content_hash"]), []).append(hit)
    standing_for: dict[int, int | None] = {}
    for (other, text), hits in repeats.items():
        earliest = min(hits, key=lambda hit: (made[hit]["created_at"], hit))
        standing_for.update((hit, None if hit == earliest else earliest) for hit in hits)
        if made[other]["content_hash"] == text:
            standing_for[other] = earliest
    return standing_for


def _terms_held(conn: sqlite3.Connection, terms: Collection[str], contents: dict[int, str]) -> dict[int, set[str]]:
    """Which of ``terms`` each memory (``{seq: content}``) holds, matched as the text
    index matches them: by stem, accents folded ("deploying" holds "deploy", "café"
    "cafe"). The index is asked only where the words leave it open: asking costs a
    lookup per memory and term."""
    held: dict[int, set[str]] = {}
    ask: dict[str, list[int]] = {}
    for seq, content in contents.items():
        words = ascii_words(content)
        held[seq] = {term for term in terms if term in words and term.isascii()}
        for term in set(terms) - held[seq]:
            if any(may_share_stem(word, term) for word in words):
                ask.setdefault(term, []).append(seq)
    for table in _FIELD_TABLES["content"]:
        sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid IN ({{marks}})"
        for term, seqs in ask.items():
            for (seq,) in select_in(conn, sql, seqs, (f'"{term}"',)):
                held[seq].add(term)
    return held


def filter_sql(filters: Filters, alias: str) -> tuple[str, list[Any]]:
    """The WHERE clause for ``filters`` (visibility first, then the user's filters)."""
    a = alias
    clauses = [f"({a}.scope = 'global' OR {a}.session_id = ?)"]
    params: list[Any] = [filters.viewer_session]
    if filters.scope == "session":
        clauses.append(f"{a}.scope = 'session'")
    elif filters.scope == "global":
        clauses.append(f"{a}.scope = 'global'")
    for column, values in (("status", filters.statuses), ("kind", filters.kinds), ("source", filters.sources)):
        if values:
            clauses.append(f"{a}.{column} IN ({', '.join('?' * len(values))})")
            params.extend(values)
    if filters.since is not None:
        clauses.append(f"{a}.created_at >= ?")
        params.append(filters.since)
    if filters.until is not None:
        clauses.append(f"{a}.created_at <= ?")
        params.append(filters.until)
    if filters.valid_at is not None:
        clauses.append(f"({a}.valid_until IS NULL OR {a}.valid_until > ?)")
        params.append(filters.valid_at)
    return " AND ".join(clauses), params
