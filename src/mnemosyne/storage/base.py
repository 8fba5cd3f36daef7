"""The storage contract: the few verbs every backend offers.

Ranking, validation, visibility rules and consolidation live above this line and
are written once; a backend only stores rows, keeps its indexes in step inside each
transaction, and answers filtered queries.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from ..models import Memory


@dataclass(frozen=True, slots=True)
class NewMemory:
    """A validated memory, ready to insert."""

    id: str
    session_id: str
    scope: str
    content: str
    content_hash: str
    source: str
    importance: float
    metadata: dict[str, Any]
    created_at: float
    recorded_at: float
    valid_until: float | None = None
    kind: str = "episodic"
    status: str = "active"
    idempotency_key: str | None = None
    # Return an existing memory with the same content, session, scope and kind
    # recorded at or after this time instead of inserting (None: always insert).
    dedupe_since: float | None = None
    episode_id: str | None = None  # set inside `with mem.episode(...)`


@dataclass(frozen=True, slots=True)
class Filters:
    """Which memories a query may see. Applied before ranking and top-k."""

    viewer_session: str
    scope: str | None = None
    sources: tuple[str, ...] = ()
    since: float | None = None
    until: float | None = None
    statuses: tuple[str, ...] = ("active",)
    valid_at: float | None = None  # hide memories whose valid_until is at or before this
    kinds: tuple[str, ...] = ()


class StopSignal(Protocol):
    """What long work checks between its steps to end early (a ``threading.Event``)."""

    def is_set(self) -> bool: ...


class Neighbours(NamedTuple):
    """The nearest vectors to a query, and the similarity of the ``field_rank``-th
    (where what is not about the query begins; None if not asked)."""

    hits: list[tuple[int, float]]  # (seq, cosine), best first
    field: float | None


class Store(Protocol):
    """What the layers above ask of a backend (``SQLiteStore`` is checked against
    it by the type checker)."""

    path: str

    def insert(
        self,
        memories: Sequence[NewMemory],
        vectors: Sequence[np.ndarray | None] | None = None,
        embedder: dict[str, Any] | None = None,
        op: str = "remember",
    ) -> list[str]: ...

    def get(self, memory_id: str, viewer_session: str) -> Memory | None: ...

    def update(
        self,
        memory_id: str,
        viewer_session: str,
        changes: dict[str, Any],
        vector: np.ndarray | None = None,
        embedder: dict[str, Any] | None = None,
    ) -> Memory: ...

    def delete(self, memory_id: str, viewer_session: str) -> None: ...

    def snapshot(self) -> AbstractContextManager[object]: ...

    def search_text(
        self, queries: Mapping[str, Sequence[str]], filters: Filters, limit: int
    ) -> dict[str, list[tuple[int, float]]]: ...

    def search_vectors(
        self, query: np.ndarray, filters: Filters, limit: int, embedder: dict[str, Any], field_rank: int = 0
    ) -> Neighbours: ...

    def memories_by_seq(self, seqs: Iterable[int], filters: Filters) -> dict[int, Memory]: ...

    def iter_dump(self) -> Generator[tuple[str, dict[str, Any]], None, None]: ...

    def import_memories(
        self,
        memories: Iterable[NewMemory],
        usage: Mapping[str, Mapping[str, Any]] | None = None,
        episodes: Sequence[Mapping[str, Any]] = (),
        links: Sequence[Mapping[str, Any]] = (),
        unshared: Iterable[str] = (),
    ) -> int: ...

    def holds_session(self, session_id: str) -> bool: ...

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def counts(self) -> dict[str, dict[str, int]]: ...

    def schema_version(self) -> int: ...

    def close(self) -> None: ...
