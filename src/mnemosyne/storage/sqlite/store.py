"""The SQLite store: rows, full-text index and audit log in one file. Its searches
(``search.py``), imports (``importing.py``) and vectors (``vector_rows.py``) are
mixins of their own."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Generator, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from ... import background
from ...core.consolidation import SHARED_SESSION, sharing_key
from ...core.validation import expand_user
from ...errors import (
    DatabaseBusyError,
    InvalidInputError,
    MemoryNotFoundError,
    NotADatabaseError,
    ReadOnlyDatabaseError,
    StorageError,
)
from ...models import Memory
from ..base import NewMemory, StopSignal, Store
from .access import AccessRecorder
from .backup_file import manifest_path
from .cjk_index import index_edited
from .connection import DEFAULT_BUSY_TIMEOUT_S, Database, open_immutable
from .context_index import refresh_contexts
from .derived import present
from .file_names import refuse_leftover_wal, refuse_other_names
from .idempotency import existing_id, for_key, stored_hashes
from .importing import ImportRows
from .levelling import catch_up, lagging
from .listing import ListingReads
from .migrate import migrate, schema_version
from .rows import _COLUMNS, Inserting, audit, dump_json, row_to_memory
from .search import FTS_TABLES, SearchReads
from .sessions import session_is_stored
from .standing import (
    held_by_one_session_at_most,
    holds_others_copies,
    originals_of,
    reinstate,
    release_changed,
    sharing_memories_of,
    unquote,
    unshared_keys,
)
from .vector_index import VectorIndex, encode_vector
from .vector_rows import VectorRows

# Pages one text-index merge step writes (see ``compact_text_indexes``).
MERGE_PAGES_PER_STEP = 500


class SQLiteStore(SearchReads, ListingReads, ImportRows, VectorRows):
    """Memories in one SQLite file (WAL mode), migrated to the latest schema on open."""

    def __init__(self, path: str | Path, busy_timeout: float = DEFAULT_BUSY_TIMEOUT_S) -> None:
        self.path = str(path)
        db_path = prepare_path(path)
        self._db = Database(db_path, busy_timeout=busy_timeout)
        self.access = AccessRecorder(self._db)
        self._index: VectorIndex | None = None
        self._frequencies: dict[str, int] = {}
        self._frequencies_as_of: tuple[int, str] = (0, "")  # (memories then, index epoch then)
        self._sources: tuple[tuple[int, str, int], frozenset[str] | None] = ((0, "", 0), frozenset())
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
                index_edited(conn, row["seq"], row["session_id"], row["created_at"], values["content"])
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
        sessions' own copies come back. So does a global memory that other sessions'
        copies were folded into: it stood for them as a shared one does, and sharing
        their copies anew would give every session back what was forgotten. A
        shared memory fewer than two sessions still hold is dissolved: its copies,
        and what it absorbed, come back.
        """
        memory_id = row["id"]
        reason = f"forgot {memory_id}"
        unshared = unshare and (row["session_id"] == SHARED_SESSION or (
            row["scope"] == "global" and holds_others_copies(conn, memory_id, row["session_id"])))
        unquote(conn, memory_id, row["content"], reason, forgotten=True)
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
        """Index the text of memories the word indexes lack; return how many memories
        (or places of a change, for the CJK and emoji forms) were brought level.

        This release indexes a memory's text as it inserts the row (see migration 5),
        where older releases left it to a trigger that migration 5 dropped. A process
        of an older release still running after an upgrade (a rolling deploy) stores
        memories that nothing indexes, and the previous release knows nothing of the
        CJK and emoji forms (migration 9): they are indexed here, when a process of
        this release opens the database or sleeps. Counting costs a few milliseconds
        at 100k memories; the write happens only when something is missing.
        """
        with self._db.read() as conn:
            missing = conn.execute(
                "SELECT (SELECT count(*) FROM memories) - (SELECT count(*) FROM memories_fts_docsize)"
            ).fetchone()[0]
            behind = lagging(conn)
        if missing <= 0 and not behind:
            return 0
        try:
            with self._db.write("index the text of memories an older release stored") as conn:
                indexed = 0
                if missing > 0:
                    indexed = conn.execute(
                        "INSERT INTO memories_fts (rowid, content) SELECT seq, content FROM memories AS m "
                        "WHERE NOT EXISTS (SELECT 1 FROM memories_fts_docsize AS d WHERE d.id = m.seq)"
                    ).rowcount
                return indexed + (catch_up(conn) if behind else 0)
        except (ReadOnlyDatabaseError, DatabaseBusyError):
            return 0  # read-only here, or busy: the next open or sleep indexes them

    def compact_text_indexes(
        self, pages_per_step: int = MERGE_PAGES_PER_STEP, stop: StopSignal | None = None
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
        for table in FTS_TABLES:
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

    @property
    def busy_timeout(self) -> float:
        return self._db.busy_timeout

    def connection(self) -> sqlite3.Connection:
        """This thread's raw connection, for the backup module."""
        return self._db.connect()

    def close(self) -> None:
        if not self._db.closed:
            if self._db.reading_here():  # closed from inside an export, say: write from elsewhere
                background.result_of(background.submit(lambda: self.access.flush(lock_wait=1.0)))
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
    if db_path.is_dir() or str(path).endswith(("/", os.sep)):
        raise InvalidInputError(f"db_path {path} names a directory; pass a file path such as {db_path / 'memories.db'}")
    if manifest_path(db_path).exists():
        # Opening a file as a database changes it (journal mode, schema upgrade, access
        # counts): a backup would then no longer match its manifest, and be refused.
        raise InvalidInputError(
            f"db_path {db_path} is a backup (its manifest {manifest_path(db_path).name} is beside it); "
            "opening it as a database would change it and spoil it as a backup: restore it with "
            f"`mnemosyne restore {db_path} --db <database>`, or look inside a copy of it"
        )
    refuse_other_names(db_path)
    refuse_leftover_wal(db_path)
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
        probe = open_immutable(path)
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


# The type checker holds this backend to the storage contract.
_CONTRACT: type[Store] = SQLiteStore
