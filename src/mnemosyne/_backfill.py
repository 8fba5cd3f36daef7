"""Filling in vectors that are missing, and re-embedding a whole database."""

from __future__ import annotations

import threading
from collections.abc import Callable

from . import _fork, background
from .embedding import EmbedderSlot
from .errors import StorageError
from .storage.sqlite import SQLiteStore
from .storage.sqlite.vector_rows import Embedded

# Small enough that closing, which waits for the batch under way, waits for one
# short model call, not several.
BATCH = 64
# How long closing waits for a request to a model behind an HTTP endpoint, which may
# take its whole timeout: past this, the request is left to end on its own (its
# answer is written if the database is still open, and the vectors are right then:
# each is stored only for the text and the model that made it).
REMOTE_WAIT_S = 1.0
Progress = Callable[[int, int], None]


class Backfill:
    """Embeds memories stored without a vector, in batches, in the background or on demand."""

    def __init__(self, store: SQLiteStore, slot: EmbedderSlot) -> None:
        self._store = store
        self._slot = slot
        self._lock = _fork.Lock()  # one pass at a time; a fork's child may start its own
        self._stop = threading.Event()  # for good: the instance is closing
        self._take_over = threading.Event()  # a caller of run() finishes the background pass
        self._thread: threading.Thread | None = None
        self._done_in_background = 0
        background.stop_at_exit(self)  # a pass under way in any thread ends with the process

    def start(self) -> None:
        """Start a background pass if this database has memories waiting for a vector
        and no pass is under way."""
        if self._thread is not None and self._thread.is_alive():
            return
        if self._slot.ready and self._store.missing_vectors(1):
            self._thread = threading.Thread(target=self._background, name="mnemosyne-backfill", daemon=True)
            self._thread.start()

    def run(self, progress: Progress | None = None) -> int:
        """Embed every memory that lacks a vector; return how many got one, counting
        those a background pass filled since the last call.

        A background pass still running stops after its batch and this call does the
        rest, so ``progress`` sees all of the work.
        """
        thread = self._thread
        if thread is not None and thread.is_alive() and thread is not threading.current_thread():
            self._take_over.set()  # heard by the background pass only
            thread.join()
            self._take_over.clear()
        with self._lock:
            done, self._done_in_background = self._done_in_background, 0
            up_to = self._store.newest_seq()
            total = done + self._store.count_missing_vectors(up_to) if progress else 0
            if progress and total > done and self._slot.ready:
                progress(done, total)  # at once: the first batch may wait for a model to load
            return done + self._fill(progress, done, total, self._stop.is_set, up_to)

    def halt(self) -> None:
        """Make any pass end after its batch, for good (the instance is closing)."""
        self._stop.set()

    def stop(self) -> None:
        self.halt()
        if self._thread is not None and self._thread is not threading.current_thread():
            # A model running in this process is waited for: a thread still inside
            # native code when Python finalises aborts the process.
            self._thread.join(REMOTE_WAIT_S if self._slot.remote else None)

    def _background(self) -> None:
        def halted() -> bool:
            return self._stop.is_set() or self._take_over.is_set()

        with self._lock:
            try:
                self._done_in_background += self._fill(None, 0, 0, halted, self._store.newest_seq())
            except StorageError:
                if not self._stop.is_set():
                    raise
                # Closed while a request was left to end: its answer is dropped.

    def _fill(
        self, progress: Progress | None, done_before: int, total: int, halted: Callable[[], bool], up_to: int
    ) -> int:
        """Embed the memories up to seq ``up_to`` (the newest when the pass starts) that
        miss a vector, in seq order. Ones written later are left to the next pass: a
        process storing memories without vectors (no model, or another model) would
        otherwise keep the pass going, and the progress total would never be reached."""
        done, after = 0, 0
        while not halted() and self._slot.ready:
            batch = self._store.missing_vectors(BATCH, after, up_to)
            if not batch:
                break
            after = batch[-1][0]
            # A text the model refused once is not asked for again (see EmbedderSlot).
            vectors = self._slot.embed([content for _, content in batch])
            embedded = [(seq, content, vector) for (seq, content), vector in zip(batch, vectors, strict=True)
                        if vector is not None]
            if embedded and self._slot.signature is not None:
                stored = self._store.add_vectors(embedded, self._slot.signature)
                if stored == 0:
                    break  # another embedder owns this database now
                done += stored
            if progress:
                progress(done_before + done, total)
        return done


def embed_all(store: SQLiteStore, slot: EmbedderSlot, progress: Progress | None = None) -> list[Embedded]:
    """A vector for every memory, computed batch by batch without holding any lock.

    A failure of the model raises ``EmbedderError``: a switch of models is all or
    nothing. A text the model refuses goes without a vector, as it would on remember.
    """
    embedded: list[Embedded] = []
    # Memories written meanwhile are left to the backfill after the switch: a writer
    # that never pauses would otherwise keep the switch from ever ending.
    up_to = store.newest_seq()
    total = store.count_memories(up_to)
    last, seen = 0, 0
    while True:
        batch = store.contents_after(last, BATCH, up_to)
        if not batch:
            return embedded
        vectors = slot.vectors_for([content for _, content in batch])
        embedded.extend((seq, content, vector) for (seq, content), vector in zip(batch, vectors, strict=True)
                        if vector is not None)  # a text the model refuses goes without, as on remember
        last, seen = batch[-1][0], seen + len(batch)
        if progress:
            progress(seen, total)
