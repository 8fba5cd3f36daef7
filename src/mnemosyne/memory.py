"""The ``Mnemosyne`` facade: validation and visibility rules over a store."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import numpy as np

from . import _closing, embedding, retrieval, transfer
from ._backfill import Backfill, embed_all
from .consolidate import SleepMixin
from .core.consolidation import SHARED_SESSION, SleepPolicy
from .core.dedupe_window import DEFAULT_DEDUPE_WINDOW_S, dedupe_since
from .core.fingerprint import content_hash, same_text
from .core.ids import new_id
from .core.signature import same_embedder
from .core.timeutil import (
    TimeLike,
    check_valid_until,
    from_timestamp,
    now,
    optional_timestamp,
    time_range,
    zone_of,
)
from .core.validation import (
    check_content,
    check_flag,
    check_importance,
    check_label,
    check_metadata,
    check_query,
    check_scope,
    check_seconds,
    check_session_id,
    check_sources,
    check_top_k,
    expand_user,
)
from .embedders import registry
from .embedders.base import Embedder
from .episodic import DEFAULT_EPISODE_GAP, EpisodicMixin
from .errors import EmbedderError, ImportInterrupted, InvalidInputError
from .models import DoctorReport, Memory, SleepReport, Stats
from .storage.base import Filters, NewMemory
from .storage.sqlite import SQLiteStore
from .storage.sqlite.backup_file import database_files
from .storage.sqlite.connection import DEFAULT_BUSY_TIMEOUT_S
from .storage.sqlite.sessions import file_holds_session

DB_ENV_VAR = "MNEMOSYNE_DB"

# ``progress(done, total)``: how long operations report how far they are (total may be None).
Progress = Callable[[int, "int | None"], None]
T = TypeVar("T")


def default_db_path() -> Path:
    """``$MNEMOSYNE_DB``, else ``$XDG_DATA_HOME/mnemosyne/memories.db``
    (``~/.local/share/mnemosyne/memories.db`` when XDG_DATA_HOME is unset or relative)."""
    explicit = os.environ.get(DB_ENV_VAR)
    if explicit:
        if explicit.endswith(("/", os.sep)):  # a Path would drop the separator, and make a file of the folder
            raise InvalidInputError(f"${DB_ENV_VAR} {explicit} names a directory; name a file in it, "
                                    f"such as {explicit}memories.db")
        return expand_user(explicit, DB_ENV_VAR)
    # The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored: it
    # would put the database wherever the command happens to run.
    data_home = Path(os.environ.get("XDG_DATA_HOME") or "")
    if not data_home.is_absolute():
        data_home = Path.home() / ".local" / "share"
    return data_home / "mnemosyne" / "memories.db"


class Mnemosyne(EpisodicMixin, SleepMixin):
    """Durable memory for one agent session, in one database.

    Reconnect with the same ``session_id`` and ``db_path`` after a restart and the
    session's memories (and every global one) are there again::

        mem = Mnemosyne(session_id="website-redesign", db_path="/data/memories.db")
        mem.remember("User approved the colour palette.", importance=0.7)
        for item in mem.recall("design progress", top_k=5):
            print(item)

    ``db_path`` defaults to :func:`default_db_path`. Missing parent folders are
    created. Use it as a context manager, or call :meth:`close`.

    Many threads and processes may share one database. ``busy_timeout`` (seconds)
    bounds how long a call waits for other writers' locks before
    :class:`DatabaseBusyError`. ``dedupe_window`` (seconds; 0 turns it off): a
    ``remember`` that repeats one made within this window (same text up to
    whitespace, same session, scope, source, importance, metadata and expiry)
    returns the existing memory's id instead of storing a duplicate.

    ``embedder`` makes the vectors of semantic recall: a spec (``"local"``,
    ``"none"``, ``"sentence-transformers:<model>"``, ``"openai:<model>"``) or an
    object; by default the one the database recorded, else the best installed.
    Memories stored without a vector get one in the background after open and when
    a failing model answers again; ``auto_backfill=False`` leaves that to
    :meth:`backfill_vectors` and sleep, so an instance that only reads never writes
    a vector nor records an embedder (recall still counts its results).
    """

    def __init__(
        self,
        session_id: str = "default",
        db_path: str | Path | None = None,
        *,
        embedder: str | Embedder | None = None,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT_S,
        dedupe_window: float = DEFAULT_DEDUPE_WINDOW_S,
        auto_sleep: bool | float | None = None,
        sleep_policy: SleepPolicy | None = None,
        episode_gap: float = DEFAULT_EPISODE_GAP,
        auto_backfill: bool = True,
    ) -> None:
        # Every argument is checked before the database is opened: a refused one must
        # not leave a new file, new folders or a migrated schema behind.
        self.dedupe_window = check_seconds(dedupe_window, "dedupe_window")
        busy_timeout = check_seconds(busy_timeout, "busy_timeout")
        gap = self._check_episode_gap(episode_gap)
        # auto_sleep: True (sleep after 5 idle minutes) or an idle period in seconds.
        policy, idle = self._check_sleep_args(sleep_policy, auto_sleep)
        self._auto_backfill = check_flag(auto_backfill, "auto_backfill")
        requested = _resolve_embedder(embedder)
        path = default_db_path() if db_path is None else db_path
        # Last, as the only check that may read the file: a session id over the limit
        # is one an earlier release stored, or a mistake.
        self.session_id = self._check_own_session(session_id, path, busy_timeout)
        store = SQLiteStore(path, busy_timeout=busy_timeout)
        try:
            slot = embedding.choose(requested, store.recorded_embedder())
        except BaseException:
            store.close()
            raise
        self._start(store, slot, gap, policy, idle, backfill=None, gate=None)
        if self._auto_backfill:
            self._backfill.start()

    def _start(
        self, store: SQLiteStore, slot: embedding.EmbedderSlot, gap: float, policy: SleepPolicy, idle: float | None,
        backfill: Backfill | None, gate: _closing.Gate | None,
    ) -> None:
        """Take up ``store`` and the model in ``slot``; with ``backfill`` and ``gate``,
        another instance's, which owns all three (see :meth:`_for_session`)."""
        self._store, self._owns_store = store, backfill is None
        self._gate = _closing.Gate(str(store.path)) if gate is None else gate
        self.db_path = Path(store.path)
        self._embedder = slot
        self._init_episodic(gap)
        self._init_sleep(policy, idle)
        self._backfill = Backfill(store, slot) if backfill is None else backfill

    def _for_session(self, session_id: str) -> Mnemosyne:
        """An instance acting as ``session_id`` over this one's open database.

        Its connections, vector index and model are this one's: a server of many
        sessions holds them once, where an instance of its own per session would
        hold a connection per worker thread and a copy of the index each. It never
        sleeps by itself, and backfills with this one's pass: closing it stops
        neither. Close it first.
        """
        sibling = Mnemosyne.__new__(Mnemosyne)
        sibling.dedupe_window, sibling._auto_backfill = self.dedupe_window, self._auto_backfill
        sibling.session_id = self._check_own_session(session_id, self.db_path, self._store.busy_timeout)
        sibling._start(
            self._store, self._embedder, self.episode_gap, self.sleep_policy, None, self._backfill, self._gate
        )
        return sibling

    # -- writing --------------------------------------------------------------------

    @_closing.call
    def remember(
        self,
        content: str,
        source: str = "conversation",
        importance: float = 0.5,
        scope: str = "session",
        metadata: Mapping[str, Any] | None = None,
        created_at: TimeLike | None = None,
        valid_until: TimeLike | None = None,
        *,
        idempotency_key: str | None = None,
        allow_duplicate: bool = False,
    ) -> str:
        """Store one memory and return its id.

        ``scope="session"`` keeps it visible to this session only; ``"global"``
        shares it with every session of the database. ``created_at`` records when
        it happened (default: now); ``valid_until`` hides it from recall after then.

        Safe to retry: with an ``idempotency_key``, a retry of the same write (from
        any process) returns the id stored the first time; reusing a key for other
        content raises :class:`InvalidInputError`. Without a key, the same content
        remembered again within ``dedupe_window`` returns the existing id, unless
        ``allow_duplicate=True``.

        >>> mem.remember("Deploy window is Friday 18:00 UTC", source="ops", importance=0.8)
        '01938f7e-...'
        """
        memory = self._prepare(
            content=content, source=source, importance=importance, scope=scope,
            metadata=metadata, created_at=created_at, valid_until=valid_until,
            idempotency_key=idempotency_key, allow_duplicate=allow_duplicate,
        )
        return self._insert([memory])[0]

    @_closing.call
    def remember_many(self, items: Iterable[str | Mapping[str, Any]]) -> list[str]:
        """Store many memories in one transaction; return their ids in order.

        ``items`` is a list (or other iterable) of items; each item is the content
        string or a dict of :meth:`remember`'s arguments (``idempotency_key`` and
        ``allow_duplicate`` included). Every item is validated first: one bad item
        stores nothing.

        >>> mem.remember_many(["first event", {"content": "second", "importance": 0.9}])
        """
        # A string or a dict is iterable too, and would be stored one character (or
        # one key) at a time.
        if isinstance(items, (str, bytes, bytearray, Mapping)) or not isinstance(items, Iterable):
            raise InvalidInputError(
                f"remember_many takes a list of items, got a single {type(items).__name__}; "
                "wrap it in a list (remember_many([item])) or call remember()"
            )
        prepared = []
        for index, item in enumerate(items):
            fields = {"content": item} if isinstance(item, str) else item
            if not isinstance(fields, Mapping):
                raise InvalidInputError(
                    f"item {index} must be a string or a dict of remember() arguments, "
                    f"got {type(item).__name__}"
                )
            unknown = set(fields) - _REMEMBER_FIELDS
            if unknown or "content" not in fields:
                raise InvalidInputError(
                    f"item {index} needs 'content' and only remember() arguments "
                    f"({', '.join(sorted(_REMEMBER_FIELDS))}); got {sorted(fields)}"
                )
            try:
                prepared.append(self._prepare(**fields))
            except InvalidInputError as exc:
                raise InvalidInputError(f"item {index}: {exc}") from exc
        first_with_key: dict[str, int] = {}
        for index, memory in enumerate(prepared):
            if memory.idempotency_key is None:
                continue
            first = first_with_key.setdefault(memory.idempotency_key, index)
            if not same_text(prepared[first].content, memory.content):
                raise InvalidInputError(
                    f"items {first} and {index} share idempotency_key {memory.idempotency_key!r} but not "
                    "their content; give each its own key (nothing was stored)"
                )
        return self._insert(prepared) if prepared else []

    @_closing.call
    def update(
        self,
        memory_id: str,
        content: str | None = None,
        importance: float | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Memory:
        """Change a memory visible from this session; return the updated memory.

        Raises :class:`MemoryNotFoundError` if no such memory is visible here.
        """
        changes: dict[str, Any] = {}
        vector = None
        if content is not None:
            changes["content"] = check_content(content)
            changes["content_hash"] = content_hash(content)
        if importance is not None:
            changes["importance"] = check_importance(importance)
        if metadata is not None:
            changes["metadata"] = check_metadata(metadata)
        memory_id = check_label(memory_id, "memory_id")
        if not changes:  # a call that changes nothing is a mistake worth hearing about
            raise InvalidInputError("update needs at least one of content, importance or metadata")
        if content is not None:
            vector = self._embed([content])[0]
        updated = self._store.update(memory_id, self.session_id, changes, vector, self._embedder.signature)
        self._touch_auto_sleep()
        return updated

    @_closing.call
    def forget(self, memory_id: str) -> None:
        """Delete a memory from every index, leaving only a tombstone in the audit log.

        Raises :class:`MemoryNotFoundError` if no such memory is visible here.
        """
        self._store.delete(check_label(memory_id, "memory_id"), self.session_id)
        self._touch_auto_sleep()

    # -- reading --------------------------------------------------------------------

    @_closing.call
    def recall(
        self,
        query: str,
        top_k: int = 10,
        *,
        scope: str | None = None,
        source: str | Sequence[str] | None = None,
        since: TimeLike | None = None,
        until: TimeLike | None = None,
        include_consolidated: bool = False,
        now: TimeLike | None = None,
        explain: bool = False,
        context: int = 0,
    ) -> list[Memory]:
        """The memories most relevant to ``query``, best first, each with a ``score``.

        Hybrid: words (BM25 over each memory and over its episode context) and
        meaning (embedding similarity, when an embedder is available) are fused,
        then nudged by importance, recency, past use, and a time the query names
        ("yesterday", "last week", "in May", relative to ``now``, default the
        current time, and in ``now``'s time zone when it has one, UTC for a naive
        ``now``, else this machine's). Filters (``scope``, ``source``, ``since``/``until`` on
        ``created_at``) apply before ranking, so ``top_k`` results are always
        filtered ones. ``explain=True`` fills each result's ``explanation`` with
        every component of its score. Any text is a safe query.

        >>> for item in mem.recall("design progress and next steps", top_k=10):
        ...     print(item)
        """
        check_query(query)
        check_flag(explain, "explain")
        context = self._check_context(context)
        top_k = check_top_k(top_k)
        filters = self._filters(scope, source, since, until, include_consolidated)
        now_ts = optional_timestamp(now, "now")
        now_ts = time.time() if now_ts is None else now_ts
        if not include_consolidated:  # past valid_until is hidden even before sleep marks it
            filters = dataclasses.replace(filters, valid_at=now_ts)
        results = retrieval.search(
            self._store, self._embedder, query, filters, top_k, now=now_ts, explain=explain, zone=zone_of(now)
        )
        self._backfill_if_recovered()  # the query may be what found the model back
        self._store.access.record(memory.id for memory in results)  # batched; never fails recall
        # context=N attaches each hit's neighbouring events; ranking is unchanged.
        return self._attach_context(results, context) if context else results

    @_closing.call
    def get(self, memory_id: str) -> Memory | None:
        """The memory with this id if it is visible from this session, else None."""
        return self._store.get(check_label(memory_id, "memory_id"), self.session_id)

    @_closing.call
    def get_stats(self) -> Stats:
        """Counts, size, schema version and maintenance times for this database."""
        counts = self._store.counts()
        last_backup = self._store.get_meta("last_backup_at")
        last_sleep = self._store.get_meta("last_sleep_at")
        return Stats(
            total=sum(counts["status"].values()),
            by_scope=counts["scope"],
            by_status=counts["status"],
            by_kind=counts["kind"],
            by_session=counts["session_id"],
            db_path=str(self.db_path),
            db_size_bytes=self._store.size_bytes(),
            schema_version=self._store.schema_version(),
            embedder=self._embedder.describe_for(self._store.recorded_embedder()),
            last_backup_at=None if last_backup is None else from_timestamp(float(last_backup)),
            last_sleep_at=None if last_sleep is None else from_timestamp(float(last_sleep)),
        )

    # -- moving data ----------------------------------------------------------------

    @_closing.call
    def export_jsonl(self, path: str | Path, *, progress: Progress | None = None) -> int:
        """Write the whole database (all sessions) to a JSON Lines file; return how
        many memories it holds.

        The file is written atomically from one consistent snapshot and is lossless:
        :meth:`import_jsonl` restores every memory (ids, sessions, scopes, times,
        metadata, status, episode, sleep state), the explicit episodes and the links
        sleep made, so recall, timelines, forget and sleep behave the same. The
        format is described in :mod:`mnemosyne.transfer`. ``progress``, if given, is
        called as ``progress(done, total)`` while memories are written. The database's
        own files and folders are refused before anything is read.

        >>> mem.export_jsonl("memories.jsonl")
        1234
        """
        target = expand_user(path, "path")
        if not transfer.is_stream(target) and target.resolve() in database_files(Path(self._store.path)):
            raise InvalidInputError(f"{path} is this database or one of its own files; export to another path")
        transfer.check_writable(path, target)
        # Recall counts this process has not written yet belong in the export too:
        # ranking and sleep's decay read them.
        self._store.access.flush(lock_wait=1.0)
        report: Callable[[int], None] | None = None
        if progress is not None:
            total = sum(self._store.counts()["status"].values())

            def report(done: int) -> None:
                progress(done, total)

        # Closed even if writing fails: the dump holds a read snapshot open.
        with contextlib.closing(self._store.iter_dump()) as records:
            return transfer.write_jsonl(records, target, report)

    @_closing.call
    def import_jsonl(
        self, path: str | Path, *, progress: Progress | None = None, embedding_progress: Progress | None = None
    ) -> int:
        """Add what an export holds that is not already stored; return how many
        memories were added.

        Memories and episodes are matched by id, links by their ends and kind, so
        importing the same file again adds nothing. The whole file is validated
        first and imported in one transaction: a bad line, or a link to a memory
        in neither the file nor the database, imports nothing. A memory forgotten
        here stays forgotten. ``progress``, if given, is called as
        ``progress(done, total)`` while memories are stored.

        The new memories are then embedded (``embedding_progress`` follows that,
        the longer part with a local model). A ``KeyboardInterrupt`` while they are
        stored imports nothing; one as they commit, or while they are embedded,
        comes out as :class:`ImportInterrupted`: the import is committed, and the
        vectors not made yet are filled in later.

        >>> mem.import_jsonl("memories.jsonl")
        1234
        """
        return self._import_export(transfer.read_jsonl(expand_user(path, "path")), progress, embedding_progress)

    def _import_export(
        self, export: transfer.Export, progress: Progress | None = None, embedding_progress: Progress | None = None
    ) -> int:
        """:meth:`import_jsonl` of an export already read and checked."""
        memories: Iterable[NewMemory] = export.memories
        if progress is not None:
            memories = _reporting(memories, progress, len(export.memories))
        added = self._store.import_memories(
            memories, export.usage, export.episodes, export.links, export.unshared, export.forgotten, export.where
        )
        # Committed: from here on an interrupt must not read as "nothing was imported".
        try:
            self._backfill.run(embedding_progress)  # a failing model leaves the rest to later passes
        except KeyboardInterrupt as exc:
            raise ImportInterrupted(added, self._store.count_missing_vectors(self._store.newest_seq())) from exc
        return added

    # -- embeddings -----------------------------------------------------------------

    @_closing.call
    def backfill_vectors(self, progress: Progress | None = None) -> int:
        """Embed memories stored without a vector (the embedder was down); return how many.

        Runs by itself in the background after open, and in sleep; call it to wait for
        it. Raises :class:`EmbedderError` if memories still lack a vector because the
        embedder is failing or not available here (a text the model refused stays
        without one and is no error). A failing model is asked again now, whatever
        its cool-down.
        """
        self._embedder.retry_now()
        done = self._backfill.run(progress)
        why = self._why_no_vectors()
        if why is not None and (missing := self._store.count_missing_vectors(self._store.newest_seq())):
            raise EmbedderError(f"{missing} memories still have no vector: {why}; they are found by their words")
        return done

    def _why_no_vectors(self) -> str | None:
        """Why this process cannot give memories their vectors now, if it cannot."""
        slot, recorded = self._embedder, self._store.recorded_embedder()
        if recorded is not None and slot.signature is not None and not same_embedder(recorded, slot.signature):
            return (f"this database's vectors are now made by {slot.describe_for(recorded)} (another "
                    "process switched models); reopen it to use that model")
        if slot.ready:
            return None
        if slot.embedder is not None:
            return f"embedder {slot.description} is failing" + (f" ({slot.failure})" if slot.failure else "")
        return f"no embedder can make them here ({slot.description})"

    @_closing.call
    def reembed(
        self, embedder: str | Embedder, progress: Progress | None = None
    ) -> int:
        """Switch this database to another embedder, re-embedding every memory.

        Vectors are computed first, without holding the write lock, then swapped in
        one transaction: recall never sees a mix of two models. Returns the count.

        >>> mem.reembed("sentence-transformers:all-mpnet-base-v2")
        """
        slot = embedding.choose(model_to_switch_to(embedder), None)
        self._backfill.stop()
        try:
            embedded = embed_all(self._store, slot, progress)
            assert slot.signature is not None
            self._store.replace_embedder(slot.signature, embedded)
        except BaseException:
            self._backfill = Backfill(self._store, self._embedder)  # the old model carries on
            raise
        self._embedder = slot
        self._backfill = Backfill(self._store, slot)
        self._backfill.run()  # memories written or edited while we were embedding
        return len(embedded)

    # -- sleep ------------------------------------------------------------------------

    def _after_sleep(self, report: SleepReport) -> None:
        # New summaries and shared facts get their vectors before sleep() returns, and
        # so do memories stored while the model was failing: idle time is when to.
        if not report.dry_run:
            self._backfill.run()

    def _sleep_vectors(self, memory_ids: Sequence[str]) -> Mapping[str, np.ndarray] | None:
        """The stored vectors of these memories, for the near-duplicate rule."""
        signature = self._embedder.signature
        if not signature or not signature.get("dimension"):
            return None
        return self._store.vectors_by_id(memory_ids, int(signature["dimension"]))

    # -- health ---------------------------------------------------------------------

    @_closing.call
    def doctor(self, repair: bool = False) -> DoctorReport:
        """Check the database (integrity, schema, index/row consistency, audit coverage).

        Read-only unless ``repair=True``: then a backup is taken first and every
        derived index that failed is rebuilt from the rows.

        >>> report = mem.doctor()
        >>> report.ok
        True
        """
        from .dr import doctor

        return doctor.repair(self.db_path) if check_flag(repair, "repair") else doctor.diagnose(self.db_path)

    # -- lifecycle ------------------------------------------------------------------

    def close(self) -> None:
        """Close the database connections. The instance can't be used afterwards.

        Calls under way in other threads finish first (see :mod:`mnemosyne._closing`);
        from inside a call of this thread (a signal handler), the close finishes when
        that call ends.
        """
        if not self._owns_store:  # a sibling session: the instance it came from closes
            self._stop_auto_sleep()
            return
        self._gate.close(self._finish_closing, self._halt_background)

    def _halt_background(self) -> None:
        """Tell background work to stop at its next step, without waiting for it: an
        auto-sleep's backfill then stops after its batch, as a background one does."""
        if self._auto_sleeper is not None:
            self._auto_sleeper.halt()
        self._backfill.halt()

    def _finish_closing(self) -> None:
        self._stop_auto_sleep()
        self._backfill.stop()
        self._store.close()

    def __enter__(self) -> Mnemosyne:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Mnemosyne(session_id={self.session_id!r}, db_path={str(self.db_path)!r})"

    # Methods of the mixins, passing the gate too. episode() is not: its block is the
    # caller's code, and the database work at its ends is what close() finds under way.
    episodes = _closing.call(EpisodicMixin.episodes)
    timeline = _closing.call(EpisodicMixin.timeline)
    sleep = _closing.call(SleepMixin.sleep)
    undo_sleep = _closing.call(SleepMixin.undo_sleep)

    # -- internals ------------------------------------------------------------------

    @staticmethod
    def _check_own_session(session_id: object, db_path: str | Path, busy_timeout: float) -> str:
        """The session this instance acts as. An id over the limit opens only a session
        the file already holds, read without opening (and so migrating) the database."""
        session = check_session_id(
            session_id, held=lambda long_id: file_holds_session(db_path, long_id, busy_timeout)
        )
        if session == SHARED_SESSION:
            raise InvalidInputError(
                f"session_id {SHARED_SESSION!r} is reserved: it holds the memories sleep shares between "
                "sessions; choose another name"
            )
        return session

    def _insert(self, memories: list[NewMemory]) -> list[str]:
        # Embed before taking the write lock: a slow model never blocks other writers.
        vectors = self._embed([m.content for m in memories])
        ids = self._store.insert(memories, vectors, self._embedder.signature)
        self._touch_auto_sleep()
        return ids

    def _embed(self, texts: list[str]) -> list[np.ndarray | None]:
        vectors = self._embedder.embed(texts)
        self._backfill_if_recovered()
        return vectors

    def _backfill_if_recovered(self) -> None:
        if self._embedder.recovered:  # the model is back: fill in what was stored without it
            self._embedder.recovered = False
            if self._auto_backfill:
                self._backfill.start()

    def _prepare(
        self,
        content: str,
        source: str = "conversation",
        importance: float = 0.5,
        scope: str = "session",
        metadata: Mapping[str, Any] | None = None,
        created_at: TimeLike | None = None,
        valid_until: TimeLike | None = None,
        idempotency_key: str | None = None,
        allow_duplicate: bool = False,
    ) -> NewMemory:
        content = check_content(content)
        recorded_at = now()
        created = optional_timestamp(created_at, "created_at")
        happened = recorded_at if created is None else created
        if idempotency_key is not None:
            check_label(idempotency_key, "idempotency_key")
        check_flag(allow_duplicate, "allow_duplicate")
        return NewMemory(
            id=new_id(),
            session_id=self.session_id,
            scope=check_scope(scope),
            content=content,
            content_hash=content_hash(content),
            source=check_label(source, "source"),
            importance=check_importance(importance),
            metadata=check_metadata(metadata),
            created_at=happened,
            recorded_at=recorded_at,
            valid_until=check_valid_until(valid_until, happened, created_given=created is not None),
            idempotency_key=idempotency_key,
            dedupe_since=dedupe_since(recorded_at, self.dedupe_window, allow_duplicate),
            episode_id=self._episode_for_new_memory(),
        )

    def _filters(
        self,
        scope: str | None,
        source: str | Sequence[str] | None,
        since: TimeLike | None,
        until: TimeLike | None,
        include_consolidated: bool,
    ) -> Filters:
        if scope is not None:
            check_scope(scope)
        sources = check_sources(source)
        since_ts, until_ts = time_range(since, until)
        wider = check_flag(include_consolidated, "include_consolidated")
        statuses = ("active", "consolidated", "superseded") if wider else ("active",)
        return Filters(
            viewer_session=self.session_id, scope=scope, sources=sources,
            since=since_ts, until=until_ts, statuses=statuses,
        )


def model_to_switch_to(embedder: str | Embedder | None) -> Embedder:
    """The model ``reembed`` switches to, built from a spec or taken as given; refused
    with ``InvalidInputError`` before any database is touched when it names none."""
    if embedder is None:
        raise InvalidInputError("reembed needs an embedder: a spec such as 'local', or an embedder object")
    model = _resolve_embedder(embedder)
    if not isinstance(model, Embedder):
        raise InvalidInputError("reembed needs an embedder; 'none' would only drop vectors")
    return model


def _resolve_embedder(requested: str | Embedder | None) -> str | Embedder | None:
    """Build the embedder a spec (the argument, else ``$MNEMOSYNE_EMBEDDER``) names,
    so a bad spec or a missing extra is refused before the database is touched.

    None means "the one the database recorded"; that choice needs the database.
    """
    if requested is None:
        requested = registry.requested_spec()
    if requested is None:
        return None
    if isinstance(requested, str):
        return registry.from_spec(requested) or registry.NONE
    if not isinstance(requested, Embedder):
        raise InvalidInputError(
            f"embedder must be a spec such as 'local' or 'none', or an object with name, model, "
            f"dimension and embed(texts), got {type(requested).__name__}"
        )
    return requested


def _reporting(items: Iterable[T], progress: Progress, total: int | None) -> Iterator[T]:
    """Yield ``items``, calling ``progress(done, total)`` as each is consumed."""
    done = 0
    progress(done, total)
    for item in items:
        yield item
        done += 1
        progress(done, total)


_REMEMBER_FIELDS = frozenset(
    {"content", "source", "importance", "scope", "metadata", "created_at", "valid_until",
     "idempotency_key", "allow_duplicate"}
)
