"""The SQLite store: rows, full-text index and audit log in one file."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Collection, Generator, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from ... import background
from ...core.consolidation import SHARED_SESSION, sharing_key
from ...core.lexical import ascii_words, may_share_stem
from ...core.signature import same_embedder
from ...core.validation import expand_user
from ...errors import (
    DatabaseBusyError,
    ImportInterrupted,
    InvalidInputError,
    MemoryNotFoundError,
    NotADatabaseError,
    ReadOnlyDatabaseError,
    StorageError,
)
from ...models import Memory
from ..base import Filters, Neighbours, NewMemory, Store
from .access import AccessRecorder
from .connection import DEFAULT_BUSY_TIMEOUT_S, Database, InterruptedAfterCommit
from .context_index import refresh_contexts
from .derived import present
from .idempotency import existing_id, for_key, stored_hashes
from .migrate import migrate, schema_version
from .rows import Inserting, audit, dump_json, row_to_memory, select_in
from .sessions import session_is_stored
from .standing import (
    held_by_one_session_at_most,
    originals_of,
    reinstate,
    release_changed,
    sharing_memories_of,
    stands_for,
    unquote,
    unquote_summary,
    unshared_keys,
)
from .vector_index import VectorIndex, encode_vector
from .vector_rows import VectorRows

_COLUMNS = (
    "id, session_id, scope, kind, status, content, content_hash, source, importance, "
    "metadata, created_at, recorded_at, updated_at, valid_until, access_count, idempotency_key"
)
# Pages one text-index merge step writes (see ``compact_text_indexes``).
MERGE_PAGES_PER_STEP = 500
# How many of a span's latest memories ``latest`` reads for other sessions' shared ones.
LATEST_SCANNED = 2_000


class SQLiteStore(VectorRows):
    """Memories in one SQLite file (WAL mode), migrated to the latest schema on open."""

    def __init__(self, path: str | Path, busy_timeout: float = DEFAULT_BUSY_TIMEOUT_S) -> None:
        self.path = str(path)
        db_path = prepare_path(path)
        self._db = Database(db_path, busy_timeout=busy_timeout)
        self.access = AccessRecorder(self._db)
        self._index: VectorIndex | None = None
        self._frequencies: dict[str, int] = {}
        self._frequencies_as_of: tuple[int, str] = (0, "")  # (memories then, index epoch then)
        try:
            self._db.prepare()
            self.safety_backup = migrate(self._db)
            self.index_missing_text()
        except BaseException:
            self._db.close()
            raise

    # -- writes ---------------------------------------------------------------------

    def insert(
        self,
        memories: Sequence[NewMemory],
        vectors: Sequence[np.ndarray | None] | None = None,
        embedder: dict[str, Any] | None = None,
        op: str = "remember",
    ) -> list[str]:
        """Insert memories, their index entries, vectors and audit records in one transaction.

        ``vectors[i]`` (optional) belongs to ``memories[i]``; they are written only if
        ``embedder`` is the embedder recorded for this database (recording it on the
        first write), so vectors of two models never mix. A memory whose idempotency
        key is already stored is not inserted again; the stored id is returned instead.
        """
        ids: list[str] = []
        with self._db.write(op) as conn:
            # Claimed even without vectors (the model is down): the first write fixes
            # the database's embedder, and a later open without one picks it again.
            keep_vectors = self._claim_embedder(conn, embedder) and vectors is not None
            touched: dict[str, list[tuple[float, int]]] = {}
            texts_stored = stored_hashes(conn, memories)
            vector_rows: list[tuple[int, bytes]] = []
            with Inserting(conn, op) as inserting:
                for index, memory in enumerate(memories):
                    memory_id, seq = self._insert_one(conn, memory, inserting, memory.content_hash in texts_stored)
                    ids.append(memory_id)
                    if seq is None:
                        continue
                    texts_stored.add(memory.content_hash)  # a later item of this batch may repeat it
                    touched.setdefault(memory.session_id, []).append((memory.created_at, seq))
                    vector = vectors[index] if keep_vectors and vectors is not None else None
                    if vector is not None:
                        vector_rows.append((seq, encode_vector(vector)))
            conn.executemany("INSERT INTO memory_vectors (seq, vector) VALUES (?, ?)", vector_rows)
            for session_id, positions in touched.items():
                refresh_contexts(conn, session_id, positions)
        return ids

    def _insert_one(
        self, conn: sqlite3.Connection, memory: NewMemory, inserting: Inserting, text_stored: bool = True
    ) -> tuple[str, int | None]:
        """Insert one row; return its id and seq (seq None if it was already stored).
        ``inserting`` indexes its text and audits it when the caller's loop ends."""
        repeated = existing_id(conn, memory, text_stored)
        if repeated is not None:
            return repeated, None
        cursor = conn.execute(
            f"INSERT INTO memories ({_COLUMNS}, episode_id) VALUES ({', '.join('?' * 17)}) "
            "ON CONFLICT (idempotency_key) DO NOTHING",
            (
                memory.id, memory.session_id, memory.scope, memory.kind, memory.status,
                memory.content, memory.content_hash, memory.source, memory.importance,
                dump_json(memory.metadata), memory.created_at, memory.recorded_at,
                memory.recorded_at, memory.valid_until, 0, memory.idempotency_key, memory.episode_id,
            ),
        )
        if cursor.rowcount == 0:  # the key's UNIQUE constraint says it is stored already
            return str(for_key(conn, memory)), None
        seq = cursor.lastrowid
        assert seq is not None  # the insert added a row
        inserting.add(seq, memory.id, memory.session_id, memory.content, memory.content_hash)
        return memory.id, seq

    def update(
        self,
        memory_id: str,
        viewer_session: str,
        changes: dict[str, Any],
        vector: np.ndarray | None = None,
        embedder: dict[str, Any] | None = None,
    ) -> Memory:
        """Apply column changes to a visible memory; audit which fields changed.

        New content replaces the memory's vector with ``vector`` (or drops it, to be
        backfilled, when there is none) and refreshes its neighbours' context.
        """
        allowed = {"content", "content_hash", "importance", "metadata", "status", "scope", "valid_until"}
        unknown = set(changes) - allowed
        if unknown:
            raise InvalidInputError(f"cannot update {sorted(unknown)}")
        with self._db.write("update a memory") as conn:
            row = self._visible_row(conn, memory_id, viewer_session)
            if "metadata" in changes:
                changes = {**changes, "metadata": _keeping_rule(row, changes["metadata"])}
            values = {k: dump_json(v) if k == "metadata" else v for k, v in changes.items()}
            new_text = "content" in values and values["content"] != row["content"]
            if new_text and row["status"] == "consolidated" and "status" not in values:
                # What stood for it says the old text: recall must find the new one.
                values["status"] = "active"
            sharing = sharing_memories_of(conn, memory_id) if new_text else []
            if values:
                assignments = ", ".join(f"{column} = ?" for column in values)
                conn.execute(
                    f"UPDATE memories SET {assignments}, updated_at = ? WHERE id = ?",
                    (*values.values(), time.time(), memory_id),
                )
                audit(conn, "update", memory_id, row["session_id"], {"fields": sorted(values)})
            if "content" in values:
                conn.execute("DELETE FROM memory_vectors WHERE seq = ?", (row["seq"],))
                if vector is not None and self._claim_embedder(conn, embedder):
                    conn.execute(
                        "INSERT INTO memory_vectors (seq, vector) VALUES (?, ?)", (row["seq"], encode_vector(vector))
                    )
            if new_text:
                reason = f"the text of {memory_id} changed"
                # Summaries quoted the old text; what this memory stood for, it may no longer say.
                unquote(conn, memory_id, row["content"], reason)
                release_changed(conn, memory_id, reason)
                self._dissolve_unheld(conn, sharing)
            if "content" in values or "scope" in values:  # the text, or whose windows hold it
                refresh_contexts(conn, row["session_id"], [(row["created_at"], row["seq"])],
                                 was_global=row["scope"] == "global")
            updated = conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (memory_id,)
            ).fetchone()
        return row_to_memory(updated)

    def delete(self, memory_id: str, viewer_session: str) -> None:
        """Remove a visible memory from the table and every index; leave a tombstone."""
        with self._db.write("forget a memory") as conn:
            self._forget(conn, self._visible_row(conn, memory_id, viewer_session), unshare=True)

    def _forget(self, conn: sqlite3.Connection, row: sqlite3.Row, unshare: bool) -> None:
        """Delete ``row`` and keep what stood for it, or it for others, true.

        A shared memory forgotten by an agent (``unshare``) takes with it the shared
        memories it had absorbed, and sleep will not share its text again; its
        sessions' own copies come back. A shared memory fewer than two sessions
        still hold is dissolved: its copies, and what it absorbed, come back.
        """
        memory_id = row["id"]
        reason = f"forgot {memory_id}"
        unshared = unshare and row["session_id"] == SHARED_SESSION
        unquote(conn, memory_id, row["content"], reason)
        originals = originals_of(conn, memory_id)
        sharing = sharing_memories_of(conn, memory_id)
        conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))  # its links go with it
        for original in originals if unshared else ():
            absorbed = self._row(conn, original)
            if absorbed is not None and absorbed["session_id"] == SHARED_SESSION:
                self._forget(conn, absorbed, unshare)
        reinstate(conn, originals, reason)
        # Neighbours' windows held this text: rewrite them so it is gone everywhere.
        refresh_contexts(conn, row["session_id"], [(row["created_at"], row["seq"])],
                         was_global=row["scope"] == "global")
        tombstone = {"hash": row["content_hash"]}
        if unshared:  # sleep must not share it again
            tombstone["unshared"] = sharing_key(row["content"])
        audit(conn, "forget", memory_id, row["session_id"], tombstone)
        self._dissolve_unheld(conn, sharing)

    def _dissolve_unheld(self, conn: sqlite3.Connection, shared_ids: Iterable[str]) -> None:
        """Forget the shared memories among ``shared_ids`` that fewer than two sessions
        still hold: once one forgets its copy, the others' text is theirs alone again."""
        for shared_id in shared_ids:
            shared = self._row(conn, shared_id)
            if shared is not None and held_by_one_session_at_most(conn, shared_id):
                self._forget(conn, shared, unshare=False)

    def import_memories(
        self,
        memories: Iterable[NewMemory],
        usage: Mapping[str, Mapping[str, Any]] | None = None,
        episodes: Sequence[Mapping[str, Any]] = (),
        links: Sequence[Mapping[str, Any]] = (),
        unshared: Iterable[str] = (),
        tombstones: Mapping[str, str] | None = None,
        where: Mapping[str, str] | None = None,
    ) -> int:
        """Add, in one transaction, the episodes and memories whose id is not stored
        yet, the links and ``unshared`` sharing keys not stored yet; return how many
        memories were added.

        ``tombstones`` maps the ids of memories forgotten where the import comes from
        to their sessions: each one not stored here is recorded as forgotten here
        too. One this database holds is kept (an import never deletes).

        ``usage`` maps a memory id to its kept columns (strength, occurrences,
        last_seen_at, access_count, last_accessed_at), written for added memories.
        Each link holds its columns (src_id, dst_id, kind, run_id, created_at) and
        ``where``, how to name it in an error (its file and line), as the ``where``
        argument names each memory, by id. A link whose end is in neither the
        import nor the database raises :class:`InvalidInputError` and nothing is
        written: without it, forget would leave a forgotten memory quoted in a summary.

        A memory forgotten in this database stays forgotten: an older export does not
        bring it back. It is skipped, its links too, and an imported summary that
        quotes it stops quoting it.

        A Ctrl-C that Python raises as the commit returns, once it committed, raises
        :class:`ImportInterrupted` with the count of memories added.
        """
        try:
            with self._db.write("import memories") as conn:
                added = self._import_rows(conn, memories, usage or {}, episodes, links, unshared, tombstones, where)
        except InterruptedAfterCommit as exc:
            # Stored whole: this interrupt must not read as "nothing was imported".
            raise ImportInterrupted(added, self.count_missing_vectors(self.newest_seq())) from exc
        return added

    def _import_rows(
        self,
        conn: sqlite3.Connection,
        memories: Iterable[NewMemory],
        kept: Mapping[str, Mapping[str, Any]],
        episodes: Sequence[Mapping[str, Any]],
        links: Sequence[Mapping[str, Any]],
        unshared: Iterable[str],
        tombstones: Mapping[str, str] | None,
        where: Mapping[str, str] | None,
    ) -> int:
        """:meth:`import_memories` inside its transaction; how many memories it added."""
        added = 0
        forgotten: dict[str, str] = {}  # id -> the text an old export still holds
        stored_as: dict[str, str] = {}  # a file's id -> the id its idempotency key has here
        held: dict[str, NewMemory] = {}  # the file's version of each memory already stored here
        touched: dict[str, list[tuple[float, int]]] = {}
        for memory_id, session_id in sorted((tombstones or {}).items()):
            if not conn.execute(
                "SELECT 1 FROM memories WHERE id = ? UNION ALL "
                "SELECT 1 FROM audit_log WHERE memory_id = ? AND op = 'forget'", (memory_id, memory_id)
            ).fetchone():
                audit(conn, "forget", memory_id, session_id, {"imported": True})
        conn.executemany(
            "INSERT INTO episodes (id, session_id, label, started_at, ended_at) "
            "VALUES (:id, :session_id, :label, :started_at, :ended_at) ON CONFLICT (id) DO NOTHING",
            episodes,
        )
        with Inserting(conn, "import") as inserting:
            for memory in memories:
                exists = conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory.id,)).fetchone()
                if exists is not None:
                    held[memory.id] = memory
                elif conn.execute(
                    "SELECT 1 FROM audit_log WHERE memory_id = ? AND op = 'forget'", (memory.id,)
                ).fetchone():
                    forgotten[memory.id] = memory.content
                else:
                    try:
                        stored_id, seq = self._insert_one(conn, memory, inserting)
                    except InvalidInputError as exc:  # its idempotency key names another memory
                        named = f"memory {memory.id}"
                        if where and memory.id in where:
                            named = f"{where[memory.id]}: {named}"
                        raise InvalidInputError(f"{named}: {exc}; nothing was imported") from exc
                    if stored_id != memory.id:  # the same write, stored here under its own id
                        stored_as[memory.id] = stored_id
                    if seq is not None:
                        if memory.id in kept:
                            conn.execute(
                                "UPDATE memories SET strength = :strength, occurrences = :occurrences, "
                                "last_seen_at = :last_seen_at, access_count = :access_count, "
                                "last_accessed_at = :last_accessed_at WHERE seq = :seq",
                                {**kept[memory.id], "seq": seq},
                            )
                        touched.setdefault(memory.session_id, []).append((memory.created_at, seq))
                        added += 1
        to_unquote = [(link["src_id"], link["dst_id"]) for link in links
                      if link["dst_id"] in forgotten and link["kind"] == "summarises"]
        links = [link for link in links if not {link["src_id"], link["dst_id"]}.intersection(forgotten)]
        # Merging databases that both hold one retried write: its links hold here too.
        links = [{**link, "src_id": stored_as.get(link["src_id"], link["src_id"]),
                  "dst_id": stored_as.get(link["dst_id"], link["dst_id"])} for link in links]
        links = [link for link in links if link["src_id"] != link["dst_id"]]
        for link in links:
            for end in (link["src_id"], link["dst_id"]):
                if conn.execute("SELECT 1 FROM memories WHERE id = ?", (end,)).fetchone() is None:
                    raise InvalidInputError(
                        f"{link['where']}: the {link['kind']} link refers to memory {end}, which is "
                        "not in the database and was not imported; nothing was imported"
                    )
        new_links = [link for link in links if conn.execute(
            "SELECT 1 FROM memory_links WHERE src_id = ? AND dst_id = ? AND kind = ?",
            (link["src_id"], link["dst_id"], link["kind"])).fetchone() is None]
        conn.executemany(
            "INSERT INTO memory_links (src_id, dst_id, kind, run_id, created_at) "
            "VALUES (:src_id, :dst_id, :kind, :run_id, :created_at) ON CONFLICT DO NOTHING",
            [{k: v for k, v in link.items() if k != "where"} for link in new_links],
        )
        self._stand_in_as_exported(conn, new_links, held)
        for summary_id, gone in to_unquote:  # once linked: what it no longer says comes back
            unquote_summary(conn, summary_id, gone, forgotten[gone], f"forgot quoted memory {gone}")
        # Forgotten there, so not to be shared here: sleep reads the audit log.
        for key in sorted(set(unshared) - set(unshared_keys(conn))):
            audit(conn, "import", None, None, {"unshared": key})
        for session_id, positions in touched.items():
            refresh_contexts(conn, session_id, positions)
        return added

    @staticmethod
    def _stand_in_as_exported(
        conn: sqlite3.Connection, new_links: Sequence[Mapping[str, Any]], held: Mapping[str, NewMemory]
    ) -> None:
        """A memory stored here, unchanged, that the exporting database's sleep then
        condensed (a summary or a kept copy now stands for it): it takes the status
        the export gives it, as a sleep here would have. Left active, recall would
        return it beside what stands for it, and no sleep here would ever fold it,
        since the link says it is done."""
        for link in new_links:
            exported = held.get(link["dst_id"])
            if exported is None or exported.status not in ("consolidated", "superseded"):
                continue
            if link["kind"] != "supersedes":  # what stands for it must, as it reads here
                representative = conn.execute(
                    "SELECT session_id, content, metadata FROM memories WHERE id = ?", (link["src_id"],)
                ).fetchone()
                original = {"session_id": exported.session_id, "content": exported.content}
                if not stands_for({**dict(representative), "kind": link["kind"]}, original):
                    continue
            changed = conn.execute(
                "UPDATE memories SET status = ?, updated_at = ? "
                "WHERE id = ? AND status = 'active' AND content_hash = ?",
                (exported.status, time.time(), exported.id, exported.content_hash),
            ).rowcount
            if changed:
                audit(conn, "import", exported.id, exported.session_id, {"status": exported.status})

    def record_event(self, op: str, detail: dict[str, Any]) -> None:
        """Append a database-wide event (a restore, a sleep) to the audit log."""
        with self._db.write(f"record {op}") as conn:
            audit(conn, op, None, None, detail)

    def rebuild_indexes(self, names: Sequence[str], detail: dict[str, Any]) -> None:
        """Rebuild the named derived indexes from the rows, in one audited transaction."""
        with self._db.write("rebuild derived indexes") as conn:
            for index in present(conn):
                if index.name in names:
                    index.rebuild(conn)
            audit(conn, "repair", None, None, {"rebuilt": list(names), **detail})

    def set_meta(self, key: str, value: str) -> None:
        with self._db.write("record metadata") as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- reads ----------------------------------------------------------------------

    def get(self, memory_id: str, viewer_session: str) -> Memory | None:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE id = ? AND (scope = 'global' OR session_id = ?)",
                (memory_id, viewer_session),
            ).fetchone()
        return None if row is None else row_to_memory(row)

    def index_missing_text(self) -> int:
        """Index the text of memories the word index lacks; return how many.

        This release indexes a memory's text as it inserts the row (see migration 5),
        where older releases left it to a trigger that migration 5 dropped. A process
        of an older release still running after an upgrade (a rolling deploy) stores
        memories that nothing indexes: they are indexed here, when a process of this
        release opens the database or sleeps. Counting costs a few milliseconds at
        100k memories; the write happens only when something is missing.
        """
        with self._db.read() as conn:
            missing = conn.execute(
                "SELECT (SELECT count(*) FROM memories) - (SELECT count(*) FROM memories_fts_docsize)"
            ).fetchone()[0]
        if missing <= 0:
            return 0
        try:
            with self._db.write("index the text of memories an older release stored") as conn:
                return conn.execute(
                    "INSERT INTO memories_fts (rowid, content) SELECT seq, content FROM memories AS m "
                    "WHERE NOT EXISTS (SELECT 1 FROM memories_fts_docsize AS d WHERE d.id = m.seq)"
                ).rowcount
        except (ReadOnlyDatabaseError, DatabaseBusyError):
            return 0  # read-only here, or busy: the next open or sleep indexes them

    def compact_text_indexes(
        self, pages_per_step: int = MERGE_PAGES_PER_STEP, stop: threading.Event | None = None
    ) -> int:
        """Merge the full-text indexes' segments; return the steps taken. ``stop``,
        once set, ends the merging after the current step.

        Writes leave FTS5 with many small segments, and every search reads each one:
        merged, a lexical-only recall over 100k memories took 25% less CPU (6.6 ->
        5.0 ms). Each step merges about ``pages_per_step`` pages in its own
        short transaction (at most 0.13 s measured at 100k), so writers never wait
        for the whole merge. A step that changes nothing means the index is merged.
        """
        steps = 0
        for table in _FTS_TABLES.values():
            merged = False
            while not merged:
                if stop is not None and stop.is_set():
                    return steps
                with self._db.write("merge the text index") as conn:
                    before = conn.total_changes
                    # A negative size merges even levels that are not yet full.
                    conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('merge', ?)", (-pages_per_step,))
                    merged = conn.total_changes - before < 2
                steps += 1
        return steps

    def snapshot(self) -> AbstractContextManager[object]:
        """Hold one read snapshot across several reads of this thread (they nest in it)."""
        return self._db.read("read a snapshot")

    def search_text(
        self, queries: Mapping[str, Sequence[str]], filters: Filters, limit: int,
        fallbacks: Mapping[str, str] | None = None, wanted: int = 0,
    ) -> dict[str, list[tuple[int, float]]]:
        """BM25 hits per indexed field: ``{"content": [(seq, score)...], "context": [...]}``.

        ``queries`` maps a field ("content", "context") to safe FTS5 queries (see
        ``core.lexical.fts_queries``); a memory's score in a field is its best over
        that field's queries. Each field is its own FTS table, so each has its own
        length normalisation; filters apply before the limit. Higher is better.

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
        with self._db.read() as conn:
            ranked = {
                (field, query): _ranked(conn, _FTS_TABLES[field], query, wide)
                for field, field_queries in queries.items()
                for query in field_queries
            }
            # NOT INDEXED: look the rows up by seq; the planner may otherwise scan a status index.
            check = f"SELECT m.seq FROM memories AS m NOT INDEXED WHERE {where} AND m.seq IN ({{marks}})"
            seen = list({seq for rows in ranked.values() for seq, _ in rows})
            passing = {row[0] for row in select_in(conn, check, seen, params)}
            for (field, query), rows in ranked.items():
                hits = [(seq, score) for seq, score in rows if seq in passing]
                if len(hits) < limit and len(rows) == wide:
                    hits = _ranked(conn, _FTS_TABLES[field], query, limit, where, params)
                for seq, score in hits:
                    best[field][seq] = max(score, best[field].get(seq, score))
            found = {seq for scores in best.values() for seq in scores}
            if fallbacks and len(found) < wanted and len(passing) < len(seen):
                for field, fallback in fallbacks.items():
                    for seq, score in _ranked(conn, _FTS_TABLES[field], fallback, limit, where, params):
                        best[field].setdefault(seq, score)  # disjoint from the field's queries
        return {field: sorted(scores.items(), key=lambda hit: -hit[1])[:limit] for field, scores in best.items()}

    def term_frequencies(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        """How many memories contain each term, and roughly how many memories there
        are (the highest seq).

        Counting a common term reads all its postings, so counts are kept while
        memories are only added, up to 10% more: a term's share then moves little.
        A forget or a sleep (anything that changes the index epoch) may move one
        term a lot, and a term no memory holds yet may be about to become common:
        those counts are taken again."""
        counts: dict[str, int] = {}
        with self._db.read() as conn:
            total = int(conn.execute("SELECT max(seq) FROM memories").fetchone()[0] or 0)
            epoch = str(conn.execute("SELECT value FROM meta WHERE key = 'index_epoch'").fetchone()[0])
            cache = self._frequencies  # threads share it: work on one dict, swap whole
            counted_at, epoch_then = self._frequencies_as_of
            if epoch != epoch_then or abs(total - counted_at) > 0.1 * max(total, 1):
                cache = {}
                self._frequencies, self._frequencies_as_of = cache, (total, epoch)
            for term in terms:
                count = cache.get(term)
                if count is None:
                    count = int(conn.execute(
                        "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (f'"{term}"',)
                    ).fetchone()[0])
                    if count:
                        cache[term] = count
                counts[term] = count
        return counts, total

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

    def window_similarities(self, query: np.ndarray, seqs: Iterable[int], max_gap_s: float) -> list[tuple[int, float]]:
        """``(seq, similarity)`` of ``query`` to each memory's episode window of
        vectors (see ``VectorIndex.window_similarities``), from the index as the
        last ``search_vectors`` left it: call it after a search that found hits, so
        the index is current and made by the query's embedder."""
        return [] if self._index is None else self._index.window_similarities(query, seqs, max_gap_s)

    def without_vectors(self, seqs: Iterable[int]) -> list[int]:
        """The ``seqs`` the index holds no vector for, as the last ``search_vectors``
        left it (a damaged vector counts as none). Asking the index, not the table:
        reading a memory's vector row costs a page per candidate."""
        return list(seqs) if self._index is None else self._index.lacking(seqs)

    def representatives(
        self, seqs: Iterable[int], filters: Filters, terms: Collection[str] = ()
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
        again: ..."). (A newer value lacks the old one's words on purpose: through a
        supersede, it still stands for it.)
        """
        where, params = filter_sql(filters, alias="m")
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
            passing = {row[0] for row in select_in(
                conn, f"SELECT m.seq FROM memories AS m NOT INDEXED WHERE {where} AND m.seq IN ({{marks}})",
                list({row[1] for row in chains if row[1] is not None}), params,
            )}
            standing_for: dict[int, int | None] = {start: None for start, _, _ in chains}
            newer_value: dict[int, bool] = {}
            for start, candidate, newer in chains:
                if candidate in passing and candidate > (standing_for[start] or 0):
                    standing_for[start], newer_value[start] = candidate, bool(newer)
            pairs = {start: rep for start, rep in standing_for.items() if rep is not None and not newer_value[start]}
            if terms and pairs:
                contents = {row["seq"]: row["content"] for row in select_in(
                    conn, "SELECT seq, content FROM memories WHERE seq IN ({marks})", list({*pairs, *pairs.values()}))}
                held = _terms_held(conn, terms, contents)
                for start, rep in pairs.items():
                    if not held[start] <= held[rep]:
                        standing_for[start] = None  # returned itself: it says what was asked
        return standing_for

    def ranking_facts(self, seqs: Iterable[int]) -> dict[int, sqlite3.Row]:
        """What ranking needs of each candidate (importance, created_at, access_count,
        session_id, source, length, status): a light read, so only the final results
        pay for decoding."""
        with self._db.read() as conn:
            rows = select_in(
                conn,
                "SELECT seq, importance, created_at, access_count, session_id, source, length(content) AS length, "
                "status FROM memories WHERE seq IN ({marks})",
                list(dict.fromkeys(seqs)),
            )
        return {row["seq"]: row for row in rows}

    def contents_by_seq(self, seqs: Iterable[int]) -> dict[int, str]:
        """The text of the memories at ``seqs`` (those still there)."""
        with self._db.read() as conn:
            rows = select_in(conn, "SELECT seq, content FROM memories WHERE seq IN ({marks})", list(seqs))
        return {int(seq): str(content) for seq, content in rows}

    def latest(self, filters: Filters, limit: int) -> list[int]:
        """The seqs of the ``limit`` latest memories passing ``filters``, newest first:
        all of the viewer's own, and other sessions' shared ones among the ``LATEST_SCANNED``
        latest memories of the ``since``..``until`` span.

        The planner would rather take every active memory by status and sort them
        (20-40 ms at 100k), so each part walks a time index from the newest and stops
        after ``limit`` rows pass. The viewer's own memories have an index of their
        own. The others are walked by time among every session's, where filters that
        pass few of them (a source, say) would walk the whole span (33 ms over 100k
        memories): the walk is bounded, and a span that busy is searched by meaning.
        """
        where, params = filter_sql(filters, alias="m")
        with self._db.read() as conn:
            found = conn.execute(
                f"SELECT seq, created_at FROM memories AS m INDEXED BY memories_by_session_time "
                f"WHERE m.session_id = ? AND {where} ORDER BY created_at DESC, seq DESC LIMIT ?",
                [filters.viewer_session, *params, limit],
            ).fetchall()
            if filters.scope != "session":
                span, span_params = _span_sql(filters)
                # The LIMIT keeps the inner walk apart: SQLite does not merge a limited
                # subquery into an outer query that filters it.
                found += conn.execute(
                    f"SELECT seq, created_at FROM (SELECT * FROM memories INDEXED BY memories_by_time "
                    f"WHERE {span} ORDER BY created_at DESC, seq DESC LIMIT ?) AS m "
                    f"WHERE m.scope = 'global' AND {where} LIMIT ?",
                    [*span_params, LATEST_SCANNED, *params, limit],
                ).fetchall()
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

    # -- reads, continued ------------------------------------------------------------

    def iter_dump(self) -> Generator[tuple[str, dict[str, Any]], None, None]:
        """Everything an export holds, as ``(type, stored columns)``: every explicit
        episode, then every memory in id (creation) order, then every link, then the
        sharing key of every shared memory an agent forgot, then the id and session
        of every memory forgotten.

        One read snapshot, so each link's ends are in the same dump even while
        others write. Close the generator if you stop early: it holds that snapshot.
        """
        with self._db.read("export") as conn:
            for row in conn.execute(
                "SELECT id, session_id, label, started_at, ended_at FROM episodes ORDER BY id"
            ):
                yield "episode", dict(row)
            for row in conn.execute(
                "SELECT id, session_id, scope, kind, status, content, source, importance, metadata, "
                "created_at, recorded_at, valid_until, episode_id, idempotency_key, strength, "
                "occurrences, last_seen_at, access_count, last_accessed_at FROM memories ORDER BY id"
            ):
                yield "memory", {**dict(row), "metadata": json.loads(row["metadata"])}
            for row in conn.execute(
                "SELECT src_id, dst_id, kind, run_id, created_at FROM memory_links ORDER BY src_id, dst_id, kind"
            ):
                yield "link", dict(row)
            for key in unshared_keys(conn):
                yield "unshared", {"key": key}
            for row in conn.execute(
                "SELECT memory_id AS id, min(session_id) AS session_id FROM audit_log "
                "WHERE op = 'forget' AND memory_id IS NOT NULL GROUP BY memory_id ORDER BY memory_id"
            ):
                yield "forgotten", dict(row)

    def holds_session(self, session_id: str) -> bool:
        """Whether memories or explicit episodes of ``session_id`` are stored."""
        with self._db.read("look up a session") as conn:
            return session_is_stored(conn, session_id)

    def get_meta(self, key: str) -> str | None:
        with self._db.read() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def counts(self) -> dict[str, dict[str, int]]:
        """Memory counts grouped by scope, status, kind and session."""
        result: dict[str, dict[str, int]] = {}
        with self._db.read() as conn:
            for column in ("scope", "status", "kind", "session_id"):
                rows = conn.execute(
                    f"SELECT {column}, count(*) FROM memories GROUP BY {column} ORDER BY {column}"
                ).fetchall()
                result[column] = {str(key): int(count) for key, count in rows}
        return result

    def schema_version(self) -> int:
        with self._db.read() as conn:
            return schema_version(conn)

    def size_bytes(self) -> int:
        path = Path(self.path)
        return sum(
            p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists()
        )

    def connection(self) -> sqlite3.Connection:
        """This thread's raw connection, for the backup module."""
        return self._db.connect()

    def close(self) -> None:
        if not self._db.closed:
            if self._db.reading_here():  # closed from inside an export, say: write from elsewhere
                background.submit(lambda: self.access.flush(lock_wait=1.0)).result()
            else:
                self.access.flush(lock_wait=1.0)
        self._db.close()

    # -- helpers --------------------------------------------------------------------

    def _visible_row(self, conn: sqlite3.Connection, memory_id: str, viewer_session: str) -> sqlite3.Row:
        row = self._row(conn, memory_id)
        if row is None or not (row["scope"] == "global" or row["session_id"] == viewer_session):
            raise MemoryNotFoundError(memory_id, viewer_session)
        return row

    @staticmethod
    def _row(conn: sqlite3.Connection, memory_id: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = conn.execute(
            f"SELECT seq, {_COLUMNS} FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
        return row


def prepare_path(path: str | Path) -> Path:
    """Validate a database path and create its missing parent directories."""
    if not isinstance(path, (str, Path)) or not str(path).strip():
        raise InvalidInputError(f"db_path must be a non-empty str or Path, got {path!r}")
    if str(path) == ":memory:":
        # Each SQLite connection to ":memory:" is a database of its own, and recall
        # reads on other threads: the memories would be neither shared nor kept.
        raise InvalidInputError(
            "db_path ':memory:' is not supported: Mnemosyne needs a file; for a throwaway "
            "memory use a file in a temporary folder (tempfile.mkdtemp())"
        )
    db_path = expand_user(path, "db_path")
    if db_path.is_dir():
        raise InvalidInputError(f"db_path {db_path} is a directory; pass a file path such as {db_path / 'memories.db'}")
    # The file's header is deliberately not read with open(): closing any descriptor
    # of a database file drops every POSIX lock this process holds on it, including
    # those of other open connections (a classic SQLite corruption). SQLite reads it
    # instead, immutably: a read-write connection to a foreign file would delete a
    # "-wal" beside it on close, and that file may be someone's data.
    if db_path.is_file() and db_path.stat().st_size > 0:
        _refuse_foreign_file(db_path)
    try:
        db_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create the folder for {db_path}: {exc}", db_path) from exc
    return db_path


def _refuse_foreign_file(path: Path) -> None:
    try:
        probe = sqlite3.connect(path.resolve().as_uri() + "?immutable=1", uri=True)
    except sqlite3.Error:
        return  # cannot be opened at all (no file descriptors left...): the real connection reports why
    try:
        probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        if "not a database" in str(exc):
            raise NotADatabaseError(
                f"{path} exists but is not a SQLite database; point db_path at a new file or "
                "at a Mnemosyne database (nothing was changed)",
                path,
            ) from exc
        # Anything else (a damaged page, say) is the real connection's to report.
    finally:
        probe.close()


def _keeping_rule(row: sqlite3.Row, metadata: dict[str, Any]) -> dict[str, Any]:
    """New metadata for ``row``; a summary keeps the rule of the sleep that made it,
    by which the memories it stands for are judged again when it is shortened."""
    rule = json.loads(row["metadata"]).get("rule") if row["kind"] == "summary" else None
    return metadata if rule is None or "rule" in metadata else {**metadata, "rule": rule}


# How many times ``limit`` matches a text search ranks before applying filters.
_OVERFETCH = 2
_FTS_TABLES = {"content": "memories_fts", "context": "memories_context_fts"}


def _ranked(
    conn: sqlite3.Connection, table: str, query: str, limit: int, where: str = "", params: Sequence[Any] = ()
) -> list[tuple[int, float]]:
    """The ``limit`` best BM25 matches of ``query`` in ``table`` (among the memories
    passing ``where``, if given), best first."""
    if not where:
        sql = f"SELECT rowid, -bm25({table}) AS score FROM {table} WHERE {table} MATCH ? ORDER BY score DESC LIMIT ?"
    else:
        sql = (
            f"SELECT m.seq, -bm25({table}) AS score FROM {table} JOIN memories AS m ON m.seq = {table}.rowid "
            f"WHERE {table} MATCH ? AND {where} ORDER BY score DESC LIMIT ?"
        )
    rows = conn.execute(sql, (query, *params, limit)).fetchall()
    return [(int(seq), float(score)) for seq, score in rows]


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
    sql = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rowid IN ({marks})"
    for term, seqs in ask.items():
        for (seq,) in select_in(conn, sql, seqs, (f'"{term}"',)):
            held[seq].add(term)
    return held


def _span_sql(filters: Filters) -> tuple[str, list[Any]]:
    """The WHERE clause for ``filters``' span of ``created_at`` alone (TRUE if open)."""
    clauses, params = ["1"], []
    if filters.since is not None:
        clauses.append("created_at >= ?")
        params.append(filters.since)
    if filters.until is not None:
        clauses.append("created_at <= ?")
        params.append(filters.until)
    return " AND ".join(clauses), params


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


# The type checker holds this backend to the storage contract.
_CONTRACT: type[Store] = SQLiteStore
