"""An in-process vector index built from the ``memory_vectors`` table.

SQLite holds the vectors (the source of truth); each process keeps them in one
numpy matrix, with the columns filters need, so filters are a boolean mask applied
before top-k, with no per-query SQL.

Up to ``EXACT_UP_TO`` vectors a search scores every allowed vector exactly. Past
that, streaming the float matrix would dominate recall (15-20 ms at 100k vectors
on one core), so a search first shortlists by sign bits (one bit per dimension,
32 times less to read: Hamming distance tracks the angle between vectors) and
then scores the shortlist exactly.

Staying current across processes: appends are picked up by ``seq``; anything else
(deletes, changed filter columns, late vectors) bumps ``meta.index_epoch`` through
triggers, which log in ``index_changes`` the memory each new epoch is about. A
process then reads just those memories again: it drops the rows of those gone and
rewrites the others in place (at 100k x 384, a reload after one forget or edit took
0.7-0.9 s). An epoch the log cannot account for (a restore, a log pruned past it,
more changes than are worth catching up) means a full reload.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np

from ... import _fork
from ..base import Filters, Neighbours

STATUS_CODES = {"active": 0, "consolidated": 1, "superseded": 2, "expired": 3}
KIND_CODES = {"episodic": 0, "summary": 1, "fact": 2}

EXACT_UP_TO = 20_000
# The shortlist: this many candidates per result wanted, and never fewer than
# SHORTLIST_MIN. On 100k MiniLM vectors of LongMemEval sentences it kept 99.5% of
# the exact top 50 and 99.9% of the top 10 (bench/shortlist.py).
SHORTLIST_PER_RESULT = 40
SHORTLIST_MIN = 2_000
# Neighbours on each side in a memory's vector window (see ``window_similarities``).
# Wider windows blur more: 1 measured at least as well as 2 on LoCoMo and LongMemEval.
WINDOW_RADIUS = 1
# A session's episodic memories in time order, and its global ones alone.
_TIMELINES = ("all", "global")


def encode_vector(vector: np.ndarray) -> bytes:
    """float16 on disk: half the space, and MiniLM cosines move by < 1e-3."""
    return np.asarray(vector, dtype=np.float16).tobytes()


def decode_vectors(blobs: list[bytes], dimension: int) -> np.ndarray:
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float16).reshape(len(blobs), dimension)
    return matrix.astype(np.float32)


# Every vector is stored at unit length (the embedder slot scales each row);
# float16 moves a norm by well under this.
_UNIT_TOLERANCE = 0.01


def sound_rows(matrix: np.ndarray) -> np.ndarray:
    """Which decoded vectors are sound: of unit length, as every vector is stored.
    Any other is damaged: NaN or infinity would make every similarity NaN, and bytes
    overwritten by others decode to a vector whose products dwarf the rest, topping
    every search by meaning."""
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    return np.abs(norms - 1.0) <= _UNIT_TOLERANCE


def _dot(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Row-by-vector products in the calling thread. Not ``@``: that goes to BLAS,
    whose default thread pool collapses on shared machines (measured on 2 busy
    cores: 7.8 ms for 2,000 x 384, against 0.2 ms here), and limiting it would
    change the whole application's setting."""
    return np.einsum("ij,j->i", matrix, vector)


def sign_codes(vectors: np.ndarray) -> np.ndarray:
    """One bit per dimension (is it positive?), packed into 64-bit words: (rows, words)."""
    bits = np.packbits(np.atleast_2d(vectors) > 0, axis=1)
    bits = np.pad(bits, ((0, 0), (0, -bits.shape[1] % 8)))  # whole words; padding bits agree
    return bits.view(np.uint64)


def _coder(table: dict[str, int]) -> Callable[[str], int]:
    """A value's code in ``table``, a new one for a value not seen before."""

    def code(value: str) -> int:
        found = table.get(value)
        if found is None:
            found = table[value] = len(table)
        return found

    return code


class _Rows(NamedTuple):
    """Rows read for the index, sound vectors only, in seq order, columns coded."""

    seqs: np.ndarray
    matrix: np.ndarray
    session: np.ndarray
    is_global: np.ndarray
    status: np.ndarray
    kind: np.ndarray
    source: np.ndarray
    created: np.ndarray
    valid_until: np.ndarray

    def take(self, keep: np.ndarray) -> _Rows:
        return _Rows(*(column[keep] for column in self))


# What the index holds of a memory. A damaged vector (another type or length, or not
# ``sound_rows``; ``mnemosyne doctor`` finds it) is left out: its memory is found by
# its words, and embedded at recall like any other without a vector.
_READ = (
    "SELECT v.seq, v.vector, m.session_id, m.scope, m.status, m.kind, m.source, m.created_at, m.valid_until "
    "FROM memory_vectors AS v JOIN memories AS m ON m.seq = v.seq "
    "WHERE typeof(v.vector) = 'blob' AND length(v.vector) = ? AND "
)
# Rows decoded and coded at a time: a block's float32 vectors and sign bits stay in
# the cache between the passes over them (at 100k x 384, 0.09 s rather than 0.13-0.9 s
# to decode, 0.03 s rather than 0.05-0.3 s for the sign bits).
_BLOCK = 4096
# Changes caught up one by one, at most: past this (and past an eighth of the index),
# reading every vector again is about as quick. ``index_changes`` keeps 10,000.
_CATCH_UP_MIN = 1_000


class VectorIndex:
    """Cosine search over one database's vectors (exact up to ``EXACT_UP_TO``), kept
    in sync lazily."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._lock = _fork.Lock()
        self._epoch: str | None = None
        self._clear()

    def __len__(self) -> int:
        return self._size - self._dead

    def _clear(self) -> None:
        self._max_seq = 0
        self._session_codes: dict[str, int] = {}
        self._source_codes: dict[str, int] = {}
        self._empty()

    def _empty(self) -> None:
        """No rows (the columns' codes are kept)."""
        self._size = 0
        self._dead = 0  # rows of forgotten or changed memories, left out of every search
        # Columns with spare capacity, doubled when full, so appending one memory
        # does not copy the whole matrix. Rows are in seq order, as a fresh process
        # reads them, so ties fall the same way in every process.
        self._seqs = np.zeros(0, dtype=np.int64)
        self._matrix = np.zeros((0, self.dimension), dtype=np.float32)
        # Sign codes word by word (one row per word), so a distance is a few
        # contiguous passes rather than a strided one.
        self._codes = np.zeros((-(-self.dimension // 64), 0), dtype=np.uint64)
        self._live = np.zeros(0, dtype=bool)
        self._session = np.zeros(0, dtype=np.int32)
        self._global = np.zeros(0, dtype=bool)
        self._status = np.zeros(0, dtype=np.int8)
        self._kind = np.zeros(0, dtype=np.int8)
        self._source = np.zeros(0, dtype=np.int32)
        self._created = np.zeros(0, dtype=np.float64)
        self._valid_until = np.zeros(0, dtype=np.float64)  # +inf: no expiry
        self._masks: dict[tuple, np.ndarray] = {}
        # Episode windows: each episodic row's previous and next row in its session's
        # time order (-1: none), among all of the session's episodic rows and among
        # its global ones only; and each session's rows and time-order tails, which
        # appends extend.
        self._links = {timeline: np.zeros((2, 0), dtype=np.int64) for timeline in _TIMELINES}
        self._session_rows: dict[int, list[np.ndarray]] = {}
        self._tails: dict[tuple[int, str], int] = {}

    def sync(self, conn: sqlite3.Connection) -> None:
        """Bring the index up to date with the database (call before searching)."""
        with self._lock:
            epoch = conn.execute("SELECT value FROM meta WHERE key = 'index_epoch'").fetchone()[0]
            if epoch != self._epoch:
                changed = self._changes(conn, epoch)
                if changed is None or not self._catch_up(conn, changed):
                    self._clear()
                self._epoch = epoch
            added, self._max_seq = self._read(conn, "v.seq > ? ORDER BY v.seq", (self._max_seq,), self._max_seq)
            if added is not None:
                self._append(added)

    def _changes(self, conn: sqlite3.Connection, epoch: str) -> np.ndarray | None:
        """The seqs of the memories changed since this index's epoch, from
        ``index_changes``; None when it cannot say (an epoch moved by a restore, a
        log pruned past it, too many changes to be worth catching up)."""
        try:
            then, now = int(str(self._epoch)), int(str(epoch))
        except ValueError:
            return None
        if not 0 < now - then <= max(_CATCH_UP_MIN, len(self) // 8):
            return None
        try:
            seqs = conn.execute("SELECT seq FROM index_changes WHERE epoch > ? AND epoch <= ?", (then, now)).fetchall()
        except sqlite3.OperationalError:  # a database of an older schema, read as it is
            return None
        if len(seqs) != now - then:
            return None
        return np.unique(np.array([seq for (seq,) in seqs], dtype=np.int64))

    def _catch_up(self, conn: sqlite3.Connection, changed: np.ndarray) -> bool:
        """Read the ``changed`` memories again: drop those gone (or left without a
        sound vector), rewrite the others in place. False if one must go between
        rows (a vector written late for an older memory): reload then."""
        changed = changed[changed <= self._max_seq]  # later ones are read as appends
        if not len(changed):
            return True
        fresh, _ = self._read(
            conn, "v.seq IN (SELECT value FROM json_each(?)) ORDER BY v.seq", (json.dumps(changed.tolist()),)
        )
        rows, here = self._physical(changed)
        kept = np.isin(changed, fresh.seqs) if fresh is not None else np.zeros(len(changed), dtype=bool)
        self._drop(rows[here & ~kept])
        if fresh is not None:
            rows, here = self._physical(fresh.seqs)
            after = fresh.seqs > (self._seqs[self._size - 1] if self._size else 0)
            if not np.all(here | after):
                return False
            self._rewrite(rows[here], fresh.take(here))
            if after.any():
                self._append(fresh.take(after))
        # Forgotten rows at the end are cut off, so their seqs, which the next
        # memories take again, are read as appends.
        alive = np.flatnonzero(self._live[: self._size])
        end = int(alive[-1]) + 1 if len(alive) else 0
        self._dead -= self._size - end
        self._size = end
        self._max_seq = min(self._max_seq, int(self._seqs[end - 1]) if end else 0)
        self._masks.clear()
        if self._dead > max(_CATCH_UP_MIN, self._size // 4):
            self._compact()
        return True

    def _physical(self, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each seq's row, live or not, and whether it has one (hold the lock)."""
        rows = np.searchsorted(self._seqs[: self._size], seqs)
        found = rows < self._size
        found[found] = self._seqs[rows[found]] == seqs[found]
        return rows, found

    def _drop(self, rows: np.ndarray) -> None:
        """Take ``rows`` out of every search and of their sessions' time order."""
        for row in rows.tolist():
            if not self._live[row]:
                continue
            session = int(self._session[row])
            for timeline in _TIMELINES:
                links = self._links[timeline]
                before, after = int(links[0, row]), int(links[1, row])
                if before >= 0:
                    links[1, before] = after
                if after >= 0:
                    links[0, after] = before
                if self._tails.get((session, timeline)) == row:
                    if before >= 0:
                        self._tails[(session, timeline)] = before
                    else:
                        del self._tails[(session, timeline)]
                links[:, row] = -1
            self._live[row] = False
            self._dead += 1

    def _rewrite(self, rows: np.ndarray, fresh: _Rows) -> None:
        """Rewrite ``rows`` (live or dropped) as read again; a row that moved in its
        session's time order (or to another session) is relinked."""
        moved = ~self._live[rows] | (self._session[rows] != fresh.session) | (self._global[rows] != fresh.is_global)
        moved |= (self._kind[rows] != fresh.kind) | (self._created[rows] != fresh.created)
        self._drop(rows[moved])
        self._matrix[rows] = fresh.matrix
        self._codes[:, rows] = sign_codes(fresh.matrix).T
        self._session[rows], self._global[rows] = fresh.session, fresh.is_global
        self._status[rows], self._kind[rows], self._source[rows] = fresh.status, fresh.kind, fresh.source
        self._created[rows], self._valid_until[rows] = fresh.created, fresh.valid_until
        self._dead -= int(np.count_nonzero(~self._live[rows]))
        self._live[rows] = True
        for session in np.unique(fresh.session[moved]).tolist():
            self._session_rows.setdefault(session, []).append(rows[moved & (fresh.session == session)])
            self._relink(session)

    def _compact(self) -> None:
        """Rebuild the columns from the live rows alone."""
        keep = np.flatnonzero(self._live[: self._size])
        live = _Rows(
            self._seqs[keep], self._matrix[keep], self._session[keep], self._global[keep], self._status[keep],
            self._kind[keep], self._source[keep], self._created[keep], self._valid_until[keep],
        )
        self._empty()
        if len(keep):
            self._append(live)

    def _read(
        self, conn: sqlite3.Connection, where: str, params: tuple, max_seq: int = 0
    ) -> tuple[_Rows | None, int]:
        """The sound rows ``where`` selects, coded, and the highest seq read (or ``max_seq``)."""
        cursor = conn.cursor()
        cursor.row_factory = None  # plain tuples: one transposition, no per-row lookups
        read = cursor.execute(_READ + where, (2 * self.dimension, *params)).fetchall()  # float16
        if not read:
            return None, max_seq
        seqs, blobs, sessions, scopes, statuses, kinds, sources, created, valid_until = zip(*read, strict=True)
        del read
        count = len(seqs)
        stored = np.frombuffer(b"".join(blobs), dtype=np.float16).reshape(count, self.dimension)
        del blobs
        matrix = np.empty((count, self.dimension), dtype=np.float32)
        for start in range(0, count, _BLOCK):
            matrix[start : start + _BLOCK] = stored[start : start + _BLOCK]
        rows = _Rows(
            np.array(seqs, dtype=np.int64),
            matrix,
            np.fromiter(map(_coder(self._session_codes), sessions), dtype=np.int32, count=count),
            np.fromiter(map("global".__eq__, scopes), dtype=bool, count=count),
            np.fromiter(map(STATUS_CODES.__getitem__, statuses), dtype=np.int8, count=count),
            np.fromiter(map(KIND_CODES.__getitem__, kinds), dtype=np.int8, count=count),
            np.fromiter(map(_coder(self._source_codes), sources), dtype=np.int32, count=count),
            np.array(created, dtype=np.float64),
            np.array([np.inf if v is None else v for v in valid_until], dtype=np.float64),
        )
        sound = sound_rows(matrix)
        highest = max(max_seq, int(rows.seqs[-1]))
        if not sound.all():
            rows = rows.take(sound)
        return (rows if len(rows.seqs) else None), highest

    def search(self, query: np.ndarray, filters: Filters, limit: int) -> list[tuple[int, float]]:
        """``(seq, cosine)`` of the best ``limit`` vectors that pass ``filters``."""
        return self.nearest(query, filters, limit).hits

    def nearest(self, query: np.ndarray, filters: Filters, limit: int, field_rank: int = 0) -> Neighbours:
        """``search``, and the cosine of the ``field_rank``-th nearest vector (of the
        last, if fewer pass; past the shortlist's size, of the shortlist's), where
        what is not about the query begins."""
        query = np.asarray(query, dtype=np.float32)
        with self._lock:
            n = self._size
            if not n:
                return Neighbours([], None)
            mask = self._mask(filters, n)
            rows, scores = self._score(query, mask, n, limit)
            seqs = self._seqs[rows]
        if len(rows) > limit:
            top = np.argpartition(-scores, limit)[:limit]
        else:
            top = np.arange(len(rows))
        order = top[np.argsort(-scores[top], kind="stable")]
        field = None
        if field_rank and len(scores):
            rank = min(field_rank, len(scores)) - 1
            field = float(-np.partition(-scores, rank)[rank])
        return Neighbours([(int(seqs[i]), float(scores[i])) for i in order], field)

    def lacking(self, seqs: Iterable[int]) -> list[int]:
        """The ``seqs`` that have no vector here, in their order."""
        wanted = np.fromiter(seqs, dtype=np.int64)
        with self._lock:
            _, found = self._rows_of(wanted)
        return [int(seq) for seq in wanted[~found]]

    def similarities(self, query: np.ndarray, seqs: Iterable[int]) -> list[tuple[int, float]]:
        """``(seq, cosine)`` of each of ``seqs`` that has a vector here."""
        query = np.asarray(query, dtype=np.float32)
        with self._lock:
            rows, found = self._rows_of(np.fromiter(seqs, dtype=np.int64))
            rows = rows[found]
            vectors, found_seqs = self._matrix[rows], self._seqs[rows]
        return [(int(seq), float(score)) for seq, score in zip(found_seqs, _dot(vectors, query), strict=True)]

    def closeness(self, seqs: Iterable[int]) -> np.ndarray:
        """The cosines between ``seqs``' vectors, rows and columns in their order (0
        where either has no vector here)."""
        with self._lock:
            rows, found = self._rows_of(np.fromiter(seqs, dtype=np.int64))
            vectors = np.zeros((len(rows), self._matrix.shape[1]), dtype=self._matrix.dtype)
            vectors[found] = self._matrix[rows[found]]
        return vectors @ vectors.T

    def _rows_of(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each wanted seq's row, and whether it is here at all (hold the lock)."""
        rows, found = self._physical(wanted)
        found[found] = self._live[rows[found]]
        return rows, found

    def window_similarities(
        self, query: np.ndarray, seqs: Iterable[int], max_gap_s: float
    ) -> list[tuple[int, float]]:
        """``(seq, cosine)`` between ``query`` and each memory's episode window: the
        mean of its vector and those of up to ``WINDOW_RADIUS`` episodic neighbours
        on each side in its session's time order, each no more than ``max_gap_s``
        from the last (past a pause, the next event starts another episode). As in
        the text windows, a global memory's neighbours are the session's global
        memories only, so nothing private to a session shapes what other sessions
        find. Memories without a vector are left out; a summary or fact stands alone."""
        query = np.asarray(query, dtype=np.float32)
        with self._lock:
            rows, found = self._rows_of(np.fromiter(seqs, dtype=np.int64))
            rows = rows[found]
            vectors = self._window_sums(rows, max_gap_s)
            found_seqs = self._seqs[rows]
        norms = np.linalg.norm(vectors, axis=1)
        norms[norms == 0] = 1.0
        scores = _dot(vectors, query) / norms
        return [(int(seq), float(score)) for seq, score in zip(found_seqs, scores, strict=True)]

    def neighbour_similarities(self, seqs: Iterable[int], max_gap_s: float) -> list[tuple[int, float]]:
        """``(seq, cosine)`` between each memory's vector and the mean of its
        neighbours' in its episode window (see :meth:`window_similarities`): how
        much it means what they mean. Memories without a vector or without
        neighbours are left out."""
        with self._lock:
            rows, found = self._rows_of(np.fromiter(seqs, dtype=np.int64))
            rows = rows[found]
            own = self._matrix[rows]
            neighbours = self._window_sums(rows, max_gap_s) - own
            found_seqs = self._seqs[rows]
        norms = np.linalg.norm(neighbours, axis=1)
        some = norms > 1e-6
        scores = np.einsum("ij,ij->i", neighbours[some], own[some]) / norms[some]
        return [(int(seq), float(score)) for seq, score in zip(found_seqs[some], scores, strict=True)]

    def _window_sums(self, rows: np.ndarray, max_gap_s: float) -> np.ndarray:
        """The sum of the vectors of each row's episode window: its own and its
        neighbours' (see :meth:`window_similarities`; hold the lock)."""
        is_global = self._global[rows]
        members = [rows]
        for side in (0, 1):  # 0: earlier neighbours, 1: later ones
            own, among_global = self._links["all"][side], self._links["global"][side]
            current = rows
            for _ in range(WINDOW_RADIUS):
                links = np.where(current >= 0, np.where(is_global, among_global[current], own[current]), -1)
                near = links >= 0
                near[near] = np.abs(self._created[links[near]] - self._created[current[near]]) <= max_gap_s
                current = np.where(near, links, -1)
                members.append(current)
        window = np.stack(members, axis=1)
        return np.einsum("ijk,ij->ik", self._matrix[window], (window >= 0).astype(np.float32))

    def _score(self, query: np.ndarray, mask: np.ndarray, n: int, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows worth scoring exactly, and their cosines."""
        if n - self._dead <= EXACT_UP_TO:  # as a fresh process would, without the dropped rows
            # Scoring every row and masking is faster than gathering the allowed
            # rows first: the product streams the matrix once, a gather copies it.
            rows = np.flatnonzero(mask)
            return rows, _dot(self._matrix[:n], query)[rows]
        rows = self._shortlist(query, mask, n, max(SHORTLIST_MIN, SHORTLIST_PER_RESULT * limit))
        return rows, _dot(self._matrix[rows], query)

    def _shortlist(self, query: np.ndarray, mask: np.ndarray, n: int, size: int) -> np.ndarray:
        """Rows of the ``size`` allowed vectors nearest ``query`` by sign bits, in row order."""
        allowed = np.flatnonzero(mask)
        if len(allowed) <= size:
            return allowed
        distance = np.zeros(n, dtype=np.int32)
        for word, query_word in zip(self._codes[:, :n], sign_codes(query)[0], strict=True):
            distance += np.bitwise_count(word ^ query_word)
        distance[~mask] = np.iinfo(np.int32).max
        # Rows as far as the size-th nearest go by seq (the lowest first), not by
        # where a partition leaves them: every process, whatever rows it dropped,
        # shortlists the same ones. In row order, so the exact pass reads the
        # matrix front to back.
        bound = np.partition(distance, size - 1)[size - 1]
        chosen = distance < bound
        chosen[np.flatnonzero(distance == bound)[: size - np.count_nonzero(chosen)]] = True
        return np.flatnonzero(chosen)

    def _mask(self, filters: Filters, n: int) -> np.ndarray:
        # Visibility and status rarely change between queries: cache that part.
        key = (filters.viewer_session, filters.scope, filters.statuses, filters.kinds, filters.sources)
        cached = self._masks.get(key)
        if cached is None or len(cached) != n:
            cached = self._masks[key] = self._base_mask(filters, n)
        mask = cached.copy()
        if filters.since is not None:
            mask &= self._created[:n] >= filters.since
        if filters.until is not None:
            mask &= self._created[:n] <= filters.until
        if filters.valid_at is not None:
            mask &= self._valid_until[:n] > filters.valid_at
        return mask

    def _base_mask(self, filters: Filters, n: int) -> np.ndarray:
        viewer = self._session_codes.get(filters.viewer_session, -1)
        is_global = self._global[:n]
        mask = (is_global | (self._session[:n] == viewer)) & self._live[:n]
        if filters.scope == "global":
            mask &= is_global
        elif filters.scope == "session":
            mask &= ~is_global
        if filters.statuses:
            mask &= np.isin(self._status[:n], [STATUS_CODES[s] for s in filters.statuses])
        if filters.kinds:
            mask &= np.isin(self._kind[:n], [KIND_CODES[k] for k in filters.kinds])
        if filters.sources:
            mask &= np.isin(self._source[:n], [self._source_codes.get(s, -1) for s in filters.sources])
        return mask

    def _append(self, rows: _Rows) -> None:
        """Add ``rows``, all of higher seqs than any here."""
        start, end = self._size, self._size + len(rows.seqs)
        if not start and len(self._seqs) < end:
            # The first read: take its matrix as it is, rather than copy it over (a
            # fresh float32 array is written page by page, 0.1-0.9 s at 100k x 384).
            self._grow(end, matrix=rows.matrix)
        else:
            if end > len(self._seqs):
                self._grow(max(end, 2 * len(self._seqs), 1024))
            self._matrix[start:end] = rows.matrix
        self._seqs[start:end] = rows.seqs
        for block in range(start, end, _BLOCK):
            stop = min(block + _BLOCK, end)
            self._codes[:, block:stop] = sign_codes(self._matrix[block:stop]).T
        self._live[start:end] = True
        self._session[start:end], self._global[start:end] = rows.session, rows.is_global
        self._status[start:end], self._kind[start:end], self._source[start:end] = rows.status, rows.kind, rows.source
        self._created[start:end], self._valid_until[start:end] = rows.created, rows.valid_until
        self._size = end
        self._masks.clear()
        by_session = np.argsort(self._session[start:end], kind="stable")
        sessions, firsts = np.unique(self._session[start:end][by_session], return_index=True)
        for session, added in zip(sessions.tolist(), np.split(start + by_session, firsts[1:]), strict=True):
            batches = self._session_rows.setdefault(session, [])
            batches.append(added)
            if len(batches) > 64:  # one write at a time would leave many tiny arrays
                batches[:] = [np.concatenate(batches)]
            self._link(session, added)

    def _link(self, session: int, added: np.ndarray) -> None:
        """Thread ``added`` rows (ascending) into their session's time order. Events
        usually arrive in order and go on the end; otherwise the session is relinked."""
        for timeline in _TIMELINES:
            rows = self._on_timeline(added, timeline)
            if not len(rows):
                continue
            tail = self._tails.get((session, timeline), -1)
            created = self._created[rows]
            if not np.all(created[1:] >= created[:-1]) or (tail >= 0 and created[0] < self._created[tail]):
                self._relink(session)
                return
            chain = np.concatenate(([tail], rows)) if tail >= 0 else rows
            self._links[timeline][0, chain[1:]] = chain[:-1]
            self._links[timeline][1, chain[:-1]] = chain[1:]
            self._tails[(session, timeline)] = int(chain[-1])

    def _relink(self, session: int) -> None:
        """Thread all of a session's live rows into its time orders afresh."""
        every = np.unique(np.concatenate(self._session_rows[session]))
        every = every[every < self._size]
        every = every[self._live[every] & (self._session[every] == session)]
        self._session_rows[session] = [every]
        for timeline in _TIMELINES:
            self._links[timeline][:, every] = -1
            rows = self._on_timeline(every, timeline)
            if not len(rows):
                self._tails.pop((session, timeline), None)
                continue
            # Ascending rows are ascending seqs, so the stable sort keeps seq order on ties.
            chain = rows[np.argsort(self._created[rows], kind="stable")]
            self._links[timeline][0, chain[1:]] = chain[:-1]
            self._links[timeline][1, chain[:-1]] = chain[1:]
            self._tails[(session, timeline)] = int(chain[-1])

    def _on_timeline(self, rows: np.ndarray, timeline: str) -> np.ndarray:
        """The episodic ``rows``; for the global timeline, only the global ones among them."""
        keep = self._kind[rows] == KIND_CODES["episodic"]
        if timeline == "global":
            keep &= self._global[rows]
        return rows[keep]

    def _grow(self, capacity: int, matrix: np.ndarray | None = None) -> None:
        """Room for ``capacity`` rows; ``matrix``, if given, is the whole new matrix."""

        def grown(array: np.ndarray) -> np.ndarray:
            bigger = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
            bigger[: self._size] = array[: self._size]
            return bigger

        self._seqs, self._live = grown(self._seqs), grown(self._live)
        self._matrix = grown(self._matrix) if matrix is None else matrix
        self._session, self._global = grown(self._session), grown(self._global)
        self._status, self._kind = grown(self._status), grown(self._kind)
        self._source, self._created = grown(self._source), grown(self._created)
        self._valid_until = grown(self._valid_until)
        for timeline, links in self._links.items():
            self._links[timeline] = np.full((2, capacity), -1, dtype=np.int64)
            self._links[timeline][:, : self._size] = links[:, : self._size]
        codes = np.zeros((len(self._codes), capacity), dtype=np.uint64)
        codes[:, : self._size] = self._codes[:, : self._size]
        self._codes = codes
