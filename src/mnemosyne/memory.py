"""The ``Mnemosyne`` facade: validation and visibility rules over a store."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from . import transfer
from .consolidate import SleepMixin
from .core import lexical
from .core.consolidation import SleepPolicy
from .core.fingerprint import content_hash
from .core.ids import new_id
from .core.timeutil import TimeLike, from_timestamp, now, optional_timestamp
from .core.validation import (
    check_content,
    check_importance,
    check_label,
    check_metadata,
    check_query,
    check_scope,
    check_top_k,
)
from .episodic import DEFAULT_EPISODE_GAP, EpisodicMixin
from .errors import InvalidInputError
from .models import Memory, Stats
from .storage.base import Filters, NewMemory
from .storage.sqlite import SQLiteStore

DB_ENV_VAR = "MNEMOSYNE_DB"


def default_db_path() -> Path:
    """``$MNEMOSYNE_DB``, else ``$XDG_DATA_HOME/mnemosyne/memories.db``
    (``~/.local/share/mnemosyne/memories.db`` when XDG_DATA_HOME is unset)."""
    explicit = os.environ.get(DB_ENV_VAR)
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data_home) / "mnemosyne" / "memories.db"


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
    """

    def __init__(
        self,
        session_id: str = "default",
        db_path: str | Path | None = None,
        *,
        auto_sleep: bool | float | None = None,
        sleep_policy: SleepPolicy | None = None,
        episode_gap: float = DEFAULT_EPISODE_GAP,
    ) -> None:
        self.session_id = check_label(session_id, "session_id")
        self._store = SQLiteStore(default_db_path() if db_path is None else db_path)
        self.db_path = Path(self._store.path)
        # auto_sleep: True (sleep after 5 idle minutes) or an idle period in seconds.
        try:
            self._init_episodic(episode_gap)
            self._init_sleep(sleep_policy, auto_sleep)
        except BaseException:
            self._store.close()
            raise

    # -- writing --------------------------------------------------------------------

    def remember(
        self,
        content: str,
        source: str = "conversation",
        importance: float = 0.5,
        scope: str = "session",
        metadata: Mapping[str, Any] | None = None,
        created_at: TimeLike | None = None,
        valid_until: TimeLike | None = None,
    ) -> str:
        """Store one memory and return its id.

        ``scope="session"`` keeps it visible to this session only; ``"global"``
        shares it with every session of the database. ``created_at`` records when
        it happened (default: now); ``valid_until`` hides it from recall after then.

        >>> mem.remember("Deploy window is Friday 18:00 UTC", source="ops", importance=0.8)
        '01938f7e-...'
        """
        memory = self._prepare(
            content=content, source=source, importance=importance, scope=scope,
            metadata=metadata, created_at=created_at, valid_until=valid_until,
        )
        memory_id = self._store.insert([memory])[0]
        self._touch_auto_sleep()
        return memory_id

    def remember_many(self, items: Iterable[str | Mapping[str, Any]]) -> list[str]:
        """Store many memories in one transaction; return their ids in order.

        Each item is the content string or a dict of :meth:`remember`'s arguments.
        Every item is validated first: one bad item stores nothing.

        >>> mem.remember_many(["first event", {"content": "second", "importance": 0.9}])
        """
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
        ids = self._store.insert(prepared) if prepared else []
        self._touch_auto_sleep()
        return ids

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
        if content is not None:
            changes["content"] = check_content(content)
            changes["content_hash"] = content_hash(content)
        if importance is not None:
            changes["importance"] = check_importance(importance)
        if metadata is not None:
            changes["metadata"] = check_metadata(metadata)
        updated = self._store.update(check_label(memory_id, "memory_id"), self.session_id, changes)
        self._touch_auto_sleep()
        return updated

    def forget(self, memory_id: str) -> None:
        """Delete a memory from every index, leaving only a tombstone in the audit log.

        Raises :class:`MemoryNotFoundError` if no such memory is visible here.
        """
        self._store.delete(check_label(memory_id, "memory_id"), self.session_id)
        self._touch_auto_sleep()

    # -- reading --------------------------------------------------------------------

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
        context: int = 0,
    ) -> list[Memory]:
        """The memories most relevant to ``query``, best first, each with a ``score``.

        Filters (``scope``, ``source``, ``since``/``until`` on ``created_at``) are
        applied before ranking, so ``top_k`` results are always filtered ones.
        Any text is a safe query: quotes, operators and SQL are just words.

        >>> for item in mem.recall("design progress and next steps", top_k=10):
        ...     print(item)
        """
        check_query(query)
        context = self._check_context(context)
        top_k = check_top_k(top_k)
        filters = self._filters(scope, source, since, until, include_consolidated)
        expression = lexical.fts_query(query)
        if expression is None:
            return []
        hits = self._store.search_text(expression, filters, top_k)
        results = [dataclasses.replace(memory, score=score) for memory, score in hits]
        # context=N attaches each hit's neighbouring events; ranking is unchanged.
        return self._attach_context(results, context) if context else results

    def get(self, memory_id: str) -> Memory | None:
        """The memory with this id if it is visible from this session, else None."""
        return self._store.get(check_label(memory_id, "memory_id"), self.session_id)

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
            embedder=None,
            last_backup_at=None if last_backup is None else from_timestamp(float(last_backup)),
            last_sleep_at=None if last_sleep is None else from_timestamp(float(last_sleep)),
        )

    # -- moving data ----------------------------------------------------------------

    def export_jsonl(self, path: str | Path) -> int:
        """Write every memory of the database (all sessions) to a JSON Lines file.

        The file is written atomically and is lossless: :meth:`import_jsonl` restores
        ids, sessions, scopes, timestamps and metadata exactly. Returns the count.
        """
        return transfer.write_jsonl(self._store.iter_memories(), Path(path))

    def import_jsonl(self, path: str | Path) -> int:
        """Add the memories of an export that are not already stored; return how many.

        The whole file is validated first and imported in one transaction, so a bad
        line imports nothing. Importing the same file again adds nothing.
        """
        return self._store.import_memories(transfer.read_jsonl(Path(path)))

    # -- lifecycle ------------------------------------------------------------------

    def close(self) -> None:
        """Close the database connections. The instance can't be used afterwards."""
        self._stop_auto_sleep()
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

    # -- internals ------------------------------------------------------------------

    def _prepare(
        self,
        content: str,
        source: str = "conversation",
        importance: float = 0.5,
        scope: str = "session",
        metadata: Mapping[str, Any] | None = None,
        created_at: TimeLike | None = None,
        valid_until: TimeLike | None = None,
    ) -> NewMemory:
        content = check_content(content)
        recorded_at = now()
        created = optional_timestamp(created_at, "created_at")
        return NewMemory(
            id=new_id(),
            session_id=self.session_id,
            scope=check_scope(scope),
            content=content,
            content_hash=content_hash(content),
            source=check_label(source, "source"),
            importance=check_importance(importance),
            metadata=check_metadata(metadata),
            created_at=recorded_at if created is None else created,
            recorded_at=recorded_at,
            valid_until=optional_timestamp(valid_until, "valid_until"),
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
        if source is None:
            sources: tuple[str, ...] = ()
        elif isinstance(source, str):
            sources = (check_label(source, "source"),)
        else:
            sources = tuple(check_label(s, "source") for s in source)
        since_ts = optional_timestamp(since, "since")
        until_ts = optional_timestamp(until, "until")
        if since_ts is not None and until_ts is not None and since_ts > until_ts:
            raise InvalidInputError("since is after until; swap them")
        statuses = ("active", "consolidated", "superseded") if include_consolidated else ("active",)
        return Filters(
            viewer_session=self.session_id, scope=scope, sources=sources,
            since=since_ts, until=until_ts, statuses=statuses,
        )


_REMEMBER_FIELDS = frozenset(
    {"content", "source", "importance", "scope", "metadata", "created_at", "valid_until"}
)
