"""Any sentence-transformers model (name or local path), for users who have torch."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import EmbedderError, MissingDependencyError
from .base import normalise_rows


class SentenceTransformerEmbedder:
    """Embeds with ``sentence_transformers.SentenceTransformer(model)``.

    >>> Mnemosyne(embedder=SentenceTransformerEmbedder("all-mpnet-base-v2"))

    The model must already be on disk (a path or the local cache): Mnemosyne never
    downloads at run time, so ``HF_HUB_OFFLINE`` is honoured as set by the user.
    """

    name = "sentence-transformers"

    def __init__(self, model: str, batch_size: int = 64) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            # No extra of ours: it would pull torch, gigabytes, into every install that named it.
            raise MissingDependencyError(
                "the sentence-transformers embedder", package="sentence-transformers"
            ) from exc
        try:
            self._model = SentenceTransformer(model, device="cpu")
        except Exception as exc:  # the library raises many unrelated types
            raise EmbedderError(f"cannot load sentence-transformers model {model!r}: {exc}") from exc
        self.model = model
        # Renamed in sentence-transformers 6; the old name warns there.
        dimension_of = getattr(self._model, "get_embedding_dimension", None) or (
            self._model.get_sentence_embedding_dimension)
        self.dimension = int(dimension_of())
        self._batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        try:
            vectors = self._model.encode(list(texts), batch_size=self._batch_size, convert_to_numpy=True)
        except Exception as exc:
            raise EmbedderError(f"sentence-transformers model {self.model!r} failed: {exc}") from exc
        return normalise_rows(vectors)
