"""Helpers for testing code that uses Mnemosyne: a deterministic, dependency-free embedder.

    from mnemosyne import Mnemosyne
    from mnemosyne.testing import HashEmbedder

    mem = Mnemosyne(db_path=tmp_path / "m.db", embedder=HashEmbedder())
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from .core.lexical import tokenize
from .embedders.base import normalise_rows


class HashEmbedder:
    """Maps each word (and its character trigrams) to a signed hashed dimension.

    Texts sharing words get similar vectors; the same text always gets the same
    vector, in any process. It understands no meaning: use the local model where a
    test needs paraphrases.
    """

    name = "test-hash"

    def __init__(self, dimension: int = 64) -> None:
        self.dimension = dimension
        self.model = f"hash-v1-{dimension}"
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                padded = f"#{token}#"
                for feature in [token] + [padded[i : i + 3] for i in range(len(padded) - 2)]:
                    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                    index = int.from_bytes(digest[:4], "little") % self.dimension
                    sign = 1.0 if digest[4] & 1 else -1.0
                    vectors[row, index] += sign * (2.0 if feature == token else 1.0)
        return normalise_rows(vectors)


class FailingEmbedder(HashEmbedder):
    """A :class:`HashEmbedder` whose model is unavailable: every call raises
    ``EmbedderError``. Same signature, so a healthy HashEmbedder can backfill after it."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from .errors import EmbedderError

        self.calls += 1
        raise EmbedderError("the test embedder is switched off")
