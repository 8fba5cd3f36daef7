"""Filling in vectors that are missing, and re-embedding a whole database."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from .embedding import EmbedderSlot
from .storage.sqlite import SQLiteStore

BATCH = 256
Progress = Callable[[int, int], None]


class Backfill:
    """Embeds memories stored without a vector, in batches, in the background or on demand."""

    def __init__(self, store: SQLiteStore, slot: EmbedderSlot) -> None:
        self._store = store
        self._slot = slot
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start a background pass if this database has memories waiting for a vector."""
        if self._slot.ready and self._store.missing_vectors(1):
            self._thread = threading.Thread(target=self.run, name="mnemosyne-backfill", daemon=True)
            self._thread.start()

    def run(self, progress: Progress | None = None) -> int:
        """Embed every memory that lacks a vector; return how many got one."""
        done = 0
        with self._lock:
            total = self._store.count_missing_vectors() if progress else 0
            while not self._stop.is_set() and self._slot.ready:
                batch = self._store.missing_vectors(BATCH)
                if not batch:
                    break
                vectors = self._slot.embed([content for _, content in batch])
                if vectors is None or self._slot.signature is None:
                    break
                pairs = [(seq, vector) for (seq, _), vector in zip(batch, vectors, strict=True)]
                stored = self._store.add_vectors(pairs, self._slot.signature)
                if stored == 0:
                    break  # another embedder owns this database now
                done += stored
                if progress:
                    progress(done, total)
        return done

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()


def embed_all(store: SQLiteStore, slot: EmbedderSlot, progress: Progress | None = None) -> list[tuple[int, np.ndarray]]:
    """A vector for every memory, computed batch by batch without holding any lock."""
    from .errors import EmbedderError

    pairs: list[tuple[int, np.ndarray]] = []
    total = store.count_memories()
    last = 0
    while True:
        batch = store.contents_after(last, BATCH)
        if not batch:
            return pairs
        assert slot.embedder is not None
        vectors = slot.embedder.embed([content for _, content in batch])  # failures must surface here
        if len(vectors) != len(batch):
            raise EmbedderError(f"the embedder returned {len(vectors)} vectors for {len(batch)} texts")
        pairs.extend(zip((seq for seq, _ in batch), vectors, strict=True))
        last = batch[-1][0]
        if progress:
            progress(len(pairs), total)
