"""Numbered schema migrations, applied automatically when a database is opened.

The pending ones run in one transaction (see ``migrate``), and each records its
checksum, so an edited migration is detected instead of silently diverging.
Migrations are append-only: never change a released one, add the next number.
``tests/fixtures/`` keeps a database made by every released schema, and a test
opens each with today's code.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...errors import NotADatabaseError


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str
    # A data step run in the same transaction, after the SQL (e.g. filling a new index).
    after: Callable[[sqlite3.Connection], None] | None = None
    # Checksums of text this migration had in an earlier release. A released
    # migration is never edited again; one that was is accepted as it was applied,
    # and a later migration brings its databases level.
    applied_earlier_as: tuple[str, ...] = ()
    # The derived indexes (derived.py names) the data step rebuilds from the rows:
    # until it runs, ``doctor`` need not hold them to today's rules.
    rebuilds: tuple[str, ...] = ()

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()

    def applied_as(self, checksum: str) -> bool:
        """Whether a database that recorded ``checksum`` for this migration ran it."""
        return checksum in (self.checksum, *self.applied_earlier_as)


_V1_INITIAL = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE memories (
    seq              INTEGER PRIMARY KEY,  -- rowid; links the full-text index
    id               TEXT NOT NULL UNIQUE,
    session_id       TEXT NOT NULL,
    scope            TEXT NOT NULL CHECK (scope IN ('session', 'global')),
    kind             TEXT NOT NULL DEFAULT 'episodic'
                     CHECK (kind IN ('episodic', 'summary', 'fact')),
    status           TEXT NOT NULL DEFAULT 'active'
                     CHECK (status IN ('active', 'consolidated', 'superseded', 'expired')),
    content          TEXT NOT NULL,
    content_hash     TEXT NOT NULL,
    source           TEXT NOT NULL,
    importance       REAL NOT NULL CHECK (importance BETWEEN 0 AND 1),
    metadata         TEXT NOT NULL DEFAULT '{}',
    created_at       REAL NOT NULL,
    recorded_at      REAL NOT NULL,
    updated_at       REAL NOT NULL,
    valid_until      REAL,
    access_count     INTEGER NOT NULL DEFAULT 0,
    last_accessed_at REAL,
    idempotency_key  TEXT UNIQUE
);
CREATE INDEX memories_by_session_time ON memories (session_id, created_at);
CREATE INDEX memories_by_status_scope ON memories (status, scope);
CREATE INDEX memories_by_hash ON memories (content_hash);

-- External-content FTS: the text lives once, in memories; triggers keep the index
-- in the same transaction as the row.
CREATE VIRTUAL TABLE memories_fts USING fts5(
    content,
    content = 'memories',
    content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content) VALUES (new.seq, new.content);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', old.seq, old.content);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', old.seq, old.content);
    INSERT INTO memories_fts (rowid, content) VALUES (new.seq, new.content);
END;

-- Every change, in order. Holds ids and hashes, never content, so forget() really
-- removes the text while the log still explains what happened.
CREATE TABLE audit_log (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    at         REAL NOT NULL,
    op         TEXT NOT NULL,
    memory_id  TEXT,
    session_id TEXT,
    detail     TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_by_memory ON audit_log (memory_id);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;
"""

_V2_SEMANTIC_RECALL = """
-- One vector per memory (float16, dimension recorded in meta 'embedder'), written in
-- the same transaction as the row when the embedder is available, backfilled later
-- when it is not.
CREATE TABLE memory_vectors (
    seq    INTEGER PRIMARY KEY,  -- memories.seq
    vector BLOB NOT NULL
);
CREATE TRIGGER memory_vectors_follow_delete AFTER DELETE ON memories BEGIN
    DELETE FROM memory_vectors WHERE seq = old.seq;
END;

-- Each event indexed with its neighbours (see core/context.py). A separate table, so
-- BM25 normalises its length apart from the memory's own text.
CREATE VIRTUAL TABLE memories_context_fts USING fts5(
    context,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_context_follow_delete AFTER DELETE ON memories BEGIN
    DELETE FROM memories_context_fts WHERE rowid = old.seq;
END;

-- Processes keep an in-memory vector index. Appends are picked up by seq; anything
-- else that invalidates it (a delete, a changed filter column, a vector written for
-- an older memory) bumps this epoch so every process reloads.
INSERT INTO meta (key, value) VALUES ('index_epoch', '0');
CREATE TRIGGER index_epoch_on_delete AFTER DELETE ON memories BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'index_epoch';
END;
CREATE TRIGGER index_epoch_on_update AFTER UPDATE OF session_id, scope, status, kind, source, created_at
ON memories BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'index_epoch';
END;
CREATE TRIGGER index_epoch_on_vector_update AFTER UPDATE ON memory_vectors BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'index_epoch';
END;
CREATE TRIGGER index_epoch_on_vector_delete AFTER DELETE ON memory_vectors BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'index_epoch';
END;
CREATE TRIGGER index_epoch_on_late_vector AFTER INSERT ON memory_vectors
WHEN new.seq < (SELECT coalesce(max(seq), 0) FROM memory_vectors WHERE seq <> new.seq) BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'index_epoch';
END;
"""


def _rebuild_contexts(conn: sqlite3.Connection) -> None:
    # Schema 2 indexes the windows of memories already stored. Schema 4 rebuilds them:
    # earlier releases kept a forgotten memory's words, and a promoted memory's
    # private neighbours, in other memories' windows. Schema 6 ends them at a silence.
    from .context_index import refresh_all_contexts

    refresh_all_contexts(conn)


_V3_EPISODES_AND_SLEEP = """
-- Consolidation state per memory: how strong it still is, how often it was seen
-- (merged duplicates), when it was last seen, and the explicit episode it belongs to.
ALTER TABLE memories ADD COLUMN strength REAL NOT NULL DEFAULT 1.0;
ALTER TABLE memories ADD COLUMN occurrences INTEGER NOT NULL DEFAULT 1;
ALTER TABLE memories ADD COLUMN last_seen_at REAL;
ALTER TABLE memories ADD COLUMN episode_id TEXT;
CREATE INDEX memories_by_episode ON memories (episode_id);

-- Episodes opened explicitly with `with mem.episode(label):`; time-gap episodes are
-- computed from created_at and need no row.
CREATE TABLE episodes (
    id         TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    label      TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at   REAL
);

-- Provenance: `src` (a summary, a canonical memory, a newer fact) stands for `dst`.
-- Deleting either memory (forget) removes the link with it.
CREATE TABLE memory_links (
    src_id     TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    dst_id     TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('summarises', 'merges', 'supersedes')),
    run_id     TEXT,
    created_at REAL NOT NULL,
    PRIMARY KEY (src_id, dst_id, kind)
);
CREATE INDEX memory_links_by_dst ON memory_links (dst_id);
CREATE INDEX memory_links_by_run ON memory_links (run_id);

-- One row per sleep: its report and what is needed to undo it exactly.
CREATE TABLE sleep_runs (
    id          TEXT PRIMARY KEY,
    started_at  REAL NOT NULL,
    finished_at REAL NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('applied', 'undone')),
    report      TEXT NOT NULL,
    undo        TEXT NOT NULL
);

-- Named leases (one sleeper per database); an expired lease may be taken over.
CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID;
"""


_V4_REPAIR_DERIVED_STATE = """
-- A changed expiry must reload every process's vector index too (it filters by it).
-- Databases made by releases whose migration 2 already said so get the same trigger.
DROP TRIGGER IF EXISTS index_epoch_on_update;
CREATE TRIGGER index_epoch_on_update AFTER UPDATE OF session_id, scope, status, kind, source, created_at,
    valid_until
ON memories BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'index_epoch';
END;
"""


_V5_TEXT_INDEXED_BY_THE_INSERT = """
-- A new row's text reaches the full-text index from the insert itself (store.py),
-- not from a trigger. A trigger's write runs under a statement savepoint, and FTS5
-- flushes its pending terms to disk at every savepoint: each memory was written as
-- an index segment of its own, to be merged again. That was a quarter to nearly half
-- of a bulk ingest's time at 100k memories. Deletes and edits, one at a time, keep
-- theirs. Rows that a process of an older release still inserts without indexing
-- them are indexed by store.index_missing_text; until then, FTS5 refuses to delete
-- what it never held ("malformed"), so deletes and edits only take out text it has.
DROP TRIGGER memories_fts_insert;
DROP TRIGGER memories_fts_delete;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories
WHEN EXISTS (SELECT 1 FROM memories_fts_docsize WHERE id = old.seq) BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', old.seq, old.content);
END;
DROP TRIGGER memories_fts_update;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content)
        SELECT 'delete', old.seq, old.content WHERE EXISTS (SELECT 1 FROM memories_fts_docsize WHERE id = old.seq);
    INSERT INTO memories_fts (rowid, content) VALUES (new.seq, new.content);
END;
"""


_V6_CONTEXT_WITHIN_AN_EPISODE = """
-- An episode context window ends where its session fell silent for over an hour
-- (core/context.py): every window is rebuilt by the data step.

-- The latest memories of a span a query names ("what happened yesterday"), without
-- reading and sorting every memory.
CREATE INDEX memories_by_time ON memories (created_at);
"""


_V7_SHARED_MEMORIES_BY_TIME = """
-- The latest memories of a span come from two walks, each over what it may return:
-- a session's own (memories_by_session_time) and the shared ones of every session.
-- A walk over every memory by time passed through other sessions' private ones,
-- which a busy span holds by the thousand. (memories_by_time stays: processes of
-- the previous release, still running during a rolling upgrade, name it.)
CREATE INDEX memories_by_scope_time ON memories (scope, created_at);
"""


_V8_MEMORIES_BY_SOURCE = """
-- A source's latest memories ("what did ci-bot say"), from the same two walks as a
-- span's, each down one source: a session's own, and the shared ones of every
-- session. A walk by time alone passed through every other source's memories, all
-- of a session's for a source it rarely heard from. Either index also lists the
-- database's few distinct sources without reading its many memories.
CREATE INDEX memories_by_source_session_time ON memories (source, session_id, created_at);
CREATE INDEX memories_by_source_scope_time ON memories (source, scope, created_at);
"""


_V9_CJK_AND_EMOJI_WORDS = """
-- Memories whose text holds CJK letters or emoji are indexed a second time here, in
-- the form core/cjk.py gives them (characters and pairs of characters, emoji tokens):
-- memories_fts indexes the text exactly as stored, where a CJK run is one word.
-- Context windows holding either are stored in that form in memories_context_fts.
-- The data step indexes the memories already stored.
CREATE VIRTUAL TABLE memories_cjk_fts USING fts5(
    content,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- A process of the previous release, still running during a rolling upgrade, writes
-- without knowing this form; store.index_missing_text brings its writes level. The
-- memories it adds lie above the seq 'cjk_indexed_through' (this release moves it
-- past its own); the places where it edited, forgot or moved one are queued here.
-- This release's own changes are queued too, and taken off as it rewrites those
-- places' windows (context_index.py).
INSERT INTO meta (key, value) VALUES ('cjk_indexed_through', '0');
CREATE TABLE memories_cjk_pending (
    session_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (session_id, created_at, seq)
) WITHOUT ROWID;

-- Whoever forgets or edits a memory takes its text out of this index at once.
CREATE TRIGGER memories_cjk_follow_delete AFTER DELETE ON memories BEGIN
    DELETE FROM memories_cjk_fts WHERE rowid = old.seq;
    INSERT OR IGNORE INTO memories_cjk_pending (session_id, created_at, seq)
        VALUES (old.session_id, old.created_at, old.seq);
    -- Seqs go on from the highest left: the next memory may take a seq looked at before.
    UPDATE meta SET value = (SELECT coalesce(max(seq), 0) FROM memories)
        WHERE key = 'cjk_indexed_through' AND CAST(value AS INTEGER) > (SELECT coalesce(max(seq), 0) FROM memories);
END;
CREATE TRIGGER memories_cjk_follow_update AFTER UPDATE OF content ON memories BEGIN
    DELETE FROM memories_cjk_fts WHERE rowid = old.seq;
    INSERT OR IGNORE INTO memories_cjk_pending (session_id, created_at, seq)
        VALUES (new.session_id, new.created_at, new.seq);
END;
CREATE TRIGGER memories_cjk_follow_move AFTER UPDATE OF scope, created_at ON memories BEGIN
    INSERT OR IGNORE INTO memories_cjk_pending (session_id, created_at, seq)
        VALUES (old.session_id, old.created_at, old.seq), (new.session_id, new.created_at, new.seq);
END;
"""


_V10_INDEX_CHANGES = """
-- The memory each move of the index epoch is about, logged by the trigger that moves
-- it: a process's vector index reads just those memories again (vector_index.py)
-- rather than every vector (0.7-0.9 s at 100k x 384, after each forget or edit in
-- any process). An epoch moved otherwise (a restore) has no entry: processes reload.
-- The latest 10,000 are kept; a process further behind reloads too.
CREATE TABLE index_changes (
    epoch INTEGER PRIMARY KEY,
    seq   INTEGER NOT NULL
);
CREATE TRIGGER index_changes_kept AFTER INSERT ON index_changes BEGIN
    DELETE FROM index_changes WHERE epoch <= new.epoch - 10000;
END;
DROP TRIGGER index_epoch_on_delete;
CREATE TRIGGER index_epoch_on_delete AFTER DELETE ON memories BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'index_epoch';
    INSERT OR REPLACE INTO index_changes (epoch, seq)
        SELECT CAST(value AS INTEGER), old.seq FROM meta WHERE key = 'index_epoch';
END;
DROP TRIGGER index_epoch_on_update;
CREATE TRIGGER index_epoch_on_update AFTER UPDATE OF session_id, scope, status, kind, source, created_at,
    valid_until
ON memories BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'index_epoch';
    INSERT OR REPLACE INTO index_changes (epoch, seq)
        SELECT CAST(value AS INTEGER), new.seq FROM meta WHERE key = 'index_epoch';
END;
DROP TRIGGER index_epoch_on_vector_update;
CREATE TRIGGER index_epoch_on_vector_update AFTER UPDATE ON memory_vectors BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'index_epoch';
    INSERT OR REPLACE INTO index_changes (epoch, seq)
        SELECT CAST(value AS INTEGER), old.seq FROM meta WHERE key = 'index_epoch';
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'index_epoch';
    INSERT OR REPLACE INTO index_changes (epoch, seq)
        SELECT CAST(value AS INTEGER), new.seq FROM meta WHERE key = 'index_epoch';
END;
DROP TRIGGER index_epoch_on_vector_delete;
CREATE TRIGGER index_epoch_on_vector_delete AFTER DELETE ON memory_vectors BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'index_epoch';
    INSERT OR REPLACE INTO index_changes (epoch, seq)
        SELECT CAST(value AS INTEGER), old.seq FROM meta WHERE key = 'index_epoch';
END;
DROP TRIGGER index_epoch_on_late_vector;
CREATE TRIGGER index_epoch_on_late_vector AFTER INSERT ON memory_vectors
WHEN new.seq < (SELECT coalesce(max(seq), 0) FROM memory_vectors WHERE seq <> new.seq) BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'index_epoch';
    INSERT OR REPLACE INTO index_changes (epoch, seq)
        SELECT CAST(value AS INTEGER), new.seq FROM meta WHERE key = 'index_epoch';
END;
"""


_V11_MEMORIES_BY_IMPORTANCE = """
-- A listing of a span ("what happened in March", "what did ci-bot say last week")
-- puts the span's most important memories first, however many it holds: each walk
-- (a session's own, the shared ones of every session) goes down one of these, a
-- status at a time, from the most important, checking the time and source in the
-- index, until enough memories of the span pass. Read by time, the span's every row
-- was read and sorted (50 ms a walk over 100,000 memories of a year); by importance
-- alone, a status few memories have (those sleep consolidated) had every row read.
CREATE INDEX memories_by_session_importance ON memories (session_id, status, importance, created_at, source);
CREATE INDEX memories_by_scope_importance ON memories (scope, status, importance, created_at, source);
"""


_V12_WINDOWS_OF_LONG_EVENTS = """
-- A context window holds at most the first 8,000 characters of each of its events
-- (core/context.py): the data step rewrites the windows around every longer event.
"""


def _cut_windows_of_long_events(conn: sqlite3.Connection) -> None:
    from ...core.context import EVENT_CHARS
    from .context_index import refresh_contexts

    long_events: dict[str, list[tuple[float, int]]] = {}
    for session_id, created_at, seq in conn.execute(
        "SELECT session_id, created_at, seq FROM memories WHERE kind = 'episodic' AND length(content) > ?",
        (EVENT_CHARS,),
    ):
        long_events.setdefault(session_id, []).append((created_at, seq))
    for session_id, positions in long_events.items():
        refresh_contexts(conn, session_id, positions)


def _index_cjk_and_emoji(conn: sqlite3.Connection) -> None:
    from .levelling import index_stored

    index_stored(conn)


_CONTEXTS = ("memories_context_fts",)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial", _V1_INITIAL),
    Migration(
        2, "semantic recall", _V2_SEMANTIC_RECALL, after=_rebuild_contexts, rebuilds=_CONTEXTS,
        applied_earlier_as=("01cf43c68cb014bc7231859e2a556ef52e027c6c52bfb1e05dad85e1a96a0303",),
    ),
    Migration(3, "episodes and sleep", _V3_EPISODES_AND_SLEEP),
    Migration(4, "repair derived state", _V4_REPAIR_DERIVED_STATE, after=_rebuild_contexts, rebuilds=_CONTEXTS),
    Migration(5, "text indexed by the insert", _V5_TEXT_INDEXED_BY_THE_INSERT),
    Migration(
        6, "context within an episode, memories by time", _V6_CONTEXT_WITHIN_AN_EPISODE, after=_rebuild_contexts,
        rebuilds=_CONTEXTS,
    ),
    Migration(7, "shared memories by time", _V7_SHARED_MEMORIES_BY_TIME),
    Migration(8, "memories by source", _V8_MEMORIES_BY_SOURCE),
    Migration(
        9, "CJK and emoji words", _V9_CJK_AND_EMOJI_WORDS, after=_index_cjk_and_emoji,
        rebuilds=(*_CONTEXTS, "memories_cjk_fts"),
    ),
    Migration(10, "index changes", _V10_INDEX_CHANGES),
    Migration(11, "memories by importance", _V11_MEMORIES_BY_IMPORTANCE),
    Migration(
        12, "windows of long events", _V12_WINDOWS_OF_LONG_EVENTS, after=_cut_windows_of_long_events,
        rebuilds=_CONTEXTS,
    ),
)

LATEST_VERSION = MIGRATIONS[-1].version


def rebuilt_by_upgrade(version: int) -> frozenset[str]:
    """The derived indexes that upgrading a database of schema ``version`` rebuilds."""
    return frozenset(name for m in MIGRATIONS if m.version > version for name in m.rebuilds)


BOOKKEEPING = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    checksum   TEXT NOT NULL,
    applied_at REAL NOT NULL
)
"""

_CREATED = re.compile(r"CREATE\s+(VIRTUAL\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.IGNORECASE)
_CREATED_BY_US = [match.groups() for m in MIGRATIONS for match in _CREATED.finditer(m.sql)]
_OUR_TABLES = frozenset(name for _, name in _CREATED_BY_US) | {"schema_migrations"}
# FTS5 keeps each virtual table's data in shadow tables named <table>_data, _idx, ...
_OUR_SHADOW_PREFIXES = tuple(f"{name}_" for virtual, name in _CREATED_BY_US if virtual)


# Tables every release's migration 1 created, with the schema number: other
# applications number their schemas in user_version too, so the number alone does
# not make a database ours.
_MARKS = frozenset({"meta", "memories", "schema_migrations"})


def refuse_foreign(conn: sqlite3.Connection, path: str | Path) -> None:
    """Raise :class:`NotADatabaseError` if ``conn`` is another application's database.

    A Mnemosyne database is told by its tables, not by ``user_version`` alone, which
    many applications set. A file that holds tables of its own and no Mnemosyne
    schema belongs to someone else: initialising or upgrading it would add our
    tables and switch it to WAL mode behind that application's back. An empty file
    is fine. Reads only: call it before anything is written.
    """
    reason = foreign_reason(conn)
    if reason is not None:
        raise NotADatabaseError(
            f"{path} is another application's SQLite database ({reason}); it was left unchanged: "
            "point db_path at a new file or at a Mnemosyne database",
            path,
        )


def foreign_reason(conn: sqlite3.Connection) -> str | None:
    """What shows ``conn``'s database to be another application's (its tables, and a
    ``user_version`` no Mnemosyne schema set), or None if it is ours or empty."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    if version != 0 and _MARKS <= names:
        return None  # ours, of any release, newer ones included: the caller compares the version
    theirs = sorted(
        name for name in names
        if name not in _OUR_TABLES and not name.startswith(("sqlite_", *_OUR_SHADOW_PREFIXES))
    )
    if version == 0:
        return None if not theirs else f"tables {_listed(theirs)}, no Mnemosyne schema"
    shown = theirs or sorted(name for name in names if not name.startswith("sqlite_"))
    tables = f"tables {_listed(shown)}" if shown else "no tables"
    return f"{tables}; its user_version {version} is that application's, not a Mnemosyne schema"


def _listed(names: list[str]) -> str:
    return ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
