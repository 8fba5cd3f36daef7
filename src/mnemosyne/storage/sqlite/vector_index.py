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
triggers, and a changed epoch means a full reload. Both checks are one cheap query.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

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


class VectorIndex:
    """Cosine search over one database's vectors (exact up to ``EXACT_UP_TO``), kept
    in sync lazily."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._lock = _fork.Lock()
        self._epoch: str | None = None
        self._clear()

    def __len__(self) -> int:
        return self._size

    def _clear(self) -> None:
        self._size = 0
        self._max_seq = 0
        # Columns with spare capacity, doubled when full, so appending one memory
        # does not copy the whole matrix.
        self._seqs = np.zeros(0, dtype=np.int64)
        self._matrix = np.zeros((0, self.dimension), dtype=np.float32)
        # Sign codes word by word (one row per word), so a distance is a few
        # contiguous passes rather than a strided one.
        self._codes = np.zeros((-(-self.dimension // 64), 0), dtype=np.uint64)
        self._session = np.zeros(0, dtype=np.int32)
        self._global = np.zeros(0, dtype=bool)
        self._status = np.zeros(0, dtype=np.int8)
        self._kind = np.zeros(0, dtype=np.int8)
        self._source = np.zeros(0, dtype=np.int32)
        self._created = np.zeros(0, dtype=np.float64)
        self._valid_until = np.zeros(0, dtype=np.float64)  # +inf: no expiry
        self._session_codes: dict[str, int] = {}
        self._source_codes: dict[str, int] = {}
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
                self._clear()
                self._epoch = epoch
            # A damaged vector (another type or length, or not ``sound_rows``;
            # ``mnemosyne doctor`` finds it) is left out: its memory is found by its
            # words, and embedded at recall like any other without a vector.
            rows = conn.execute(
                "SELECT v.seq, v.vector, m.session_id, m.scope, m.status, m.kind, m.source, m.created_at, "
                "m.valid_until "
                "FROM memory_vectors AS v JOIN memories AS m ON m.seq = v.seq "
                "WHERE v.seq > ? AND typeof(v.vector) = 'blob' AND length(v.vector) = ? ORDER BY v.seq",
                (self._max_seq, 2 * self.dimension),  # float16
            ).fetchall()
            if rows:
                matrix = decode_vectors([r["vector"] for r in rows], self.dimension)
                sound = sound_rows(matrix)
                if sound.any():
                    self._append([r for r, ok in zip(rows, sound, strict=True) if ok], matrix[sound])
                self._max_seq = int(rows[-1]["seq"])

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

    def _rows_of(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each wanted seq's row, and whether it is here at all (hold the lock)."""
        rows = np.searchsorted(self._seqs[: self._size], wanted)
        found = rows < self._size
        found[found] = self._seqs[rows[found]] == wanted[found]
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
            vectors = np.einsum("ijk,ij->ik", self._matrix[window], (window >= 0).astype(np.float32))
            found_seqs = self._seqs[rows]
        norms = np.linalg.norm(vectors, axis=1)
        norms[norms == 0] = 1.0
        scores = _dot(vectors, query) / norms
        return [(int(seq), float(score)) for seq, score in zip(found_seqs, scores, strict=True)]

    def _score(self, query: np.ndarray, mask: np.ndarray, n: int, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows worth scoring exactly, and their cosines."""
        if n <= EXACT_UP_TO:
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
        rows = np.argpartition(distance, size)[:size]
        rows.sort()  # the exact pass then reads the matrix front to back
        return rows

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
        mask = is_global | (self._session[:n] == viewer)
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

    def _append(self, rows: list[sqlite3.Row], matrix: np.ndarray) -> None:
        start, end = self._size, self._size + len(rows)
        if end > len(self._seqs):
            self._grow(max(end, 2 * len(self._seqs), 1024))

        def code(table: dict[str, int], value: str) -> int:
            return table.setdefault(value, len(table))

        self._seqs[start:end] = [r["seq"] for r in rows]
        self._matrix[start:end] = matrix
        self._codes[:, start:end] = sign_codes(self._matrix[start:end]).T
        self._session[start:end] = [code(self._session_codes, r["session_id"]) for r in rows]
        self._global[start:end] = [r["scope"] == "global" for r in rows]
        self._status[start:end] = [STATUS_CODES[r["status"]] for r in rows]
        self._kind[start:end] = [KIND_CODES[r["kind"]] for r in rows]
        self._source[start:end] = [code(self._source_codes, r["source"]) for r in rows]
        self._created[start:end] = [r["created_at"] for r in rows]
        self._valid_until[start:end] = [np.inf if r["valid_until"] is None else r["valid_until"] for r in rows]
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
            in_order = bool(np.all(created[1:] >= created[:-1])) and (tail < 0 or created[0] >= self._created[tail])
            if in_order:
                chain = np.concatenate(([tail], rows)) if tail >= 0 else rows
            else:
                # Ascending rows are ascending seqs, so the stable sort keeps seq order on ties.
                every = self._on_timeline(np.concatenate(self._session_rows[session]), timeline)
                chain = every[np.argsort(self._created[every], kind="stable")]
                self._links[timeline][:, chain] = -1
            self._links[timeline][0, chain[1:]] = chain[:-1]
            self._links[timeline][1, chain[:-1]] = chain[1:]
            self._tails[(session, timeline)] = int(chain[-1])

    def _on_timeline(self, rows: np.ndarray, timeline: str) -> np.ndarray:
        """The episodic ``rows``; for the global timeline, only the global ones among them."""
        keep = self._kind[rows] == KIND_CODES["episodic"]
        if timeline == "global":
            keep &= self._global[rows]
        return rows[keep]

    def _grow(self, capacity: int) -> None:
        def grown(array: np.ndarray) -> np.ndarray:
            bigger = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
            bigger[: self._size] = array[: self._size]
            return bigger

        self._seqs, self._matrix = grown(self._seqs), grown(self._matrix)
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

