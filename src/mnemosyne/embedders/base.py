"""The embedder contract: text in, unit-length float32 vectors out.

A database records the ``name``, ``model`` and ``dimension`` of the embedder that
made its vectors, so two embedders that disagree on any of them never mix vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into vectors.

    ``embed`` returns an array of shape ``(len(texts), dimension)``, dtype float32,
    each row L2-normalised (so a dot product is a cosine similarity). It raises
    :class:`mnemosyne.errors.EmbedderError` when it cannot.
    """

    name: str
    model: str

    @property
    def dimension(self) -> int | None:
        """Vector length; None until known (an HTTP model tells it with its first answer)."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def normalise_rows(vectors: np.ndarray) -> np.ndarray:
    """Scale each row to unit length (zero rows stay zero) as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors.astype(np.float64), axis=1, keepdims=True)  # squares overflow float32
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32)
