"""The vector side of the SQLite store: which embedder a database belongs to, and
its vectors (missing ones, stored ones, a whole model switch)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core.signature import same_embedder
from .connection import Database
from .rows import audit, dump_json, select_in
from .vector_index import decode_vectors, encode_vector, sound_rows

# A memory's seq, the text that was embedded, and its vector.
Embedded = tuple[int, str, np.ndarray]
# Parameters: seq, vector, seq, text. A memory forgotten or edited since its text was
# read gets no vector.
_IF_TEXT_UNCHANGED = "SELECT ?, ? WHERE EXISTS (SELECT 1 FROM memories WHERE seq = ? AND content = ?)"


class VectorRows:
    """Mixed into :class:`SQLiteStore`; every write here is one transaction."""

    _db: Database

    def _claim_embedder(self, conn: sqlite3.Connection, embedder: dict[str, Any] | None) -> bool:
        """Record ``embedder`` on the first write; afterwards, whether it is the recorded one."""
        if embedder is None:
            return False
        row = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        if row is None:
            conn.execute("INSERT INTO meta (key, value) VALUES ('embedder', ?)", (dump_json(embedder),))
            return True
        recorded = json.loads(row[0])
        if not same_embedder(recorded, embedder):
            return False
        if not recorded.get("dimension") and embedder.get("dimension"):
            # An HTTP model recorded before it ever answered: its first vectors fix the
            # dimension, so an endpoint serving another size later cannot mix in.
            conn.execute("UPDATE meta SET value = ? WHERE key = 'embedder'", (dump_json(embedder),))
        return True

    def recorded_embedder(self) -> dict[str, Any] | None:
        """The signature of the embedder that made this database's vectors, if any."""
        with self._db.read() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def missing_vectors(self, limit: int, after: int = 0, up_to: int | None = None) -> list[tuple[int, str]]:
        """``(seq, content)`` of memories that have no vector yet, oldest first: those
        with a seq above ``after`` and, if given, at most ``up_to``."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT m.seq, m.content FROM memories AS m LEFT JOIN memory_vectors AS v ON v.seq = m.seq "
                "WHERE v.seq IS NULL AND m.seq > ? AND m.seq <= coalesce(?, m.seq) ORDER BY m.seq LIMIT ?",
                (after, up_to, limit),
            ).fetchall()
        return [(int(seq), str(content)) for seq, content in rows]

    def newest_seq(self) -> int:
        """The highest seq stored (0 when there is no memory)."""
        with self._db.read() as conn:
            return int(conn.execute("SELECT coalesce(max(seq), 0) FROM memories").fetchone()[0])

    def vectors_by_id(self, memory_ids: Sequence[str], dimension: int) -> dict[str, np.ndarray]:
        """The stored vector of each of these memories that has one."""
        with self._db.read() as conn:
            rows = select_in(
                conn,
                "SELECT m.id, v.vector FROM memories AS m JOIN memory_vectors AS v ON v.seq = m.seq "
                "WHERE m.id IN ({marks})",
                list(memory_ids),
            )
        stored = [(memory_id, blob) for memory_id, blob in rows
                  if isinstance(blob, bytes) and len(blob) == 2 * dimension]  # float16
        if not stored:
            return {}
        matrix = decode_vectors([blob for _, blob in stored], dimension)
        return {memory_id: vector for (memory_id, _), vector, sound
                in zip(stored, matrix, sound_rows(matrix), strict=True) if sound}

    def count_missing_vectors(self, up_to: int) -> int:
        """How many memories up to seq ``up_to`` lack a vector."""
        with self._db.read() as conn:
            return int(conn.execute(
                "SELECT count(*) FROM memories AS m LEFT JOIN memory_vectors AS v ON v.seq = m.seq "
                "WHERE v.seq IS NULL AND m.seq <= ?", (up_to,)
            ).fetchone()[0])

    def count_memories(self, up_to: int) -> int:
        """How many memories have a seq up to ``up_to``."""
        with self._db.read() as conn:
            return int(conn.execute("SELECT count(*) FROM memories WHERE seq <= ?", (up_to,)).fetchone()[0])

    def contents_after(self, seq: int, limit: int, up_to: int) -> list[tuple[int, str]]:
        """``(seq, content)`` of the next ``limit`` memories after ``seq``, up to ``up_to``."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT seq, content FROM memories WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                (seq, up_to, limit),
            ).fetchall()
        return [(int(s), str(c)) for s, c in rows]

    def add_vectors(self, embedded: Sequence[Embedded], embedder: dict[str, Any]) -> int:
        """Store vectors for memories that still lack one and still hold the text that
        was embedded; return how many were stored."""
        with self._db.write("store vectors") as conn:
            if not self._claim_embedder(conn, embedder):
                return 0
            cursor = conn.executemany(
                f"INSERT INTO memory_vectors (seq, vector) {_IF_TEXT_UNCHANGED} ON CONFLICT (seq) DO NOTHING",
                [(seq, encode_vector(vector), seq, content) for seq, content, vector in embedded],
            )
            return max(cursor.rowcount, 0)

    def replace_embedder(self, embedder: dict[str, Any], embedded: Sequence[Embedded]) -> None:
        """Switch the database to another embedder: drop every vector, store the new ones.

        A memory edited while the new vectors were computed is left without one, for
        the backfill: a vector of its old text would never be replaced."""
        with self._db.write("switch embedder") as conn:
            conn.execute("DELETE FROM memory_vectors")
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('embedder', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (dump_json(embedder),),
            )
            conn.executemany(
                f"INSERT INTO memory_vectors (seq, vector) {_IF_TEXT_UNCHANGED}",
                [(seq, encode_vector(vector), seq, content) for seq, content, vector in embedded],
            )
            audit(conn, "reembed", None, None, {"embedder": embedder, "vectors": len(embedded)})
