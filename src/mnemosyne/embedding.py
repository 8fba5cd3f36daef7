"""The facade's embedder: chosen once per database, and never allowed to lose a write.

If the model fails (missing files, an HTTP endpoint down), memories are still
stored and found lexically; their vectors are filled in later (on the next open,
by ``sleep``, or ``mnemosyne reembed --missing``). The failure is logged once and
the model is not retried on every call, only after a cool-down.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .core.signature import same_embedder
from .embedders import registry
from .embedders.base import Embedder
from .errors import EmbedderError, EmbedderMismatchError, InvalidInputError, MissingDependencyError

log = logging.getLogger("mnemosyne")
RETRY_AFTER_S = 300.0


class EmbedderSlot:
    """An embedder (or none) plus what to do when it fails."""

    def __init__(self, embedder: Embedder | None, recorded: dict[str, Any] | None = None) -> None:
        self.embedder = embedder
        # A database whose recorded embedder can't be loaded here keeps its record:
        # new memories wait for a vector rather than being embedded by another model.
        self.signature = registry.signature(embedder) if embedder is not None else recorded
        self._dimension = _expected_dimension(embedder, recorded)
        if self.signature is not None and self._dimension and not self.signature.get("dimension"):
            self.signature = {**self.signature, "dimension": self._dimension}
        self._failed_at: float | None = None

    @property
    def description(self) -> str:
        if self.signature is None:
            return registry.NONE
        text = registry.describe(self.signature)
        return text if self.embedder is not None else f"{text}, unavailable here"

    @property
    def ready(self) -> bool:
        if self.embedder is None:
            return False
        return self._failed_at is None or time.monotonic() - self._failed_at > RETRY_AFTER_S

    def embed(self, texts: Sequence[str]) -> np.ndarray | None:
        """Vectors for ``texts``, or None if the embedder is absent or failing."""
        if not self.ready or not texts:
            return None
        try:
            return self.embed_checked(texts)
        except EmbedderError as exc:
            if self._failed_at is None:
                log.warning(
                    "embedder %s failed (%s); memories are stored and searchable lexically and "
                    "their vectors will be backfilled; retrying in %.0f s",
                    self.description, exc, RETRY_AFTER_S,
                )
            self._failed_at = time.monotonic()
            return None

    def embed_checked(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``, one finite row each; any failure raises ``EmbedderError``."""
        assert self.embedder is not None
        try:
            vectors = self.embedder.embed(texts)
        except EmbedderError:
            raise
        except Exception as exc:  # a custom embedder's own error: still never lose the write
            raise EmbedderError(f"{type(exc).__name__}: {exc}") from exc
        vectors = _checked(vectors, len(texts), self._dimension or self.embedder.dimension)
        self._failed_at = None
        self.signature = registry.signature(self.embedder)  # an HTTP model learns its dimension
        return vectors


def _expected_dimension(embedder: Embedder | None, recorded: dict[str, Any] | None) -> int | None:
    """The size its vectors must have: the model's own, else (an HTTP model that has
    not answered yet) the size this database recorded for that model. An endpoint
    now serving another size is a failure, not a silent loss of every vector."""
    if embedder is None:
        return None
    if embedder.dimension:
        return int(embedder.dimension)
    if recorded is not None and (recorded.get("name"), recorded.get("model")) == (embedder.name, embedder.model):
        return int(recorded.get("dimension") or 0) or None
    return None


def _checked(vectors: np.ndarray, count: int, dimension: int | None) -> np.ndarray:
    """``vectors`` if it holds one finite row of ``dimension`` (when known) per text:
    a server that drops or garbles rows must not pair a vector with the wrong memory."""
    try:
        vectors = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:  # ragged rows, or not numbers
        raise EmbedderError(f"the embedder returned something that is not vectors: {exc}") from exc
    if vectors.ndim != 2 or vectors.shape[0] != count or vectors.shape[1] == 0:
        raise EmbedderError(f"the embedder returned vectors of shape {vectors.shape} for {count} texts")
    if dimension and vectors.shape[1] != dimension:
        raise EmbedderError(f"the embedder returned {vectors.shape[1]}-dimensional vectors, not {dimension}")
    if not np.isfinite(vectors).all():
        raise EmbedderError("the embedder returned vectors with NaN or infinite values")
    return vectors


def choose(requested: str | Embedder | None, recorded: dict[str, Any] | None) -> EmbedderSlot:
    """Pick the embedder: the argument, else ``$MNEMOSYNE_EMBEDDER``, else the one the
    database recorded, else the best one installed.

    An explicit choice that differs from the database's is refused: mixing vectors
    of two models would silently ruin recall.
    """
    explicit = requested if requested is not None else registry.requested_spec()
    if explicit is not None:
        embedder = registry.from_spec(explicit) if isinstance(explicit, str) else explicit
        if embedder is None:
            # "none" means "don't embed here", not another model: the database keeps
            # its record and a process that has the model backfills later.
            return EmbedderSlot(None, recorded)
        current = registry.signature(embedder)
        if recorded is not None and not same_embedder(recorded, current):
            raise EmbedderMismatchError(
                f"this database's vectors were made by {registry.describe(recorded)}, not "
                f"{registry.describe(current)}; open it without choosing an embedder to use the "
                f"recorded one, or switch it with `mnemosyne reembed --embedder "
                f"{registry.spec_of(current)} --db PATH`"
            )
        return EmbedderSlot(embedder, recorded)
    spec = registry.spec_of(recorded) if recorded is not None else registry.best_installed_spec()
    try:
        return EmbedderSlot(registry.from_spec(spec), recorded)
    except (MissingDependencyError, EmbedderError, InvalidInputError) as exc:
        # e.g. a custom embedder object recorded by another program: pass it as
        # embedder= to use it here. Until then, nothing is mixed, nothing is lost.
        log.warning("embedder %s is unavailable here (%s); recall is lexical only", spec, exc)
        return EmbedderSlot(None, recorded)
