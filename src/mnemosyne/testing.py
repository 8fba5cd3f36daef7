"""Helpers for testing code that uses Mnemosyne: a deterministic embedder.

``HashingEmbedder`` maps each word to a fixed random direction (seeded by its
hash) and sums them, so texts sharing words get similar vectors, with no model,
no download and the same output on every machine.

    from mnemosyne.testing import HashingEmbedder
    vectors = HashingEmbedder(dimension=64).embed(["deploy on friday", "deploy friday"])
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from .core.lexical import tokenize
from .embedders.base import normalise_rows


class HashingEmbedder:
    """Deterministic bag-of-words vectors (float32, unit length)."""

    name = "hashing"
    model = "hashing-v1"

    def __init__(self, dimension: int = 64) -> None:
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in tokenize(text):
                seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
                out[row] += np.random.default_rng(seed).standard_normal(self.dimension).astype(np.float32)
        return normalise_rows(out)
